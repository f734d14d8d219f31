package admit

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/warning"
)

type fakeNamespaces map[string]*v1.Namespace

func (f fakeNamespaces) GetNamespace(_ context.Context, name string) (*v1.Namespace, error) {
	return f[name], nil
}

type fakePods []*v1.Pod

func (f fakePods) ListPods(context.Context, string) ([]*v1.Pod, error) { return f, nil }

type warnings []string

func (w *warnings) AddWarning(_, text string) { *w = append(*w, text) }

func TestPodSecurity(t *testing.T) {
	ns := func(name string, labels map[string]string) *v1.Namespace {
		return &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	}
	namespaces := fakeNamespaces{
		"locked": ns("locked", map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}),
		"warned": ns("warned", map[string]string{"pod-security.kubernetes.io/warn": "baseline"}),
		"open":   ns("open", nil),
	}
	privileged := func(namespace string) *v1.Pod {
		yes := true
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: namespace}, Spec: v1.PodSpec{Containers: []v1.Container{{
			Name: "c", Image: "busybox", SecurityContext: &v1.SecurityContext{Privileged: &yes}}}}}
	}
	p, err := NewPodSecurity(namespaces, fakePods{privileged("open")})
	if err != nil {
		t.Fatal(err)
	}
	bob := nodeA // any user
	validate := func(a admission.Attributes) (error, warnings) {
		var w warnings
		ctx := warning.WithWarningRecorder(t.Context(), &w)
		return p.Validate(ctx, a, nil), w
	}

	err, _ = validate(attrs(admission.Create, podsResource, "", "locked", "p", privileged("locked"), nil, bob))
	if want := `pods "p" is forbidden: violates PodSecurity "restricted:latest": privileged (container "c" must not set securityContext.privileged=true)`; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("privileged pod in a restricted namespace: %v, want %q", err, want)
	}
	err, w := validate(attrs(admission.Create, podsResource, "", "warned", "p", privileged("warned"), nil, bob))
	if err != nil || len(w) != 1 || !strings.Contains(w[0], `would violate PodSecurity "baseline:latest": privileged`) {
		t.Errorf("privileged pod in a warned namespace: %v %q", err, w)
	}
	if err, w := validate(attrs(admission.Create, podsResource, "", "open", "p", privileged("open"), nil, bob)); err != nil || len(w) != 0 {
		t.Errorf("privileged pod in an unlabelled namespace: %v %q", err, w)
	}
	relabelled := ns("open", map[string]string{"pod-security.kubernetes.io/enforce": "baseline"})
	err, w = validate(attrs(admission.Update, namespacesResource, "", "", "open", relabelled, namespaces["open"], bob))
	if err != nil || len(w) == 0 || !strings.Contains(strings.Join(w, "\n"), `existing pods in namespace "open" violate the new PodSecurity enforce level "baseline:latest"`) {
		t.Errorf("a namespace made baseline over a privileged pod: %v %q", err, w)
	}
}
