// Package admit holds skiff's admission plugins, each after its
// kube-apiserver namesake and each a k8s.io/apiserver admission plugin,
// which the API server runs in order on every create, update and delete
// once the request is authorized.
package admit

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	kubeletapis "k8s.io/kubelet/pkg/apis"

	"github.com/skiff-lab/skiff/controlplane/nodeauthz"
	"github.com/skiff-lab/skiff/localpath"
	"github.com/skiff-lab/skiff/podrefs"
)

// mirrorAnnotation marks a static pod's mirror, the only pod a node may
// create.
const mirrorAnnotation = "kubernetes.io/config.mirror"

// restrictedLabelDomain is the label domain no node may set on itself, so
// that workloads can be steered by labels only admins give.
const restrictedLabelDomain = "node-restriction.kubernetes.io"

var (
	podsResource       = v1.Resource("pods")
	namespacesResource = v1.Resource("namespaces")
	saResource         = v1.Resource("serviceaccounts")
	nodesResource      = v1.Resource("nodes")
	leasesResource     = coordinationv1.Resource("leases")
	pcrResource        = certificatesv1.Resource("podcertificaterequests")
	pvResource         = v1.Resource("persistentvolumes")
)

// NodeRestriction narrows what the Node authorizer lets a node write to
// what concerns itself: its own Node (not its taints, nor labels outside
// the kubelet's), its own Lease, the status and deletion of the pods bound
// to it, mirror pods bound to it, tokens bound to its pods, and its own
// local-path volumes.
type NodeRestriction struct {
	*admission.Handler
	lookups Lookups
}

// NewNodeRestriction returns the plugin.
func NewNodeRestriction(l Lookups) *NodeRestriction {
	return &NodeRestriction{admission.NewHandler(admission.Create, admission.Update, admission.Delete), l}
}

// Validate refuses a node's write to what is not its own.
func (p *NodeRestriction) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	node, ok := nodeauthz.NodeName(a.GetUserInfo())
	if !ok {
		return nil
	}
	var err error
	switch a.GetResource().GroupResource() {
	case podsResource:
		err = pod(node, a)
	case nodesResource:
		err = nodeObject(node, a)
	case saResource:
		if a.GetSubresource() == "token" {
			err = p.token(ctx, node, a)
		}
	case pcrResource:
		err = p.podCertificateRequest(ctx, node, a)
	case pvResource:
		err = localVolume(node, a)
	case leasesResource:
		if a.GetNamespace() == v1.NamespaceNodeLease && a.GetName() != node {
			err = fmt.Errorf("can only access node lease with the same name as the requesting node")
		}
	}
	if err != nil {
		return admission.NewForbidden(a, err)
	}
	return nil
}

// localVolume lets a node create, grow and delete only the local-path
// volumes of its own node.
func localVolume(node string, a admission.Attributes) error {
	for _, obj := range []runtime.Object{a.GetObject(), a.GetOldObject()} {
		pv, ok := obj.(*v1.PersistentVolume)
		if !ok {
			continue
		}
		if on, ok := localpath.NodeOf(pv); !localpath.Owns(pv) || !ok || on != node {
			return fmt.Errorf("node %q can only %s local-path persistent volumes with node affinity to itself", node, strings.ToLower(string(a.GetOperation())))
		}
	}
	if pv, ok := a.GetObject().(*v1.PersistentVolume); ok && a.GetOperation() == admission.Update {
		old := a.GetOldObject().(*v1.PersistentVolume).Spec.DeepCopy()
		old.Capacity = pv.Spec.Capacity
		if !equality.Semantic.DeepEqual(*old, pv.Spec) {
			return fmt.Errorf("node %q can only change the capacity of its local-path persistent volumes", node)
		}
	}
	return nil
}

// pod lets a node create mirror pods bound to it, and update the status of
// and delete (or evict) the pods bound to it.
func pod(node string, a admission.Attributes) error {
	switch a.GetOperation() {
	case admission.Create:
		p, ok := a.GetObject().(*v1.Pod)
		if !ok || a.GetSubresource() != "" {
			return nil
		}
		if _, mirror := p.Annotations[mirrorAnnotation]; !mirror {
			return fmt.Errorf("pod does not have %q annotation, node %q can only create mirror pods", mirrorAnnotation, node)
		}
		if p.Spec.NodeName != node {
			return fmt.Errorf("node %q can only create pods with spec.nodeName set to itself", node)
		}
	case admission.Update:
		if a.GetSubresource() != "status" {
			return fmt.Errorf("unexpected operation %s, node %q can only update pod status", a.GetOperation(), node)
		}
		if old, ok := a.GetOldObject().(*v1.Pod); ok && old.Spec.NodeName != node {
			return fmt.Errorf("node %q can only update pod status for pods with spec.nodeName set to itself", node)
		}
	case admission.Delete:
		if old, ok := a.GetOldObject().(*v1.Pod); ok && old.Spec.NodeName != node {
			return fmt.Errorf("node %q can only delete pods with spec.nodeName set to itself", node)
		}
	}
	return nil
}

// token lets a node ask only for tokens bound to a pod bound to it.
func (p *NodeRestriction) token(ctx context.Context, node string, a admission.Attributes) error {
	tr, ok := a.GetObject().(*authenticationv1.TokenRequest)
	if !ok {
		return nil
	}
	ref := tr.Spec.BoundObjectRef
	switch {
	case ref == nil || ref.Kind != "Pod":
		return errors.New("node requested token not bound to a pod")
	case ref.UID == "":
		return errors.New("node requested token with a pod binding without a uid")
	}
	pod, err := p.lookups.Pod(ctx, a.GetNamespace(), ref.Name)
	switch {
	case err != nil:
		return err
	case pod.UID != ref.UID:
		return fmt.Errorf("the UID in the bound object reference (%s) does not match the UID in record. The object might have been deleted and then recreated", ref.UID)
	case pod.Spec.NodeName != node:
		return errors.New("node requested token bound to a pod scheduled on a different node")
	}
	return nil
}

// podCertificateRequest lets a node only create requests for a pod bound
// to it that projects a certificate of that signer, naming the pod, its
// service account and the node as they are (a UID that does not match is
// an error to retry: the object may be being recreated).
func (p *NodeRestriction) podCertificateRequest(ctx context.Context, node string, a admission.Attributes) error {
	if a.GetOperation() != admission.Create || a.GetSubresource() != "" {
		return fmt.Errorf("unexpected operation %s, node %q can only create PodCertificateRequests", a.GetOperation(), node)
	}
	r, ok := a.GetObject().(*certificatesv1.PodCertificateRequest)
	if !ok {
		return nil
	}
	spec := r.Spec
	if string(spec.NodeName) != node {
		return fmt.Errorf("PodCertificateRequest.Spec.NodeName=%q, which is not the requesting node %q", spec.NodeName, node)
	}
	n, err := p.lookups.Node(ctx, node)
	if err != nil || n.UID != spec.NodeUID {
		return fmt.Errorf("node %q with UID %q does not exist", node, spec.NodeUID)
	}
	pod, err := p.lookups.Pod(ctx, a.GetNamespace(), spec.PodName)
	switch {
	case err != nil || pod.UID != spec.PodUID:
		return fmt.Errorf("pod %s/%s with UID %q does not exist", a.GetNamespace(), spec.PodName, spec.PodUID)
	case pod.Spec.NodeName != node:
		return fmt.Errorf("pod %q is not bound to node %q", spec.PodName, node)
	case pod.Annotations[mirrorAnnotation] != "":
		return fmt.Errorf("pod %q is a mirror pod", spec.PodName)
	case pod.Spec.ServiceAccountName != spec.ServiceAccountName:
		return fmt.Errorf("PodCertificateRequest.Spec.ServiceAccountName=%q, but the pod runs as %q", spec.ServiceAccountName, pod.Spec.ServiceAccountName)
	}
	sa, err := p.lookups.ServiceAccount(ctx, a.GetNamespace(), spec.ServiceAccountName)
	if err != nil || sa.UID != spec.ServiceAccountUID {
		return fmt.Errorf("service account %s/%s with UID %q does not exist", a.GetNamespace(), spec.ServiceAccountName, spec.ServiceAccountUID)
	}
	if !projectsCertificate(pod, spec.SignerName) {
		return fmt.Errorf("pod %q does not mount a podCertificate projected volume for signer %q", spec.PodName, spec.SignerName)
	}
	return nil
}

// projectsCertificate says whether the pod has a podCertificate projection
// of the signer.
func projectsCertificate(pod *v1.Pod, signer string) bool {
	for src := range podrefs.Projections(pod) {
		if src.PodCertificate != nil && src.PodCertificate.SignerName == signer {
			return true
		}
	}
	return false
}

// nodeObject lets a node change only its own Node, never its taints, and
// set or change no label a kubelet may not.
func nodeObject(node string, a admission.Attributes) error {
	if a.GetName() != node {
		return fmt.Errorf("node %q is not allowed to modify node %q", node, a.GetName())
	}
	n, ok := a.GetObject().(*v1.Node)
	if !ok {
		return nil
	}
	switch a.GetOperation() {
	case admission.Create:
		if forbidden := forbiddenLabels(n.Labels, nil); len(forbidden) > 0 {
			return fmt.Errorf("node %q is not allowed to set the following labels: %s", node, strings.Join(forbidden, ", "))
		}
	case admission.Update:
		old, ok := a.GetOldObject().(*v1.Node)
		if !ok {
			return nil
		}
		if forbidden := forbiddenLabels(n.Labels, old.Labels); len(forbidden) > 0 {
			return fmt.Errorf("node %q is not allowed to modify labels: %s", node, strings.Join(forbidden, ", "))
		}
		if !equality.Semantic.DeepEqual(n.Spec.Taints, old.Spec.Taints) {
			return fmt.Errorf("node %q is not allowed to modify taints", node)
		}
	}
	return nil
}

// forbiddenLabels are the labels set, changed or removed between old and
// labels that a node may not touch: those of node-restriction.kubernetes.io,
// and those of kubernetes.io and k8s.io that are not the kubelet's own.
func forbiddenLabels(labels, old map[string]string) []string {
	keys := maps.Clone(labels)
	if keys == nil {
		keys = map[string]string{}
	}
	maps.Copy(keys, old)
	var out []string
	for _, key := range slices.Sorted(maps.Keys(keys)) {
		v, had := old[key]
		if w, has := labels[key]; had == has && v == w {
			continue
		}
		if !NodeMaySet(key) {
			out = append(out, key)
		}
	}
	return out
}

// NodeMaySet says whether a node may set the label key on itself.
func NodeMaySet(key string) bool {
	domain, _, ok := strings.Cut(key, "/")
	if !ok {
		return true
	}
	if inDomain(domain, restrictedLabelDomain) {
		return false
	}
	if inDomain(domain, "kubernetes.io") || inDomain(domain, "k8s.io") {
		return kubeletapis.IsKubeletLabel(key)
	}
	return true
}

func inDomain(domain, parent string) bool {
	return domain == parent || strings.HasSuffix(domain, "."+parent)
}
