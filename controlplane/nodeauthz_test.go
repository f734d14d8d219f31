package controlplane_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/skiff-lab/skiff/controlplane/servertest"
)

// nodeClient is a client with node name's credentials.
func nodeClient(t *testing.T, s *servertest.Server, name string) kubernetes.Interface {
	t.Helper()
	c, err := kubernetes.NewForConfig(s.UserConfig("system:node:"+name, "system:nodes"))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// wantForbidden fails unless err is a 403 whose message holds want.
func wantForbidden(t *testing.T, what string, err error, want string) {
	t.Helper()
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), want) {
		t.Errorf("%s: %v, want forbidden with %q", what, err, want)
	}
}

// TestNodeAuthorizer runs the default authorizers (Node,RBAC) and
// NodeRestriction: each of two nodes reads the Secret its own pod uses and
// not the other's, writes its own Node, Lease and pods' status only, and
// cannot give itself restricted labels or change its taints.
func TestNodeAuthorizer(t *testing.T) {
	s := servertest.Start(t)
	admin, a, b := s.Client(), nodeClient(t, s, "a"), nodeClient(t, s, "b")
	ctx := t.Context()
	// No pod is admitted before the service account controller has made
	// the namespace's default ServiceAccount.
	servertest.Eventually(t, "the default ServiceAccount", 30*time.Second, func(ctx context.Context) (bool, string) {
		_, err := admin.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})
	for _, c := range []struct {
		node   kubernetes.Interface
		name   string
		secret string
	}{{a, "a", "for-a"}, {b, "b", "for-b"}} {
		registerNode(t, c.node, c.name)
		mustCreateSecret(t, admin, c.secret)
		mustCreatePodOn(t, admin, "pod-"+c.name, c.name, c.secret)
	}
	waitAllowed(t, "node a to read its pod's Secret", func() error {
		_, err := a.CoreV1().Secrets("default").Get(ctx, "for-a", metav1.GetOptions{})
		return err
	})
	_, err := a.CoreV1().Secrets("default").Get(ctx, "for-b", metav1.GetOptions{})
	wantForbidden(t, "a reads b's Secret", err, `no relationship found between node "a" and this object`)
	_, err = a.CoreV1().Secrets("default").List(ctx, metav1.ListOptions{})
	wantForbidden(t, "a lists Secrets", err, `User "system:node:a" cannot list resource "secrets"`)
	one := metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", "for-a").String()}
	if l, err := a.CoreV1().Secrets("default").List(ctx, one); err != nil || len(l.Items) != 1 {
		t.Errorf("a lists its Secret by name: %v %v", l, err)
	}

	checkNodeWrites(t, a)
	checkPodWrites(t, a)
	checkLeases(t, a)
	checkLocalReview(t, admin)
}

// checkLocalReview: a LocalSubjectAccessReview answers for node a in
// default as the Node authorizer decides, and only in its own namespace.
func checkLocalReview(t *testing.T, admin kubernetes.Interface) {
	ctx := t.Context()
	ask := func(ns, secret string) (*authorizationv1.LocalSubjectAccessReview, error) {
		return admin.AuthorizationV1().LocalSubjectAccessReviews(ns).Create(ctx, &authorizationv1.LocalSubjectAccessReview{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns},
			Spec: authorizationv1.SubjectAccessReviewSpec{User: "system:node:a", Groups: []string{"system:nodes"},
				ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "default", Verb: "get", Resource: "secrets", Name: secret}},
		}, metav1.CreateOptions{})
	}
	if r, err := ask("default", "for-a"); err != nil || !r.Status.Allowed {
		t.Errorf("review of a's secret: %+v %v", r, err)
	}
	if r, err := ask("default", "for-b"); err != nil || r.Status.Allowed || !strings.Contains(r.Status.Reason, "no relationship found") {
		t.Errorf("review of b's secret: %+v %v", r, err)
	}
	if _, err := ask("kube-system", "for-a"); !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "spec.resourceAttributes.namespace must match namespace: kube-system") {
		t.Errorf("a review of another namespace: %v", err)
	}
}

func checkNodeWrites(t *testing.T, a kubernetes.Interface) {
	ctx := t.Context()
	label := func(key string) []byte {
		return []byte(`{"metadata":{"labels":{"` + key + `":"x"}}}`)
	}
	_, err := a.CoreV1().Nodes().Patch(ctx, "b", types.MergePatchType, label("team"), metav1.PatchOptions{})
	wantForbidden(t, "a labels node b", err, `node "a" is not allowed to modify node "b"`)
	_, err = a.CoreV1().Nodes().Patch(ctx, "a", types.MergePatchType, label("node-restriction.kubernetes.io/fast"), metav1.PatchOptions{})
	wantForbidden(t, "a gives itself a restricted label", err, `is not allowed to modify labels: node-restriction.kubernetes.io/fast`)
	if _, err := a.CoreV1().Nodes().Patch(ctx, "a", types.MergePatchType, label("example.com/team"), metav1.PatchOptions{}); err != nil {
		t.Errorf("a labels itself outside kubernetes.io: %v", err)
	}
	taint := []byte(`{"spec":{"taints":[{"key":"k","effect":"NoSchedule"}]}}`)
	_, err = a.CoreV1().Nodes().Patch(ctx, "a", types.StrategicMergePatchType, taint, metav1.PatchOptions{})
	wantForbidden(t, "a taints itself", err, `node "a" is not allowed to modify taints`)
	_, err = a.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "c"}}, metav1.CreateOptions{})
	wantForbidden(t, "a creates node c", err, `node "a" is not allowed to modify node "c"`)
}

func checkPodWrites(t *testing.T, a kubernetes.Interface) {
	ctx := t.Context()
	status := func(name string) error {
		pod, err := a.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		pod.Status.Message = "seen by a"
		_, err = a.CoreV1().Pods("default").UpdateStatus(ctx, pod, metav1.UpdateOptions{})
		return err
	}
	if err := status("pod-a"); err != nil {
		t.Errorf("a updates its pod's status: %v", err)
	}
	wantForbidden(t, "a updates b's pod's status", status("pod-b"),
		`node "a" can only update pod status for pods with spec.nodeName set to itself`)
	err := a.CoreV1().Pods("default").Delete(ctx, "pod-b", metav1.DeleteOptions{})
	wantForbidden(t, "a deletes b's pod", err, `node "a" can only delete pods with spec.nodeName set to itself`)
	_, err = a.CoreV1().Pods("default").Create(ctx, podOn("made-by-a", "a", "for-a"), metav1.CreateOptions{})
	wantForbidden(t, "a creates a pod", err, `node "a" can only create mirror pods`)
}

func checkLeases(t *testing.T, a kubernetes.Interface) {
	ctx := t.Context()
	leases := a.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	for _, name := range []string{"a", "b"} {
		_, err := leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		if name == "a" && err != nil {
			t.Errorf("a creates its Lease: %v", err)
		}
		if name == "b" {
			wantForbidden(t, "a creates b's Lease", err, "can only access node lease with the same name as the requesting node")
		}
	}
	_, err := leases.Get(ctx, "b", metav1.GetOptions{})
	wantForbidden(t, "a reads b's Lease", err, "can only access node lease with the same name as the requesting node")
}

func registerNode(t *testing.T, c kubernetes.Interface, name string) {
	t.Helper()
	waitAllowed(t, "node "+name+" to register", func() error {
		_, err := c.CoreV1().Nodes().Create(t.Context(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		return err
	})
}

func mustCreateSecret(t *testing.T, c kubernetes.Interface, name string) {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, StringData: map[string]string{"k": "v"}}
	if _, err := c.CoreV1().Secrets("default").Create(t.Context(), s, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func podOn(name, node, secret string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{
		NodeName:   node,
		Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
		Volumes: []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{
			Secret: &corev1.SecretVolumeSource{SecretName: secret}}}},
	}}
}

func mustCreatePodOn(t *testing.T, c kubernetes.Interface, name, node, secret string) {
	t.Helper()
	if _, err := c.CoreV1().Pods("default").Create(t.Context(), podOn(name, node, secret), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitAllowed retries do while it is refused (the authorizer's caches may
// lag the objects that allow it) for up to 30s.
func waitAllowed(t *testing.T, what string, do func() error) {
	t.Helper()
	servertest.Eventually(t, what, 30*time.Second, func(context.Context) (bool, string) {
		err := do()
		if err == nil {
			return true, ""
		}
		return false, err.Error()
	})
}

// TestAnonymousRequests: without credentials, a client gets what
// system:unauthenticated is bound to (version, health) and 403 for the
// rest, with kube-apiserver's message.
func TestAnonymousRequests(t *testing.T) {
	s := servertest.Start(t)
	anon, err := kubernetes.NewForConfig(&rest.Config{Host: s.RESTConfig().Host,
		TLSClientConfig: rest.TLSClientConfig{CAData: s.RESTConfig().CAData}})
	if err != nil {
		t.Fatal(err)
	}
	waitAllowed(t, "anonymous /version", func() error {
		_, err := anon.Discovery().ServerVersion()
		return err
	})
	_, err = anon.CoreV1().Pods("default").List(t.Context(), metav1.ListOptions{})
	wantForbidden(t, "anonymous pod list", err,
		`User "system:anonymous" cannot list resource "pods" in API group "" in the namespace "default"`)
}
