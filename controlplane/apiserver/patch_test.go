package apiserver

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/skiff-lab/skiff/controlplane/apiserver/apitest"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
)

// patchBase is the pod the patch cases start from, as JSON.
func patchBase(t *testing.T) []byte {
	t.Helper()
	pod := apitest.NewPod(nil)
	pod.Labels = map[string]string{"app": "web", "tier": "front"}
	pod.Spec.Containers = []corev1.Container{{Name: "web", Image: "nginx:1.25"}, {Name: "log", Image: "fluentbit:2"}}
	data, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestApplyPatch(t *testing.T) {
	tests := []struct {
		name   string
		pt     types.PatchType
		patch  string
		check  func(*corev1.Pod) bool
		badReq bool
	}{
		{"strategic merge merges containers by name", types.StrategicMergePatchType,
			`{"spec":{"containers":[{"name":"web","image":"nginx:1.26"}]}}`,
			func(p *corev1.Pod) bool {
				return len(p.Spec.Containers) == 2 && p.Spec.Containers[0].Image == "nginx:1.26" && p.Spec.Containers[1].Image == "fluentbit:2"
			}, false},
		{"strategic merge $patch delete", types.StrategicMergePatchType,
			`{"spec":{"containers":[{"name":"log","$patch":"delete"}]}}`,
			func(p *corev1.Pod) bool { return len(p.Spec.Containers) == 1 && p.Spec.Containers[0].Name == "web" }, false},
		{"merge patch replaces lists", types.MergePatchType,
			`{"spec":{"containers":[{"name":"web","image":"nginx:1.26"}]}}`,
			func(p *corev1.Pod) bool {
				return len(p.Spec.Containers) == 1 && p.Spec.Containers[0].Image == "nginx:1.26"
			}, false},
		{"merge patch null deletes a label", types.MergePatchType, `{"metadata":{"labels":{"tier":null}}}`,
			func(p *corev1.Pod) bool { return reflect.DeepEqual(p.Labels, map[string]string{"app": "web"}) }, false},
		{"json patch replace", types.JSONPatchType, `[{"op":"replace","path":"/spec/containers/1/image","value":"fluentbit:3"}]`,
			func(p *corev1.Pod) bool {
				return p.Spec.Containers[1].Image == "fluentbit:3" && p.Spec.Containers[0].Image == "nginx:1.25"
			}, false},
		{"json patch add label", types.JSONPatchType, `[{"op":"add","path":"/metadata/labels/env","value":"prod"}]`,
			func(p *corev1.Pod) bool { return p.Labels["env"] == "prod" && len(p.Labels) == 3 }, false},
		{"json patch test fails", types.JSONPatchType, `[{"op":"test","path":"/metadata/name","value":"other"}]`, nil, true},
		// FuzzPatch found the first two panicking in json-patch; RFC 6902
		// gives add, replace and test a value.
		{"json patch test of the whole document without a value", types.JSONPatchType, `[{"op":"test","path":""}]`, nil, true},
		{"json patch replace of the whole document without a value", types.JSONPatchType, `[{"op":"replace","path":""}]`, nil, true},
		{"json patch add without a value", types.JSONPatchType, `[{"op":"add","path":"/metadata/labels/x"}]`, nil, true},
		{"json patch on a missing path", types.JSONPatchType, `[{"op":"replace","path":"/spec/nothing/here","value":1}]`, nil, true},
		{"json patch not a list", types.JSONPatchType, `{"op":"replace"}`, nil, true},
		{"merge patch not JSON", types.MergePatchType, `{"metadata":`, nil, true},
		{"strategic merge not JSON", types.StrategicMergePatchType, `nope`, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := applyPatch(tt.pt, patchBase(t), []byte(tt.patch), &corev1.Pod{})
			if apitest.BadRequestCase(t, err, tt.badReq) {
				return
			}
			var pod corev1.Pod
			if err := json.Unmarshal(out, &pod); err != nil {
				t.Fatalf("patched document: %v", err)
			}
			if !tt.check(&pod) {
				t.Errorf("patched pod: %s", out)
			}
		})
	}
}

func TestApplyJSONPatchOperationLimit(t *testing.T) {
	ops := strings.Repeat(`{"op":"test","path":"/kind","value":""},`, maxJSONPatchOps+1)
	_, err := applyPatch(types.JSONPatchType, patchBase(t), []byte("["+strings.TrimSuffix(ops, ",")+"]"), &corev1.Pod{})
	if !apierrors.IsRequestEntityTooLargeError(err) {
		t.Errorf("err = %v, want RequestEntityTooLarge", err)
	}
}

// TestApplyJSONPatchCopyLimit: copy operations that double the document
// each time are refused once they copied more than the largest request
// body (FuzzPatch found them; 16 make 8 MB, 40 would make terabytes).
func TestApplyJSONPatchCopyLimit(t *testing.T) {
	ops := make([]string, 16)
	for i := range ops {
		ops[i] = fmt.Sprintf(`{"op":"copy","from":"/spec","path":"/spec/x%d"}`, i)
	}
	_, err := applyPatch(types.JSONPatchType, patchBase(t), []byte("["+strings.Join(ops, ",")+"]"), &corev1.Pod{})
	if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "copy") {
		t.Errorf("err = %v, want BadRequest naming the copy limit", err)
	}
}
