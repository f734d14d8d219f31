package clusterroleaggregation

import (
	"context"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/skiff-lab/skiff/controlplane/component"
)

func labelled(name string, labels map[string]string, rules ...rbacv1.PolicyRule) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Rules: rules}
}

// TestAggregation: view takes in the rules of the roles labelled for it,
// each rule once, and follows a new source.
func TestAggregation(t *testing.T) {
	pods := rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}
	deploys := rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{"apps"}, Resources: []string{"deployments"}}
	secrets := rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"secrets"}}
	toView := map[string]string{"rbac.authorization.k8s.io/aggregate-to-view": "true"}
	view := labelled("view", nil)
	view.AggregationRule = &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: toView}}}
	client := fake.NewClientset(view, labelled("b", toView, deploys, pods), labelled("a", toView, pods), labelled("c", nil, secrets))
	factory := informers.NewSharedInformerFactory(client, 0)
	c, err := New(component.Context{Client: client, Informers: factory})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	go c.Run(ctx)
	waitRules := func(what string, want ...rbacv1.PolicyRule) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			got, _ := client.RbacV1().ClusterRoles().Get(ctx, "view", metav1.GetOptions{})
			if len(got.Rules) == len(want) && (len(want) == 0 || got.Rules[0].Resources[0] == want[0].Resources[0] &&
				got.Rules[len(want)-1].Resources[0] == want[len(want)-1].Resources[0]) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: view's rules %v, want %v", what, got.Rules, want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitRules("a and b (by name), pods once", pods, deploys)
	if _, err := client.RbacV1().ClusterRoles().Create(ctx, labelled("d", toView, secrets), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRules("d added", pods, deploys, secrets)
}
