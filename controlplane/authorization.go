package controlplane

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/component-helpers/auth/rbac/reconciliation"

	"github.com/skiff-lab/skiff/controlplane/apiserver"
	"github.com/skiff-lab/skiff/controlplane/nodeauthz"
	"github.com/skiff-lab/skiff/controlplane/rbac"
)

// Authorization modes (--authorization-mode, a comma-separated list whose
// authorizers are asked in order until one allows).
const (
	AuthorizationAlwaysAllow = "AlwaysAllow"
	AuthorizationNode        = "Node"
	AuthorizationRBAC        = "RBAC"
)

// DefaultAuthorizationMode is kubeadm's: nodes by the Node authorizer,
// everyone else by RBAC.
const DefaultAuthorizationMode = AuthorizationNode + "," + AuthorizationRBAC

// parseAuthorizationModes checks the --authorization-mode list.
func parseAuthorizationModes(list string) ([]string, error) {
	modes := strings.Split(cmp.Or(list, DefaultAuthorizationMode), ",")
	seen := map[string]bool{}
	for _, m := range modes {
		switch {
		case m != AuthorizationAlwaysAllow && m != AuthorizationNode && m != AuthorizationRBAC:
			return nil, fmt.Errorf("--authorization-mode %q: unknown mode %q (want %s, %s or %s)",
				list, m, AuthorizationAlwaysAllow, AuthorizationNode, AuthorizationRBAC)
		case seen[m]:
			return nil, fmt.Errorf("--authorization-mode %q: %s given twice", list, m)
		}
		seen[m] = true
	}
	return modes, nil
}

// authorizes says whether the modes decide requests (anything but
// AlwaysAllow alone).
func authorizes(modes []string) bool {
	return !slices.Equal(modes, []string{AuthorizationAlwaysAllow})
}

// runAuthorizer, when the modes authorize, installs their authorizers in
// order once their caches (informers of f, which it starts) are synced:
// with RBAC, after bringing the default
// roles and bindings up to date (kube-apiserver's bootstrap policy,
// reconciled at every start: missing objects made, missing rules and
// subjects added to those marked rbac.authorization.kubernetes.io/autoupdate,
// retried with back-off until ctx ends). Until then only system:masters get
// through. It reports whether the server is ready (false: ctx ended or a
// mode failed).
func runAuthorizer(ctx context.Context, modes []string, srv *apiserver.Server, lb *loopback, f informers.SharedInformerFactory) bool {
	if !authorizes(modes) {
		return true
	}
	client := kubernetes.NewForConfigOrDie(lb.config(apiserverUser.Name))
	policy := withSkiff(rbac.Bootstrap())
	if slices.Contains(modes, AuthorizationRBAC) {
		reconcileWithBackoff(ctx, client, policy)
	}
	var chain apiserver.Chain
	for _, m := range modes {
		a, err := newAuthorizer(m, f, policy)
		if err != nil {
			slog.Error("authorizer", "mode", m, "err", err)
			return false
		}
		chain = append(chain, a)
	}
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
	if ctx.Err() != nil {
		return false
	}
	srv.SetAuthorizer(chain)
	slog.Info("authorizer ready", "modes", strings.Join(modes, ","))
	return true
}

func newAuthorizer(mode string, f informers.SharedInformerFactory, policy rbac.Policy) (apiserver.Authorizer, error) {
	switch mode {
	case AuthorizationNode:
		return nodeauthz.New(f, policy.ClusterRole("system:node").Rules)
	case AuthorizationRBAC:
		return rbac.New(rbac.NewLister(f)), nil
	}
	return alwaysAllow{}, nil
}

// alwaysAllow is the AlwaysAllow mode's authorizer.
type alwaysAllow struct{}

func (alwaysAllow) Authorize(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
	return authorizer.DecisionAllow, "", nil
}

func reconcileWithBackoff(ctx context.Context, client kubernetes.Interface, policy rbac.Policy) {
	backoff := wait.Backoff{Duration: 100 * time.Millisecond, Factor: 2, Steps: 12, Cap: 10 * time.Second}
	err := wait.ExponentialBackoffWithContext(ctx, backoff, func(ctx context.Context) (bool, error) {
		if err := reconcilePolicy(client, policy); err != nil {
			slog.Warn("RBAC bootstrap policy", "err", err)
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		slog.Error("RBAC bootstrap policy not reconciled", "err", err)
	}
}

// withSkiff adds to p what skiff's own parts need: as kubeadm and k3s add
// it, bootstrappers may ask for node certificates
// (system:node-bootstrapper); as the agent runs the node's service proxy
// with the node's credentials, nodes get system:node-proxier's rights
// (their own, system:node's, come from the Node authorizer);
// kube-controller-manager may hold the control plane's leader Lease.
func withSkiff(p rbac.Policy) rbac.Policy {
	bind := func(name, role, group string) rbacv1.ClusterRoleBinding {
		return rbacv1.ClusterRoleBinding{
			ObjectMeta: skiffMeta("", name),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: group}},
		}
	}
	p.ClusterRoleBindings = append(p.ClusterRoleBindings,
		bind("skiff:node-bootstrapper", "system:node-bootstrapper", "system:bootstrappers"),
		bind("skiff:node-proxier", "system:node-proxier", "system:nodes"))
	const leader = "skiff:leader-locking-controlplane"
	p.Roles = append(p.Roles, rbacv1.Role{ObjectMeta: skiffMeta(metav1.NamespaceSystem, leader),
		Rules: []rbacv1.PolicyRule{{Verbs: []string{"get", "update"}, APIGroups: []string{coordinationv1.GroupName},
			Resources: []string{"leases"}, ResourceNames: []string{leaseName}}}})
	p.RoleBindings = append(p.RoleBindings, rbacv1.RoleBinding{ObjectMeta: skiffMeta(metav1.NamespaceSystem, leader),
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: leader},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: controllerManagerUser.Name}}})
	return p
}

func skiffMeta(namespace, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: namespace, Name: name,
		Annotations: map[string]string{rbacv1.AutoUpdateAnnotationKey: "true"}}
}

// reconcilePolicy makes p's roles and bindings exist and hold at least
// what p gives them, leaving the ones an admin marked autoupdate "false".
func reconcilePolicy(client kubernetes.Interface, p rbac.Policy) error {
	r := client.RbacV1()
	var errs []error
	for i := range p.ClusterRoles {
		o := reconciliation.ReconcileRoleOptions{Role: reconciliation.ClusterRoleRuleOwner{ClusterRole: &p.ClusterRoles[i]},
			Client: reconciliation.ClusterRoleModifier{Client: r.ClusterRoles()}, Confirm: true}
		if _, err := o.Run(); err != nil {
			errs = append(errs, fmt.Errorf("clusterrole %s: %w", p.ClusterRoles[i].Name, err))
		}
	}
	for i := range p.ClusterRoleBindings {
		o := reconciliation.ReconcileRoleBindingOptions{RoleBinding: reconciliation.ClusterRoleBindingAdapter{ClusterRoleBinding: &p.ClusterRoleBindings[i]},
			Client: reconciliation.ClusterRoleBindingClientAdapter{Client: r.ClusterRoleBindings()}, Confirm: true}
		if _, err := o.Run(); err != nil {
			errs = append(errs, fmt.Errorf("clusterrolebinding %s: %w", p.ClusterRoleBindings[i].Name, err))
		}
	}
	for i := range p.Roles {
		o := reconciliation.ReconcileRoleOptions{Role: reconciliation.RoleRuleOwner{Role: &p.Roles[i]},
			Client: reconciliation.RoleModifier{Client: r, NamespaceClient: client.CoreV1().Namespaces()}, Confirm: true}
		if _, err := o.Run(); err != nil {
			errs = append(errs, fmt.Errorf("role %s/%s: %w", p.Roles[i].Namespace, p.Roles[i].Name, err))
		}
	}
	for i := range p.RoleBindings {
		o := reconciliation.ReconcileRoleBindingOptions{RoleBinding: reconciliation.RoleBindingAdapter{RoleBinding: &p.RoleBindings[i]},
			Client: reconciliation.RoleBindingClientAdapter{Client: r, NamespaceClient: client.CoreV1().Namespaces()}, Confirm: true}
		if _, err := o.Run(); err != nil {
			errs = append(errs, fmt.Errorf("rolebinding %s/%s: %w", p.RoleBindings[i].Namespace, p.RoleBindings[i].Name, err))
		}
	}
	return errors.Join(errs...)
}
