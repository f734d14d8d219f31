package controlplane_test

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/skiff-lab/skiff/controlplane/servertest"
)

// reviewServer is an admission webhook over TLS on 127.0.0.1: it answers
// each AdmissionReview by the handler of the request's path.
type reviewServer struct {
	*httptest.Server
	calls atomic.Int32
}

func startReviewServer(t *testing.T, handlers map[string]func(*admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse) *reviewServer {
	rs := &reviewServer{}
	rs.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rs.calls.Add(1)
		var review admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
			http.Error(w, "bad review", http.StatusBadRequest)
			return
		}
		h, ok := handlers[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		resp := h(review.Request)
		resp.UID = review.Request.UID
		review.Response, review.Request = resp, nil
		_ = json.NewEncoder(w).Encode(&review)
	}))
	t.Cleanup(rs.Close)
	return rs
}

// clientConfig points a webhook at path on the server, trusting its
// certificate.
func (rs *reviewServer) clientConfig(path string) admissionregistrationv1.WebhookClientConfig {
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: rs.Certificate().Raw})
	return admissionregistrationv1.WebhookClientConfig{URL: ptr.To(rs.URL + path), CABundle: ca}
}

// onConfigMaps is a rule for configmaps, matched in namespaces labelled
// for the test only.
func onConfigMaps(ops ...admissionregistrationv1.OperationType) []admissionregistrationv1.RuleWithOperations {
	return []admissionregistrationv1.RuleWithOperations{{Operations: ops,
		Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}}}
}

func testNamespace(t *testing.T, client kubernetes.Interface, name string) *metav1.LabelSelector {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"admission-test": name}}}
	if _, err := client.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return &metav1.LabelSelector{MatchLabels: ns.Labels}
}

// TestAdmissionWebhooks: a mutating webhook's JSON patch is applied and
// the strategy defaults what it added; a validating webhook's denial is
// the request's answer with its message; a webhook that cannot be reached
// fails the request under failurePolicy Fail, naming the webhook, and is
// skipped under Ignore; bad configurations are refused with the field
// named, a match condition that does not compile with the CEL error.
func TestAdmissionWebhooks(t *testing.T) {
	_, client := startServer(t)
	ctx := context.Background()
	sel := testNamespace(t, client, "hooks")
	mutate := func(*admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		pt := admissionv1.PatchTypeJSONPatch
		return &admissionv1.AdmissionResponse{Allowed: true, PatchType: &pt,
			Patch: []byte(`[{"op":"add","path":"/data","value":{"mutated":"yes"}}]`)}
	}
	deny := func(req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		if req.Name != "deny-me" {
			return &admissionv1.AdmissionResponse{Allowed: true}
		}
		return &admissionv1.AdmissionResponse{Result: &metav1.Status{Code: http.StatusForbidden, Message: "deny-me is not welcome"}}
	}
	rs := startReviewServer(t, map[string]func(*admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse{"/mutate": mutate, "/deny": deny})
	none := ptr.To(admissionregistrationv1.SideEffectClassNone)
	v1 := []string{"v1"}

	bad := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "bad"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "bad.example.com", ClientConfig: rs.clientConfig("/deny"),
			Rules: onConfigMaps(admissionregistrationv1.Create), SideEffects: none, AdmissionReviewVersions: v1,
			MatchConditions: []admissionregistrationv1.MatchCondition{{Name: "broken", Expression: "... [] bad expression"}}}}}
	_, err := client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, bad, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "webhooks[0].matchConditions[0].expression") || !strings.Contains(err.Error(), "compilation failed") {
		t.Fatalf("a match condition that does not compile: %v, want Invalid naming the field with the compile error", err)
	}
	bad.Webhooks[0].MatchConditions, bad.Webhooks[0].SideEffects = nil, nil
	_, err = client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, bad, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "webhooks[0].sideEffects: Required value") {
		t.Fatalf("a webhook without sideEffects: %v, want Invalid naming webhooks[0].sideEffects", err)
	}

	mwc := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "mutate"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: "mutate.example.com", ClientConfig: rs.clientConfig("/mutate"),
			Rules: onConfigMaps(admissionregistrationv1.Create), NamespaceSelector: sel, SideEffects: none, AdmissionReviewVersions: v1}}}
	created, err := client.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, mwc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if w := created.Webhooks[0]; *w.FailurePolicy != admissionregistrationv1.Fail || *w.TimeoutSeconds != 10 || *w.ReinvocationPolicy != admissionregistrationv1.NeverReinvocationPolicy {
		t.Errorf("webhook defaults = %v %v %v, want Fail, 10 s, Never", *w.FailurePolicy, *w.TimeoutSeconds, *w.ReinvocationPolicy)
	}
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "deny"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "deny.example.com", ClientConfig: rs.clientConfig("/deny"),
			Rules: onConfigMaps(admissionregistrationv1.Create), NamespaceSelector: sel, SideEffects: none, AdmissionReviewVersions: v1}}}
	if _, err := client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, vwc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cms := client.CoreV1().ConfigMaps("hooks")
	var cm *corev1.ConfigMap
	waitFor(t, "the mutating webhook to be called", func() bool {
		_ = cms.Delete(ctx, "probe", metav1.DeleteOptions{})
		cm, err = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "probe"}}, metav1.CreateOptions{})
		return err == nil && cm.Data["mutated"] == "yes"
	})
	_, err = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "deny-me"}}, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `admission webhook "deny.example.com" denied the request: deny-me is not welcome`) {
		t.Fatalf("create deny-me: %v, want Forbidden with the webhook's message", err)
	}
	if _, err := client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "deny-me"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("deny-me outside the selected namespace: %v, want it created", err)
	}

	// A webhook nobody serves.
	down := rs.clientConfig("/deny")
	down.URL = ptr.To("https://127.0.0.1:" + fmt.Sprint(servertest.FreePorts(t, 1)[0]) + "/deny")
	failing := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "failing"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "failing.example.com", ClientConfig: down,
			Rules: onConfigMaps(admissionregistrationv1.Update), NamespaceSelector: sel, SideEffects: none, AdmissionReviewVersions: v1}}}
	if _, err := client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, failing, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "an update to fail closed", func() bool {
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
		return err != nil
	})
	if !strings.Contains(err.Error(), `failed calling webhook "failing.example.com"`) {
		t.Fatalf("update through a webhook that is down: %v, want the webhook named", err)
	}
	got, err := client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, "failing", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got.Webhooks[0].FailurePolicy = ptr.To(admissionregistrationv1.Ignore)
	if _, err := client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "an update to pass a webhook that fails open", func() bool {
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
		return err == nil
	})
}

// TestAdmissionPolicies: a ValidatingAdmissionPolicy bound with Deny
// refuses what its CEL rule refuses, with its message; the status
// controller records type-checking warnings with the expression's field;
// a MutatingAdmissionPolicy's apply configuration is merged into new
// objects.
func TestAdmissionPolicies(t *testing.T) {
	s := servertest.Start(t)
	client := s.Client()
	ctx := context.Background()
	sel := testNamespace(t, client, "policies")
	admission := client.AdmissionregistrationV1()
	match := &admissionregistrationv1.MatchResources{NamespaceSelector: sel, ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
		RuleWithOperations: onConfigMaps(admissionregistrationv1.Create, admissionregistrationv1.Update)[0]}}}

	vap := &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "no-forbidden-key"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{MatchConstraints: match,
			Validations: []admissionregistrationv1.Validation{{Expression: "!has(object.data) || !('forbidden' in object.data)", Message: "the key forbidden is forbidden"}}}}
	if _, err := admission.ValidatingAdmissionPolicies().Create(ctx, vap, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "no-forbidden-key"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: vap.Name, ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}}}
	if _, err := admission.ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cms := client.CoreV1().ConfigMaps("policies")
	var err error
	waitFor(t, "the policy to deny", func() bool {
		_, err = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "cm-"}, Data: map[string]string{"forbidden": "x"}}, metav1.CreateOptions{})
		return err != nil
	})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "ValidatingAdmissionPolicy 'no-forbidden-key' with binding 'no-forbidden-key' denied request: the key forbidden is forbidden") {
		t.Fatalf("create with the forbidden key: %v, want the policy's message", err)
	}

	typed := &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "typed"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule: admissionregistrationv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"deployments"}}}}}},
			Validations: []admissionregistrationv1.Validation{{Expression: "object.spec.replicas > '1'"}}}}
	if _, err := admission.ValidatingAdmissionPolicies().Create(ctx, typed, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var warnings []admissionregistrationv1.ExpressionWarning
	waitFor(t, "type checking", func() bool {
		p, err := admission.ValidatingAdmissionPolicies().Get(ctx, "typed", metav1.GetOptions{})
		if err != nil || p.Status.TypeChecking == nil {
			return false
		}
		warnings = p.Status.TypeChecking.ExpressionWarnings
		return true
	})
	if len(warnings) != 1 || warnings[0].FieldRef != "spec.validations[0].expression" ||
		!strings.Contains(warnings[0].Warning, "found no matching overload for '_>_' applied to '(int, string)'") {
		t.Errorf("type checking warnings = %+v, want the comparison of an int with a string", warnings)
	}

	map1 := &admissionregistrationv1.MutatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "label"},
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{MatchConstraints: match,
			Mutations: []admissionregistrationv1.Mutation{{PatchType: admissionregistrationv1.PatchTypeApplyConfiguration,
				ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{
					Expression: `Object{metadata: Object.metadata{labels: {"mutated-by": "policy"}}}`}}}}}
	if _, err := admission.MutatingAdmissionPolicies().Create(ctx, map1, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mb := &admissionregistrationv1.MutatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "label"},
		Spec: admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: "label"}}
	if _, err := admission.MutatingAdmissionPolicyBindings().Create(ctx, mb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the mutating policy to label", func() bool {
		cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "cm-"}}, metav1.CreateOptions{})
		return err == nil && cm.Labels["mutated-by"] == "policy"
	})
	// Deployments the typed policy matches are refused by its failed check
	// only with a binding: none here, so they are created.
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "free"}, Spec: appsv1.DeploymentSpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "free"}},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "free"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}}
	if _, err := client.AppsV1().Deployments("policies").Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatalf("a deployment no binding checks: %v", err)
	}
}
