package admit

import (
	"context"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
