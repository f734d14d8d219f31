package controllers

import (
	"errors"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// testOwners routes to two cached ReplicaSets, "web" (selecting app=web)
// and "api" (selecting app=api), recording the names it wakes.
func testOwners(woken *[]string) Owners[*appsv1.ReplicaSet] {
	selecting := func(name, app string) *appsv1.ReplicaSet {
		return &appsv1.ReplicaSet{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name + "-uid")},
			Spec:       appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}},
		}
	}
	cached := []*appsv1.ReplicaSet{selecting("web", "web"), selecting("api", "api")}
	return Owners[*appsv1.ReplicaSet]{
		Kind: rsKind,
		Get: func(ns, name string) (*appsv1.ReplicaSet, error) {
			for _, rs := range cached {
				if rs.Namespace == ns && rs.Name == name {
					return rs, nil
				}
			}
			return nil, errors.New("not found")
		},
		List:     func(string) ([]*appsv1.ReplicaSet, error) { return cached, nil },
		Selector: func(rs *appsv1.ReplicaSet) *metav1.LabelSelector { return rs.Spec.Selector },
		Wake:     func(rs *appsv1.ReplicaSet) { *woken = append(*woken, rs.Name) },
	}
}

func ownerRef(apiVersion, kind, name, uid string) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID(uid), Controller: new(true)}
}

func TestOwnersOf(t *testing.T) {
	tests := []struct {
		name string
		ref  metav1.OwnerReference
		want string
	}{
		{"ours", ownerRef("apps/v1", "ReplicaSet", "web", "web-uid"), "web"},
		{"another version of the group", ownerRef("apps/v1beta2", "ReplicaSet", "web", "web-uid"), "web"},
		{"another group", ownerRef("extensions/v1", "ReplicaSet", "web", "web-uid"), ""},
		{"another kind", ownerRef("apps/v1", "Deployment", "web", "web-uid"), ""},
		{"replaced", ownerRef("apps/v1", "ReplicaSet", "web", "old-uid"), ""},
		{"missing", ownerRef("apps/v1", "ReplicaSet", "gone", "gone-uid"), ""},
		{"bad apiVersion", ownerRef("a/b/c", "ReplicaSet", "web", "web-uid"), ""},
		{"not the controller", metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: "web-uid"}, ""},
	}
	var woken []string
	owners := testOwners(&woken)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := claimPod("p", func(p *corev1.Pod) { p.OwnerReferences = []metav1.OwnerReference{tt.ref} })
			got, ok := owners.Of(pod)
			if ok != (tt.want != "") || (ok && got.Name != tt.want) {
				t.Errorf("Of = %v, %v; want %q", got, ok, tt.want)
			}
		})
	}
}

func TestOwnersRouting(t *testing.T) {
	web := ownerRef("apps/v1", "ReplicaSet", "web", "web-uid")
	api := ownerRef("apps/v1", "ReplicaSet", "api", "api-uid")
	pod := func(app string, refs ...metav1.OwnerReference) *corev1.Pod {
		return claimPod("p", func(p *corev1.Pod) { p.Labels, p.OwnerReferences = map[string]string{"app": app}, refs })
	}
	tests := []struct {
		name     string
		route    func(Owners[*appsv1.ReplicaSet])
		wantWoke []string
	}{
		{"added, owned", func(o Owners[*appsv1.ReplicaSet]) { o.Added(pod("api", web)) }, []string{"web"}},
		{"added, orphan", func(o Owners[*appsv1.ReplicaSet]) { o.Added(pod("api")) }, []string{"api"}},
		{"added, orphan without labels", func(o Owners[*appsv1.ReplicaSet]) { o.Added(claimPod("p", func(p *corev1.Pod) { p.Labels = nil })) }, nil},
		{"added, owner gone", func(o Owners[*appsv1.ReplicaSet]) {
			o.Added(pod("web", ownerRef("apps/v1", "ReplicaSet", "gone", "gone-uid")))
		}, nil},
		{"updated, same owner", func(o Owners[*appsv1.ReplicaSet]) { o.Updated(pod("web", web), pod("api", web)) }, []string{"web"}},
		{"updated, owner changed", func(o Owners[*appsv1.ReplicaSet]) { o.Updated(pod("web", web), pod("web", api)) }, []string{"web", "api"}},
		{"updated, released", func(o Owners[*appsv1.ReplicaSet]) { o.Updated(pod("api", web), pod("api")) }, []string{"web", "api"}},
		{"updated, orphan relabelled", func(o Owners[*appsv1.ReplicaSet]) { o.Updated(pod("web"), pod("api")) }, []string{"api"}},
		{"updated, orphan unchanged", func(o Owners[*appsv1.ReplicaSet]) { o.Updated(pod("web"), pod("web")) }, nil},
		{"deleted, owned", func(o Owners[*appsv1.ReplicaSet]) { o.WakeController(pod("web", api)) }, []string{"api"}},
		{"deleted, orphan", func(o Owners[*appsv1.ReplicaSet]) { o.WakeController(pod("web")) }, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var woken []string
			tt.route(testOwners(&woken))
			if !slices.Equal(woken, tt.wantWoke) {
				t.Errorf("woke %v, want %v", woken, tt.wantWoke)
			}
		})
	}
}
