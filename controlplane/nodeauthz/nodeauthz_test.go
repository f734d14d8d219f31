package nodeauthz

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
)

func TestAuthorize(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}, Spec: v1.PodSpec{
		NodeName: "a", ServiceAccountName: "robot",
		Volumes: []v1.Volume{{Name: "s", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "s"}}}},
		Containers: []v1.Container{{Name: "c", EnvFrom: []v1.EnvFromSource{{
			ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "cm"}}}}}},
	}}
	f := informers.NewSharedInformerFactory(fake.NewClientset(pod), 0)
	rules := []rbacv1.PolicyRule{{Verbs: []string{"get", "list", "watch"}, APIGroups: []string{""}, Resources: []string{"pods"}}}
	a, err := New(f, rules)
	if err != nil {
		t.Fatal(err)
	}
	f.Start(t.Context().Done())
	f.WaitForCacheSync(t.Context().Done())

	nodeA := &user.DefaultInfo{Name: "system:node:a", Groups: []string{user.NodesGroup}}
	nodeB := &user.DefaultInfo{Name: "system:node:b", Groups: []string{user.NodesGroup}}
	notNode := &user.DefaultInfo{Name: "system:node:a"} // not in system:nodes
	res := func(u user.Info, verb, group, resource, sub, ns, name string) authorizer.AttributesRecord {
		return authorizer.AttributesRecord{User: u, Verb: verb, APIGroup: group, Resource: resource,
			Subresource: sub, Namespace: ns, Name: name, ResourceRequest: true}
	}
	for _, tt := range []struct {
		what   string
		attrs  authorizer.AttributesRecord
		allow  bool
		reason string
	}{
		{"its pod's secret", res(nodeA, "get", "", "secrets", "", "ns", "s"), true, ""},
		{"watch it by name", res(nodeA, "watch", "", "secrets", "", "ns", "s"), true, ""},
		{"another node's", res(nodeB, "get", "", "secrets", "", "ns", "s"), false, `no relationship found between node "b" and this object`},
		{"another namespace", res(nodeA, "get", "", "secrets", "", "other", "s"), false, `no relationship found between node "a" and this object`},
		{"list all", res(nodeA, "list", "", "secrets", "", "ns", ""), false, "No Object name found"},
		{"write it", res(nodeA, "update", "", "secrets", "", "ns", "s"), false, "can only read resources of this type"},
		{"its pod's configmap", res(nodeA, "get", "", "configmaps", "", "ns", "cm"), true, ""},
		{"a configmap no pod uses", res(nodeA, "get", "", "configmaps", "", "ns", "other"), false, `no relationship found between node "a" and this object`},
		{"its pod's service account token", res(nodeA, "create", "", "serviceaccounts", "token", "ns", "robot"), true, ""},
		{"another service account token", res(nodeA, "create", "", "serviceaccounts", "token", "ns", "default"), false, `no relationship found between node "a" and this object`},
		{"its lease", res(nodeA, "update", "coordination.k8s.io", "leases", "", "kube-node-lease", "a"), true, ""},
		{"another lease", res(nodeA, "get", "coordination.k8s.io", "leases", "", "kube-node-lease", "b"), false, "can only access node lease with the same name as the requesting node"},
		{"a lease elsewhere", res(nodeA, "get", "coordination.k8s.io", "leases", "", "kube-system", "a"), false, `can only access leases in the "kube-node-lease" namespace`},
		{"watch claims (provisioner)", res(nodeA, "watch", "", "persistentvolumeclaims", "", "", ""), true, ""},
		{"create a volume (provisioner)", res(nodeA, "create", "", "persistentvolumes", "", "", ""), true, ""},
		{"list classes (provisioner)", res(nodeA, "list", "storage.k8s.io", "storageclasses", "", "", ""), true, ""},
		{"update a claim", res(nodeA, "update", "", "persistentvolumeclaims", "", "ns", "c"), false, ""},
		{"delete a class", res(nodeA, "delete", "storage.k8s.io", "storageclasses", "", "", "c"), false, ""},
		{"system:node's rules", res(nodeA, "list", "", "pods", "", "", ""), true, ""},
		{"beyond them", res(nodeA, "delete", "", "namespaces", "", "", "ns"), false, ""},
		{"not a node", res(notNode, "get", "", "secrets", "", "ns", "s"), false, ""},
	} {
		d, reason, err := a.Authorize(t.Context(), tt.attrs)
		if err != nil || (d == authorizer.DecisionAllow) != tt.allow || reason != tt.reason {
			t.Errorf("%s: %v %q %v, want allowed %v %q", tt.what, d, reason, err, tt.allow, tt.reason)
		}
	}
}
