package controlplane

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/component-helpers/auth/rbac/reconciliation"

	"github.com/skiff-lab/skiff/controlplane/apiserver"
	"github.com/skiff-lab/skiff/controlplane/rbac"
)

// Authorization modes (--authorization-mode).
const (
	AuthorizationAlwaysAllow = "AlwaysAllow"
	AuthorizationRBAC        = "RBAC"
)

// runAuthorizer, in RBAC mode, brings the default roles and bindings up to
// date (kube-apiserver's bootstrap policy, reconciled at every start:
// missing objects made, missing rules and subjects added to those marked
// rbac.authorization.kubernetes.io/autoupdate) and installs the RBAC
// authorizer once its caches hold the roles and bindings. Until then only
// system:masters get through. It retries with back-off until ctx ends.
func runAuthorizer(ctx context.Context, cfg Config, srv *apiserver.Server, lb *loopback) {
	if cfg.AuthorizationMode != AuthorizationRBAC {
		return
	}
	client := kubernetes.NewForConfigOrDie(lb.config(componentsUser.Name))
	backoff := wait.Backoff{Duration: 100 * time.Millisecond, Factor: 2, Steps: 12, Cap: 10 * time.Second}
	err := wait.ExponentialBackoffWithContext(ctx, backoff, func(ctx context.Context) (bool, error) {
		if err := reconcilePolicy(client, withJoining(rbac.Bootstrap())); err != nil {
			slog.Warn("RBAC bootstrap policy", "err", err)
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		slog.Error("RBAC bootstrap policy not reconciled", "err", err)
	}
	f := informers.NewSharedInformerFactory(client, 0)
	lister := rbac.NewLister(f)
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
	srv.SetAuthorizer(rbac.New(lister))
	slog.Info("RBAC authorizer ready")
}

// withJoining adds to p what joining nodes need, as kubeadm and k3s add it:
// bootstrappers may ask for node certificates (system:node-bootstrapper),
// and nodes get system:node's rights (until a node authorizer narrows
// them to their own pods' objects).
func withJoining(p rbac.Policy) rbac.Policy {
	bind := func(name, role, group string) rbacv1.ClusterRoleBinding {
		return rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{rbacv1.AutoUpdateAnnotationKey: "true"}},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: group}},
		}
	}
	p.ClusterRoleBindings = append(p.ClusterRoleBindings,
		bind("skiff:node-bootstrapper", "system:node-bootstrapper", "system:bootstrappers"),
		bind("skiff:node", "system:node", "system:nodes"))
	return p
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
