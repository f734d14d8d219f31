package admit

import (
	"context"
	"strings"
	"testing"

	"github.com/skiff-lab/skiff/localpath"
	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
)

var nodeA = &user.DefaultInfo{Name: "system:node:a", Groups: []string{user.NodesGroup}}

func attrs(op admission.Operation, gr schema.GroupResource, sub, ns, name string, obj, old runtime.Object, u user.Info) admission.Attributes {
	return admission.NewAttributesRecord(obj, old, schema.GroupVersionKind{}, ns, name,
		gr.WithVersion("v1"), sub, op, nil, false, u)
}

func node(name string, labels map[string]string, taints ...v1.Taint) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: v1.NodeSpec{Taints: taints}}
}

func boundPod(nodeName string, annotations map[string]string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Annotations: annotations},
		Spec: v1.PodSpec{NodeName: nodeName}}
}

func tokenFor(kind, name string, uid types.UID) *authenticationv1.TokenRequest {
	return &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: kind, Name: name, UID: uid}}}
}

// fakeLookups serves pods and service accounts from maps by
// "<namespace>/<name>".
type fakeLookups struct {
	pods     map[string]*v1.Pod
	accounts map[string]*v1.ServiceAccount
	nodes    map[string]*v1.Node
}

func (f fakeLookups) Node(_ context.Context, name string) (*v1.Node, error) {
	if n, ok := f.nodes[name]; ok {
		return n, nil
	}
	return nil, apierrors.NewNotFound(v1.Resource("nodes"), name)
}

func (f fakeLookups) Pod(_ context.Context, ns, name string) (*v1.Pod, error) {
	if p, ok := f.pods[ns+"/"+name]; ok {
		return p, nil
	}
	return nil, apierrors.NewNotFound(v1.Resource("pods"), name)
}

func (f fakeLookups) ServiceAccount(_ context.Context, ns, name string) (*v1.ServiceAccount, error) {
	if sa, ok := f.accounts[ns+"/"+name]; ok {
		return sa, nil
	}
	return nil, apierrors.NewNotFound(v1.Resource("serviceaccounts"), name)
}

// localVolumeOn is a volume of provisioner with node affinity to node.
func localVolumeOn(node, provisioner string) *v1.PersistentVolume {
	return &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pvc-1", Annotations: map[string]string{localpath.AnnProvisionedBy: provisioner}},
		Spec: v1.PersistentVolumeSpec{NodeAffinity: &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
			MatchExpressions: []v1.NodeSelectorRequirement{{Key: v1.LabelHostname, Operator: v1.NodeSelectorOpIn, Values: []string{node}}}}}}}}}
}

func withCapacity(pv *v1.PersistentVolume, size string) *v1.PersistentVolume {
	pv.Spec.Capacity = v1.ResourceList{v1.ResourceStorage: resource.MustParse(size)}
	return pv
}

func withPath(pv *v1.PersistentVolume, path string) *v1.PersistentVolume {
	pv.Spec.HostPath = &v1.HostPathVolumeSource{Path: path}
	return pv
}

func TestNodeRestriction(t *testing.T) {
	onA, onB := boundPod("a", nil), boundPod("b", nil)
	onA.UID, onB.UID, onB.Name = "uid-a", "uid-b", "q"
	lookups := fakeLookups{pods: map[string]*v1.Pod{"ns/p": onA, "ns/q": onB}}
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: v1.NamespaceNodeLease}}
	mirror := map[string]string{mirrorAnnotation: "x"}
	restricted := map[string]string{"node-restriction.kubernetes.io/fast": "yes"}
	for _, tt := range []struct {
		what  string
		attrs admission.Attributes
		want  string // "" admits
	}{
		{"register itself", attrs(admission.Create, nodesResource, "", "", "a", node("a", map[string]string{v1.LabelHostname: "a", "example.com/x": "1"}), nil, nodeA), ""},
		{"register another", attrs(admission.Create, nodesResource, "", "", "b", node("b", nil), nil, nodeA), `node "a" is not allowed to modify node "b"`},
		{"register with a restricted label", attrs(admission.Create, nodesResource, "", "", "a", node("a", restricted), nil, nodeA),
			`node "a" is not allowed to set the following labels: node-restriction.kubernetes.io/fast`},
		{"register with a role label", attrs(admission.Create, nodesResource, "", "", "a", node("a", map[string]string{"node-role.kubernetes.io/control-plane": ""}), nil, nodeA),
			`is not allowed to set the following labels: node-role.kubernetes.io/control-plane`},
		{"remove a restricted label", attrs(admission.Update, nodesResource, "", "", "a", node("a", nil), node("a", restricted), nodeA),
			`node "a" is not allowed to modify labels: node-restriction.kubernetes.io/fast`},
		{"keep a restricted label", attrs(admission.Update, nodesResource, "status", "", "a", node("a", restricted), node("a", restricted), nodeA), ""},
		{"change its taints", attrs(admission.Update, nodesResource, "", "", "a", node("a", nil, v1.Taint{Key: "k", Effect: v1.TaintEffectNoSchedule}), node("a", nil), nodeA),
			`node "a" is not allowed to modify taints`},
		{"create a pod", attrs(admission.Create, podsResource, "", "ns", "p", boundPod("a", nil), nil, nodeA),
			`pod does not have "kubernetes.io/config.mirror" annotation, node "a" can only create mirror pods`},
		{"create a mirror pod", attrs(admission.Create, podsResource, "", "ns", "p", boundPod("a", mirror), nil, nodeA), ""},
		{"create another node's mirror pod", attrs(admission.Create, podsResource, "", "ns", "p", boundPod("b", mirror), nil, nodeA),
			`node "a" can only create pods with spec.nodeName set to itself`},
		{"its pod's status", attrs(admission.Update, podsResource, "status", "ns", "p", boundPod("a", nil), boundPod("a", nil), nodeA), ""},
		{"another's pod's status", attrs(admission.Update, podsResource, "status", "ns", "p", boundPod("b", nil), boundPod("b", nil), nodeA),
			`node "a" can only update pod status for pods with spec.nodeName set to itself`},
		{"a pod's spec", attrs(admission.Update, podsResource, "", "ns", "p", boundPod("a", nil), boundPod("a", nil), nodeA), `node "a" can only update pod status`},
		{"delete its pod", attrs(admission.Delete, podsResource, "", "ns", "p", nil, boundPod("a", nil), nodeA), ""},
		{"delete another's pod", attrs(admission.Delete, podsResource, "", "ns", "p", nil, boundPod("b", nil), nodeA),
			`node "a" can only delete pods with spec.nodeName set to itself`},
		{"another's lease", attrs(admission.Create, leasesResource, "", v1.NamespaceNodeLease, "b", lease, nil, nodeA),
			"can only access node lease with the same name as the requesting node"},
		{"a token for its pod", attrs(admission.Create, saResource, "token", "ns", "default", tokenFor("Pod", "p", "uid-a"), nil, nodeA), ""},
		{"a token for another's pod", attrs(admission.Create, saResource, "token", "ns", "default", tokenFor("Pod", "q", "uid-b"), nil, nodeA),
			"node requested token bound to a pod scheduled on a different node"},
		{"a token for a recreated pod", attrs(admission.Create, saResource, "token", "ns", "default", tokenFor("Pod", "p", "old"), nil, nodeA),
			"the UID in the bound object reference (old) does not match the UID in record"},
		{"an unbound token", attrs(admission.Create, saResource, "token", "ns", "default", &authenticationv1.TokenRequest{}, nil, nodeA),
			"node requested token not bound to a pod"},
		{"a token bound to a secret", attrs(admission.Create, saResource, "token", "ns", "default", tokenFor("Secret", "s", "uid-s"), nil, nodeA),
			"node requested token not bound to a pod"},
		{"create its local volume", attrs(admission.Create, pvResource, "", "", "pvc-1", localVolumeOn("a", localpath.Provisioner), nil, nodeA), ""},
		{"delete its local volume", attrs(admission.Delete, pvResource, "", "", "pvc-1", nil, localVolumeOn("a", localpath.Provisioner), nodeA), ""},
		{"create another's local volume", attrs(admission.Create, pvResource, "", "", "pvc-1", localVolumeOn("b", localpath.Provisioner), nil, nodeA),
			`node "a" can only create local-path persistent volumes with node affinity to itself`},
		{"delete another provisioner's volume", attrs(admission.Delete, pvResource, "", "", "pvc-1", nil, localVolumeOn("a", "example.com/nfs"), nodeA),
			`node "a" can only delete local-path persistent volumes`},
		{"grow its local volume", attrs(admission.Update, pvResource, "", "", "pvc-1", withCapacity(localVolumeOn("a", localpath.Provisioner), "2Gi"),
			localVolumeOn("a", localpath.Provisioner), nodeA), ""},
		{"move its local volume", attrs(admission.Update, pvResource, "", "", "pvc-1", withPath(localVolumeOn("a", localpath.Provisioner), "/etc"),
			localVolumeOn("a", localpath.Provisioner), nodeA), `node "a" can only change the capacity of its local-path persistent volumes`},
		{"anyone else", attrs(admission.Delete, podsResource, "", "ns", "p", nil, boundPod("b", nil), &user.DefaultInfo{Name: "bob"}), ""},
	} {
		err := NewNodeRestriction(lookups).Validate(t.Context(), tt.attrs, nil)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: %v, want admitted", tt.what, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: %v, want %q", tt.what, err, tt.want)
		}
	}
}

func TestNodeRestrictionPodCertificateRequests(t *testing.T) {
	projecting := boundPod("a", nil)
	projecting.UID, projecting.Spec.ServiceAccountName = "uid-p", "default"
	projecting.Spec.Volumes = []v1.Volume{{Name: "c", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{
		Sources: []v1.VolumeProjection{{PodCertificate: &v1.PodCertificateProjection{SignerName: "example.com/s", KeyType: "ED25519", CredentialBundlePath: "c"}}}}}}}
	onB := projecting.DeepCopy()
	onB.Name, onB.UID, onB.Spec.NodeName = "q", "uid-q", "b"
	a := node("a", nil)
	a.UID = "uid-a"
	lookups := fakeLookups{pods: map[string]*v1.Pod{"ns/p": projecting, "ns/q": onB}, nodes: map[string]*v1.Node{"a": a},
		accounts: map[string]*v1.ServiceAccount{"ns/default": {ObjectMeta: metav1.ObjectMeta{Name: "default", UID: "uid-sa"}}}}
	request := func(edit func(*certificatesv1.PodCertificateRequestSpec)) *certificatesv1.PodCertificateRequest {
		r := &certificatesv1.PodCertificateRequest{Spec: certificatesv1.PodCertificateRequestSpec{SignerName: "example.com/s",
			PodName: "p", PodUID: "uid-p", ServiceAccountName: "default", ServiceAccountUID: "uid-sa", NodeName: "a", NodeUID: "uid-a"}}
		if edit != nil {
			edit(&r.Spec)
		}
		return r
	}
	for _, tt := range []struct {
		what string
		req  *certificatesv1.PodCertificateRequest
		want string // "" admits
	}{
		{"for its pod", request(nil), ""},
		{"naming another node", request(func(s *certificatesv1.PodCertificateRequestSpec) { s.NodeName = "b" }), `which is not the requesting node "a"`},
		{"with a stale node UID", request(func(s *certificatesv1.PodCertificateRequestSpec) { s.NodeUID = "old" }), `node "a" with UID "old" does not exist`},
		{"for a recreated pod", request(func(s *certificatesv1.PodCertificateRequestSpec) { s.PodUID = "old" }), `pod ns/p with UID "old" does not exist`},
		{"for another node's pod", request(func(s *certificatesv1.PodCertificateRequestSpec) { s.PodName, s.PodUID = "q", "uid-q" }), `pod "q" is not bound to node "a"`},
		{"for another account", request(func(s *certificatesv1.PodCertificateRequestSpec) { s.ServiceAccountName = "admin" }), `but the pod runs as "default"`},
		{"with a stale account UID", request(func(s *certificatesv1.PodCertificateRequestSpec) { s.ServiceAccountUID = "old" }), `service account ns/default with UID "old" does not exist`},
		{"of a signer the pod does not project", request(func(s *certificatesv1.PodCertificateRequestSpec) { s.SignerName = "example.com/other" }),
			`pod "p" does not mount a podCertificate projected volume for signer "example.com/other"`},
	} {
		err := NewNodeRestriction(lookups).Validate(t.Context(), attrs(admission.Create, pcrResource, "", "ns", "", tt.req, nil, nodeA), nil)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: %v, want admitted", tt.what, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: %v, want %q", tt.what, err, tt.want)
		}
	}
	status := attrs(admission.Update, pcrResource, "status", "ns", "r", request(nil), request(nil), nodeA)
	if err := NewNodeRestriction(lookups).Validate(t.Context(), status, nil); err == nil {
		t.Error("a node wrote a request's status")
	}
}
