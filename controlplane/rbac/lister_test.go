package rbac

import (
	"context"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
)

// TestCacheLister decides from informers' caches: a Role and its
// RoleBinding made through the API allow once the caches have them.
func TestCacheLister(t *testing.T) {
	client := fake.NewClientset(
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "reader"},
			Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "bob"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "reader"},
			Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: rbacv1.GroupName, Name: "bob"}}})
	f := informers.NewSharedInformerFactory(client, 0)
	a := New(NewLister(f))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
	attrs := authorizer.AttributesRecord{User: &user.DefaultInfo{Name: "bob"}, Verb: "get", Namespace: "team",
		Resource: "pods", Name: "p", ResourceRequest: true}
	if d, reason, _ := a.Authorize(ctx, attrs); d != authorizer.DecisionAllow {
		t.Errorf("bob getting a pod: %v %q", d, reason)
	}
	attrs.Namespace = "other"
	if d, _, _ := a.Authorize(ctx, attrs); d == authorizer.DecisionAllow {
		t.Error("bob allowed in another namespace")
	}
}
