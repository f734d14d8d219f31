// Package clusterroleaggregation keeps the rules of every ClusterRole with
// an aggregationRule the union of the rules of the ClusterRoles its
// selectors match, as kube-controller-manager's clusterrole-aggregation
// controller does (how admin, edit and view take in the rules of
// system:aggregate-to-* and of roles users label the same way).
package clusterroleaggregation

import (
	"context"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	rbacclient "k8s.io/client-go/kubernetes/typed/rbac/v1"
	rbaclisters "k8s.io/client-go/listers/rbac/v1"
	"k8s.io/client-go/util/workqueue"

	"github.com/skiff-lab/skiff/controlplane/component"
	"github.com/skiff-lab/skiff/informer"
)

const controllerName = "clusterrole-aggregation"

// Controller aggregates cluster roles.
type Controller struct {
	client rbacclient.ClusterRolesGetter
	roles  rbaclisters.ClusterRoleLister
	queue  workqueue.TypedRateLimitingInterface[string]
}

var _ component.Component = (*Controller)(nil)

// New builds the controller on the shared informers.
func New(cc component.Context) (component.Component, error) {
	roles := cc.Informers.Rbac().V1().ClusterRoles()
	c := &Controller{client: cc.Client.RbacV1(), roles: roles.Lister(), queue: component.NewQueue(controllerName)}
	// Any role's change may change what an aggregating role takes in:
	// every aggregating role is looked at again.
	err := informer.AddHandlers(informer.Handler{Name: "clusterrole", Informer: roles.Informer(),
		Funcs: informer.OnChange(func(any) { c.enqueueAggregating() })})
	return c, err
}

func (c *Controller) enqueueAggregating() {
	all, _ := c.roles.List(labels.Everything())
	for _, r := range all {
		if r.AggregationRule != nil {
			c.queue.Add(r.Name)
		}
	}
}

// Run aggregates until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	component.RunWorkers(ctx, controllerName, c.queue, 1, c.sync)
}

// sync sets the rules of the aggregating role name to the union of its
// sources' rules (sources by name, each rule once), if they differ.
func (c *Controller) sync(ctx context.Context, name string) error {
	role, err := c.roles.Get(name)
	if apierrors.IsNotFound(err) || err == nil && role.AggregationRule == nil {
		return nil
	} else if err != nil {
		return err
	}
	rules, err := c.aggregate(role)
	if err != nil || equality.Semantic.DeepEqual(rules, role.Rules) {
		return err
	}
	update := role.DeepCopy()
	update.Rules = rules
	_, err = c.client.ClusterRoles().Update(ctx, update, metav1.UpdateOptions{})
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return nil // a newer version is on its way through the informer
	}
	return err
}

// aggregate is the rules of the roles role's selectors match, role itself
// excepted.
func (c *Controller) aggregate(role *rbacv1.ClusterRole) ([]rbacv1.PolicyRule, error) {
	var sources []*rbacv1.ClusterRole
	for _, sel := range role.AggregationRule.ClusterRoleSelectors {
		s, err := metav1.LabelSelectorAsSelector(&sel)
		if err != nil {
			return nil, err
		}
		matched, err := c.roles.List(s)
		if err != nil {
			return nil, err
		}
		for _, m := range matched {
			if m.Name != role.Name && !slices.Contains(sources, m) {
				sources = append(sources, m)
			}
		}
	}
	slices.SortFunc(sources, func(a, b *rbacv1.ClusterRole) int { return strings.Compare(a.Name, b.Name) })
	var rules []rbacv1.PolicyRule
	for _, s := range sources {
		for _, r := range s.Rules {
			if !slices.ContainsFunc(rules, func(have rbacv1.PolicyRule) bool { return equality.Semantic.DeepEqual(have, r) }) {
				rules = append(rules, r)
			}
		}
	}
	return rules, nil
}
