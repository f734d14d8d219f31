package nodelifecycle

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	"github.com/skiff-lab/skiff/controlplane/component"
)

// TestFullClusterCIDR cuts a /28 into /30s (4 subnets) for 10 nodes: four
// get one; the other six get a CIDRNotAvailable event and
// NetworkUnavailable=True (which taints them network-unavailable), fail
// with one and the same error (logged once per back-off step, not per
// node), are not requeued by their own updates while they back off, and a
// deleted node's subnet goes to the node that has waited longest, whose
// condition is then cleared.
func TestFullClusterCIDR(t *testing.T) {
	var nodes []*corev1.Node
	for i := range 10 {
		nodes = append(nodes, readyNode(fmt.Sprintf("n%d", i)))
	}
	f := newFixtureWith(t, Config{ClusterCIDR: "10.0.0.0/28", NodeCIDRMaskSize: 30, MonitorGracePeriod: grace}, toObjects(nodes)...)
	errs := map[string]bool{}
	for _, n := range nodes {
		if err := f.syncPodCIDR(n.Name); err != nil {
			errs[err.Error()] = true
		}
	}
	var got []string
	for _, n := range nodes {
		got = append(got, f.stored(n.Name).Spec.PodCIDR)
	}
	want := []string{"10.0.0.0/30", "10.0.0.4/30", "10.0.0.8/30", "10.0.0.12/30", "", "", "", "", "", ""}
	if !slices.Equal(got, want) {
		t.Fatalf("podCIDRs %v, want %v", got, want)
	}
	if len(errs) != 1 {
		t.Errorf("the six nodes failed with %d different errors, want one: %v", len(errs), errs)
	}
	for err := range errs {
		if !strings.Contains(err, "no pod CIDRs left") || !strings.Contains(err, "4 subnets of /30 in 10.0.0.0/28") {
			t.Errorf("error %q does not say the cluster CIDR is full and how big it is", err)
		}
	}
	if events := f.events(); countPrefix(events, "Normal CIDRNotAvailable Node n") != 6 {
		t.Errorf("events %v, want 6 CIDRNotAvailable", events)
	}
	full := f.stored("n4")
	cond := full.Status.Conditions[conditionIndex(full.Status.Conditions, corev1.NodeNetworkUnavailable)]
	if cond.Status != corev1.ConditionTrue || cond.Reason != reasonCIDRNotAvailable || !strings.Contains(cond.Message, "10.0.0.0/28") {
		t.Errorf("n4 condition %+v", cond)
	}
	f.syncNode("n4")
	if !hasTaint(f.stored("n4"), corev1.TaintNodeNetworkUnavailable) || hasTaint(f.stored("n0"), corev1.TaintNodeNetworkUnavailable) {
		t.Errorf("taints n4 %v, n0 %v; want network-unavailable on n4 only", f.stored("n4").Spec.Taints, f.stored("n0").Spec.Taints)
	}

	// Backing off: an update of a waiting node does not queue it again.
	f.c.cidrQueue.AddRateLimited("n4")
	f.c.nodeUpdated(full, full)
	if f.c.cidrQueue.Len() != 0 {
		t.Errorf("a backing-off node was queued again by its update")
	}

	// n1 goes: its subnet is offered to n4, which waited longest.
	f.c.nodeDeleted(f.stored("n1"))
	if err := f.client.CoreV1().Nodes().Delete(t.Context(), "n1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if next, _ := f.c.cidrQueue.Get(); next != "n4" {
		t.Fatalf("woken %q, want n4", next)
	}
	if err := f.syncPodCIDR("n4"); err != nil {
		t.Fatal(err)
	}
	n4 := f.stored("n4")
	cond = n4.Status.Conditions[conditionIndex(n4.Status.Conditions, corev1.NodeNetworkUnavailable)]
	if n4.Spec.PodCIDR != "10.0.0.4/30" || cond.Status != corev1.ConditionFalse || cond.Reason != reasonCIDRAssigned {
		t.Errorf("n4 after n1 left: podCIDR %q, condition %+v", n4.Spec.PodCIDR, cond)
	}
	f.syncNode("n4")
	if hasTaint(f.stored("n4"), corev1.TaintNodeNetworkUnavailable) {
		t.Errorf("n4 still tainted network-unavailable")
	}
	if n0 := f.stored("n0"); conditionIndex(n0.Status.Conditions, corev1.NodeNetworkUnavailable) >= 0 {
		t.Errorf("n0, which never lacked a subnet, got a NetworkUnavailable condition")
	}
}

func toObjects(nodes []*corev1.Node) []runtime.Object {
	out := make([]runtime.Object, len(nodes))
	for i, n := range nodes {
		out[i] = n
	}
	return out
}

func countPrefix(lines []string, prefix string) int {
	n := 0
	for _, l := range lines {
		if strings.HasPrefix(l, prefix) {
			n++
		}
	}
	return n
}

func hasTaint(node *corev1.Node, key string) bool {
	return slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == key })
}

// TestFullClusterCIDRBacksOff runs the pod CIDR loop for 3.5 s over 10
// nodes and a cluster CIDR of 4 subnets: each of the six nodes left
// without one is tried again after 1 s and then 2 s, not in a hot loop,
// and their one failure is logged once per back-off step, not once per
// node and try.
func TestFullClusterCIDRBacksOff(t *testing.T) {
	var nodes []*corev1.Node
	for i := range 10 {
		nodes = append(nodes, readyNode(fmt.Sprintf("n%d", i)))
	}
	f := newFixtureWith(t, Config{ClusterCIDR: "10.0.0.0/28", NodeCIDRMaskSize: 30, MonitorGracePeriod: grace}, toObjects(nodes)...)
	var log lockedBuffer
	defer slog.SetDefault(slog.Default())
	slog.SetDefault(slog.New(slog.NewTextHandler(&log, nil)))
	ctx, cancel := context.WithTimeout(context.Background(), 3500*time.Millisecond)
	defer cancel()
	for _, n := range nodes {
		f.c.cidrQueue.Add(n.Name)
	}
	component.RunWorkers(ctx, "nodeipam", f.c.cidrQueue, cidrWorkers, f.c.syncPodCIDR)

	// The informer does not run here, so every try of a waiting node
	// writes its NetworkUnavailable condition again: the writes count the
	// tries.
	tries := map[string]int{}
	for _, a := range f.client.Actions() {
		if u, ok := a.(clienttesting.UpdateAction); ok && a.GetSubresource() == "status" {
			tries[u.GetObject().(*corev1.Node).Name]++
		}
	}
	for _, n := range nodes[4:] {
		if got := tries[n.Name]; got < 2 || got > 4 {
			t.Errorf("%s tried %d times in 3.5 s; want 2 to 4 (1 s, then 2 s back-off)", n.Name, got)
		}
	}
	if lines := strings.Count(log.String(), "sync failed"); lines < 1 || lines > 4 {
		t.Errorf("the full cluster CIDR was logged %d times; want once per back-off step (at most 4):\n%s", lines, log.String())
	}
}

// lockedBuffer is a bytes.Buffer that several goroutines may write.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestConfigCheck: the flags a server refuses to start with, and the
// defaults.
func TestConfigCheck(t *testing.T) {
	tests := []struct {
		cluster string
		mask    int
		want    string // in the error; "" for none
	}{
		{"10.244.0.0/16", 0, ""},
		{"fd00:10:244::/56", 0, ""},
		{"10.0.0.0/28", 30, ""},
		{"10.244.0.0/16", 8, "does not fit in cluster CIDR 10.244.0.0/16"},
		{"10.244.0.0/16", 33, "does not fit"},
		{"10.244.0.0", 24, "cluster CIDR"},
	}
	for _, tt := range tests {
		err := Config{ClusterCIDR: tt.cluster, NodeCIDRMaskSize: tt.mask}.Check()
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s /%d: %v", tt.cluster, tt.mask, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s /%d: error %v, want one saying %q", tt.cluster, tt.mask, err, tt.want)
		}
	}
}
