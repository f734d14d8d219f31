package rbac

import (
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	rbaclisters "k8s.io/client-go/listers/rbac/v1"
)

// cacheLister is a Lister over shared informers' caches.
type cacheLister struct {
	clusterRoles        rbaclisters.ClusterRoleLister
	roles               rbaclisters.RoleLister
	clusterRoleBindings rbaclisters.ClusterRoleBindingLister
	roleBindings        rbaclisters.RoleBindingLister
}

// NewLister returns a Lister over f's RBAC informers (registering them:
// start f after).
func NewLister(f informers.SharedInformerFactory) Lister {
	r := f.Rbac().V1()
	return &cacheLister{clusterRoles: r.ClusterRoles().Lister(), roles: r.Roles().Lister(),
		clusterRoleBindings: r.ClusterRoleBindings().Lister(), roleBindings: r.RoleBindings().Lister()}
}

func (l *cacheLister) ClusterRoleBindings() ([]*rbacv1.ClusterRoleBinding, error) {
	return l.clusterRoleBindings.List(labels.Everything())
}

func (l *cacheLister) RoleBindings(namespace string) ([]*rbacv1.RoleBinding, error) {
	return l.roleBindings.RoleBindings(namespace).List(labels.Everything())
}

func (l *cacheLister) ClusterRole(name string) (*rbacv1.ClusterRole, error) {
	return l.clusterRoles.Get(name)
}

func (l *cacheLister) Role(namespace, name string) (*rbacv1.Role, error) {
	return l.roles.Roles(namespace).Get(name)
}
