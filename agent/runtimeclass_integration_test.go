package agent

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestRuntimeClassHandler: a pod of a RuntimeClass whose handler the node
// runs (runc) starts; one whose handler it does not have gets no sandbox
// and a FailedCreatePodSandBox event naming the handler.
func TestRuntimeClassHandler(t *testing.T) {
	n := startTestNode(t)
	for name, handler := range map[string]string{"plain": "runc", "sandboxed": "runsc"} {
		rc := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Handler: handler}
		if _, err := n.client.NodeV1().RuntimeClasses().Create(context.Background(), rc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = n.client.NodeV1().RuntimeClasses().Delete(context.Background(), name, metav1.DeleteOptions{})
		})
	}
	pod := func(name, class string) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.PodSpec{RuntimeClassName: ptr.To(class),
			Containers: []v1.Container{busybox("c", "sleep", "3600")}}}
	}
	n.createPod(pod("plain", "plain"))
	refused := n.createPod(pod("sandboxed", "sandboxed"))
	n.waitPod("default", "plain", "running", 60*time.Second, running)
	n.waitEventMatching(refused, "FailedCreatePodSandBox", func(m string) bool { return strings.Contains(m, `no runtime for "runsc" is configured`) })
	p := n.waitPod("default", "sandboxed", "pending", 5*time.Second, func(p *v1.Pod) bool { return p.Status.Phase == v1.PodPending })
	if p.Status.PodIP != "" {
		t.Errorf("the refused pod got an IP %s", p.Status.PodIP)
	}
}
