// Package nodeauthz is the Node authorizer, after kube-apiserver's: a node
// (user system:node:<name> in group system:nodes) may read only the
// Secrets, ConfigMaps and service accounts of the pods bound to it, may
// get and renew only its own Lease, and may otherwise do what the
// system:node role's rules allow; what it may write there is narrowed
// further by NodeRestriction admission. As its node's local-path
// provisioner (package localpath), a node also reads claims, volumes and
// storage classes and creates, updates and deletes volumes
// (NodeRestriction keeps those to the local-path volumes of the node). It has no opinion on
// anyone else.
package nodeauthz

import (
	"context"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/skiff-lab/skiff/controlplane/rbac"
	"github.com/skiff-lab/skiff/podrefs"
)

// nodePrefix starts every node's user name.
const nodePrefix = "system:node:"

// byNode indexes pods by spec.nodeName.
const byNode = "spec.nodeName"

// NodeName returns the node u is, if it is one: its name after
// system:node: and its membership of system:nodes.
func NodeName(u user.Info) (string, bool) {
	name, ok := strings.CutPrefix(u.GetName(), nodePrefix)
	if !ok {
		return "", false
	}
	for _, g := range u.GetGroups() {
		if g == user.NodesGroup {
			return name, true
		}
	}
	return "", false
}

// Authorizer decides nodes' requests from the pods bound to them.
type Authorizer struct {
	pods  cache.Indexer
	rules []rbacv1.PolicyRule
}

// New returns the authorizer over f's pods (to be started and synced by
// the caller), allowing what nodeRules (system:node's) allow beyond the
// objects it relates to nodes.
func New(f informers.SharedInformerFactory, nodeRules []rbacv1.PolicyRule) (*Authorizer, error) {
	inf := f.Core().V1().Pods().Informer()
	err := inf.AddIndexers(cache.Indexers{byNode: func(obj any) ([]string, error) {
		if pod, ok := obj.(*v1.Pod); ok && pod.Spec.NodeName != "" {
			return []string{pod.Spec.NodeName}, nil
		}
		return nil, nil
	}})
	if err != nil {
		return nil, err
	}
	return &Authorizer{pods: inf.GetIndexer(), rules: nodeRules}, nil
}

// Authorize implements the apiserver's Authorizer.
func (a *Authorizer) Authorize(_ context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	node, ok := NodeName(attrs.GetUser())
	if !ok {
		return authorizer.DecisionNoOpinion, "", nil
	}
	if node == "" {
		return authorizer.DecisionNoOpinion, "unknown node", nil
	}
	if attrs.IsResourceRequest() {
		switch attrs.GetAPIGroup() + "/" + attrs.GetResource() {
		case "/secrets":
			return a.readRelated(node, attrs, podrefs.Secret)
		case "/configmaps":
			return a.readRelated(node, attrs, podrefs.ConfigMap)
		case "/serviceaccounts":
			return a.serviceAccount(node, attrs)
		case "coordination.k8s.io/leases":
			return lease(node, attrs)
		case "/persistentvolumeclaims", "/persistentvolumes", "storage.k8s.io/storageclasses":
			if provisions(attrs) {
				return authorizer.DecisionAllow, "", nil
			}
		}
	}
	for i := range a.rules {
		if rbac.RuleAllows(attrs, &a.rules[i]) {
			return authorizer.DecisionAllow, "", nil
		}
	}
	return authorizer.DecisionNoOpinion, "", nil
}

// Rules lists the rules a node has beyond the objects of its pods (none
// for anyone else), for kubectl auth can-i --list.
func (a *Authorizer) Rules(u user.Info, _ string) ([]rbacv1.PolicyRule, []error) {
	if _, ok := NodeName(u); !ok {
		return nil, nil
	}
	return a.rules, nil
}

// readRelated allows reading one Secret or ConfigMap (get, or a list or
// watch by metadata.name) that a pod bound to node uses.
func (a *Authorizer) readRelated(node string, attrs authorizer.Attributes, kind string) (authorizer.Decision, string, error) {
	switch attrs.GetVerb() {
	case "get", "list", "watch":
	default:
		return authorizer.DecisionNoOpinion, "can only read resources of this type", nil
	}
	if attrs.GetSubresource() != "" {
		return authorizer.DecisionNoOpinion, "cannot read subresource", nil
	}
	if attrs.GetNamespace() == "" {
		return authorizer.DecisionNoOpinion, "can only read namespaced object of this type", nil
	}
	return a.related(node, attrs, func(pod *v1.Pod) bool { return podrefs.RefersTo(pod, kind, attrs.GetName()) })
}

// serviceAccount allows getting, and requesting tokens of, the service
// account of a pod bound to node.
func (a *Authorizer) serviceAccount(node string, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	switch sub, verb := attrs.GetSubresource(), attrs.GetVerb(); {
	case sub == "" && verb == "get", sub == "token" && verb == "create":
	default:
		return authorizer.DecisionNoOpinion, "can only get individual service accounts or create their tokens", nil
	}
	return a.related(node, attrs, func(pod *v1.Pod) bool { return pod.Spec.ServiceAccountName == attrs.GetName() })
}

// related allows attrs when a pod bound to node in attrs' namespace uses
// the object (uses).
func (a *Authorizer) related(node string, attrs authorizer.Attributes, uses func(*v1.Pod) bool) (authorizer.Decision, string, error) {
	if attrs.GetName() == "" {
		return authorizer.DecisionNoOpinion, "No Object name found", nil
	}
	pods, err := a.pods.ByIndex(byNode, node)
	if err != nil {
		return authorizer.DecisionNoOpinion, "", err
	}
	for _, obj := range pods {
		if pod := obj.(*v1.Pod); pod.Namespace == attrs.GetNamespace() && uses(pod) {
			return authorizer.DecisionAllow, "", nil
		}
	}
	return authorizer.DecisionNoOpinion, fmt.Sprintf("no relationship found between node %q and this object", node), nil
}

// provisions says whether attrs is what the node's local-path
// provisioner does: watch claims, volumes and classes, create, grow and
// delete volumes.
func provisions(attrs authorizer.Attributes) bool {
	if attrs.GetSubresource() != "" {
		return false
	}
	switch attrs.GetVerb() {
	case "get", "list", "watch":
		return true
	case "create", "update", "delete":
		return attrs.GetResource() == "persistentvolumes"
	}
	return false
}

// lease allows a node its own Lease in kube-node-lease (NodeRestriction
// checks the name of one it creates).
func lease(node string, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	if attrs.GetNamespace() != v1.NamespaceNodeLease {
		return authorizer.DecisionNoOpinion, fmt.Sprintf("can only access leases in the %q namespace", v1.NamespaceNodeLease), nil
	}
	switch attrs.GetVerb() {
	case "create":
		return authorizer.DecisionAllow, "", nil
	case "get", "update", "patch", "delete":
		if attrs.GetName() == node {
			return authorizer.DecisionAllow, "", nil
		}
		return authorizer.DecisionNoOpinion, "can only access node lease with the same name as the requesting node", nil
	}
	return authorizer.DecisionNoOpinion, "can only get, create, update, patch, or delete a node lease", nil
}
