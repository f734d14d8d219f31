package podgc

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/skiff-lab/skiff/controlplane/component"
)

// TestPass runs passes on a fake clientset whose objects the informer
// caches are filled with by hand, stepping a fake clock.
func TestPass(t *testing.T) {
	alive := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "alive"}}
	lagging := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "lagging"}} // on the server, not yet in the cache
	pods := []*corev1.Pod{
		pod("on-alive", on("alive")), pod("on-gone", on("gone")), pod("done-on-gone", on("gone"), phase(corev1.PodSucceeded)),
		pod("on-lagging", on("lagging")), pod("done-old", phase(corev1.PodSucceeded), age(time.Hour)),
		pod("done-new", phase(corev1.PodFailed)),
	}
	objs := []runtime.Object{alive, lagging}
	for _, p := range pods {
		objs = append(objs, p)
	}
	client := fake.NewClientset(objs...)
	factory := informers.NewSharedInformerFactory(client, 0)
	clk := clocktesting.NewFakeClock(t0)
	cc := component.Context{Client: client, Informers: factory, Recorder: func(string) record.EventRecorder { return record.NewFakeRecorder(10) }}
	c, err := newController(cc, Config{TerminatedPodThreshold: 2, Quarantine: 40 * time.Second}, clk)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.queue.ShutDown)
	if err := factory.Core().V1().Nodes().Informer().GetIndexer().Add(alive); err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		if err := factory.Core().V1().Pods().Informer().GetIndexer().Add(p); err != nil {
			t.Fatal(err)
		}
	}
	deleted := func() []string {
		var out []string
		for _, a := range client.Actions() {
			if d, ok := a.(clienttesting.DeleteAction); ok && d.GetResource().Resource == "pods" {
				out = append(out, d.GetName())
			}
		}
		slices.Sort(out)
		return slices.Compact(out) // the hand-filled cache keeps deleted pods
	}

	if err := c.pass(context.Background(), passKey); err != nil {
		t.Fatal(err)
	}
	// Three terminated pods, threshold 2: the oldest goes; the missing
	// nodes are in quarantine.
	if got := deleted(); !slices.Equal(got, []string{"done-old"}) {
		t.Errorf("first pass deleted %v", got)
	}
	clk.Step(40 * time.Second)
	if err := c.pass(context.Background(), passKey); err != nil {
		t.Fatal(err)
	}
	// "gone" is not on the server: its pods go; "lagging" is, so its pod stays.
	if got := deleted(); !slices.Equal(got, []string{"done-old", "done-on-gone", "on-gone"}) {
		t.Errorf("second pass deleted %v", got)
	}
	p, err := client.CoreV1().Pods("ns").Get(context.Background(), "on-gone", metav1.GetOptions{})
	if err == nil {
		t.Errorf("on-gone still there: %+v", p.Status)
	}
	var patched []string
	for _, a := range client.Actions() {
		if pa, ok := a.(clienttesting.PatchAction); ok && pa.GetSubresource() == "status" {
			patched = append(patched, pa.GetName()+": "+string(pa.GetPatch()))
		}
	}
	if len(patched) != 1 || !strings.Contains(patched[0], `"phase":"Failed"`) || !strings.Contains(patched[0], `"reason":"DeletionByPodGC"`) {
		t.Errorf("status patches %v, want one marking on-gone Failed by DeletionByPodGC", patched)
	}
	for _, a := range client.Actions() {
		if d, ok := a.(clienttesting.DeleteAction); ok {
			if g := d.GetDeleteOptions().GracePeriodSeconds; g == nil || *g != 0 {
				t.Errorf("delete of %s with grace %v, want 0", d.GetName(), g)
			}
		}
	}
}
