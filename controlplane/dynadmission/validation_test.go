package dynadmission

import (
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

func validHook() admissionregistrationv1.ValidatingWebhook {
	return admissionregistrationv1.ValidatingWebhook{Name: "check.example.com",
		ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: "ns", Name: "svc"}},
		Rules: []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
			Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}},
		SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone), AdmissionReviewVersions: []string{"v1"}}
}

func hookConfig(edit func(*admissionregistrationv1.ValidatingWebhook)) runtime.Object {
	h := validHook()
	edit(&h)
	return &admissionregistrationv1.ValidatingWebhookConfiguration{Webhooks: []admissionregistrationv1.ValidatingWebhook{h}}
}

func validPolicy() *admissionregistrationv1.ValidatingAdmissionPolicy {
	return &admissionregistrationv1.ValidatingAdmissionPolicy{Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
		MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
			RuleWithOperations: validHook().Rules[0]}}},
		Validations: []admissionregistrationv1.Validation{{Expression: "object.metadata.name != 'x'"}}}}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		obj  runtime.Object
		want string // a substring of the errors; "" for none
	}{
		{"valid webhook", hookConfig(func(*admissionregistrationv1.ValidatingWebhook) {}), ""},
		{"name of two segments", hookConfig(func(h *admissionregistrationv1.ValidatingWebhook) { h.Name = "example.com" }),
			"webhooks[0].name: Invalid value"},
		{"url and service", hookConfig(func(h *admissionregistrationv1.ValidatingWebhook) { h.ClientConfig.URL = ptr.To("https://x") }),
			"exactly one of url or service is required"},
		{"http url", hookConfig(func(h *admissionregistrationv1.ValidatingWebhook) {
			h.ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: ptr.To("http://example.com/x")}
		}), "'https' is the only allowed URL scheme"},
		{"timeout", hookConfig(func(h *admissionregistrationv1.ValidatingWebhook) { h.TimeoutSeconds = ptr.To[int32](31) }),
			"the timeout value must be between 1 and 30 seconds"},
		{"side effects Some", hookConfig(func(h *admissionregistrationv1.ValidatingWebhook) {
			h.SideEffects = ptr.To(admissionregistrationv1.SideEffectClassSome)
		}), `webhooks[0].sideEffects: Unsupported value: "Some"`},
		{"no review version skiff sends", hookConfig(func(h *admissionregistrationv1.ValidatingWebhook) { h.AdmissionReviewVersions = []string{"v2"} }),
			"must include at least one of v1, v1beta1"},
		{"star with other operations", hookConfig(func(h *admissionregistrationv1.ValidatingWebhook) {
			h.Rules[0].Operations = append(h.Rules[0].Operations, admissionregistrationv1.OperationAll)
		}), "if '*' is present, must not specify other operations"},
		{"match condition that does not compile", hookConfig(func(h *admissionregistrationv1.ValidatingWebhook) {
			h.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "c", Expression: "object.("}}
		}), "webhooks[0].matchConditions[0].expression: Invalid value: \"object.(\": compilation failed"},
		{"valid policy", validPolicy(), ""},
		{"policy with nothing to check", func() runtime.Object {
			p := validPolicy()
			p.Spec.Validations = nil
			return p
		}(), "validations or auditAnnotations must contain at least one item"},
		{"policy variable used", func() runtime.Object {
			p := validPolicy()
			p.Spec.Variables = []admissionregistrationv1.Variable{{Name: "n", Expression: "object.metadata.name"}}
			p.Spec.Validations[0].Expression = "variables.n != 'x'"
			return p
		}(), ""},
		{"policy message expression of the wrong type", func() runtime.Object {
			p := validPolicy()
			p.Spec.Validations[0].MessageExpression = "1"
			return p
		}(), "spec.validations[0].messageExpression"},
		{"binding of Deny and Warn", &admissionregistrationv1.ValidatingAdmissionPolicyBinding{Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName: "p", ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny, admissionregistrationv1.Warn}}},
			"must not contain both Deny and Warn"},
		{"binding param without action", &admissionregistrationv1.ValidatingAdmissionPolicyBinding{Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName: "p", ParamRef: &admissionregistrationv1.ParamRef{Name: "x"}, ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}}},
			"spec.paramRef.parameterNotFoundAction: Required value"},
		{"mutating policy with a JSON patch that does not compile", &admissionregistrationv1.MutatingAdmissionPolicy{Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			MatchConstraints: validPolicy().Spec.MatchConstraints, ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
			Mutations: []admissionregistrationv1.Mutation{{PatchType: admissionregistrationv1.PatchTypeJSONPatch, JSONPatch: &admissionregistrationv1.JSONPatch{Expression: "[JSONPatch{op: "}}}}},
			"spec.mutations[0].jsonPatch.expression"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			Default(tc.obj)
			errs := Validate(tc.obj)
			switch {
			case tc.want == "" && len(errs) > 0:
				t.Errorf("errors %v, want none", errs)
			case tc.want != "" && !strings.Contains(errs.ToAggregate().Error(), tc.want):
				t.Errorf("errors %v, want %q", errs, tc.want)
			}
		})
	}
}

func TestDefault(t *testing.T) {
	c := &admissionregistrationv1.MutatingWebhookConfiguration{Webhooks: []admissionregistrationv1.MutatingWebhook{{
		ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{}},
		Rules:        []admissionregistrationv1.RuleWithOperations{{}}}}}
	Default(c)
	w := c.Webhooks[0]
	if *w.FailurePolicy != admissionregistrationv1.Fail || *w.MatchPolicy != admissionregistrationv1.Equivalent || *w.TimeoutSeconds != 10 ||
		*w.ReinvocationPolicy != admissionregistrationv1.NeverReinvocationPolicy || *w.ClientConfig.Service.Port != 443 ||
		*w.Rules[0].Scope != admissionregistrationv1.AllScopes || w.NamespaceSelector == nil || w.ObjectSelector == nil {
		t.Errorf("defaults = %+v", w)
	}
	set := &admissionregistrationv1.MutatingWebhookConfiguration{Webhooks: []admissionregistrationv1.MutatingWebhook{{
		TimeoutSeconds: ptr.To[int32](3), NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}}}}}
	Default(set)
	if *set.Webhooks[0].TimeoutSeconds != 3 || set.Webhooks[0].NamespaceSelector.MatchLabels["a"] != "b" {
		t.Errorf("defaults replaced set fields: %+v", set.Webhooks[0])
	}
}
