package nodelifecycle

import (
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

var t0 = time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)

const (
	grace   = 40 * time.Second
	startup = 60 * time.Second
)

func testNode(conds ...corev1.NodeCondition) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", CreationTimestamp: metav1.NewTime(t0)},
		Status:     corev1.NodeStatus{Conditions: conds},
	}
}

func readyAt(status corev1.ConditionStatus, heartbeat time.Time) corev1.NodeCondition {
	return corev1.NodeCondition{Type: corev1.NodeReady, Status: status, LastHeartbeatTime: metav1.NewTime(heartbeat)}
}

func leaseAt(renew time.Time) *coordinationv1.Lease {
	return &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{RenewTime: &metav1.MicroTime{Time: renew}}}
}

// TestHealthScript drives observe and deadline through a node's life with a
// fake clock: each step advances the clock, shows the controller the node
// and its lease, and checks whether the node counts as silent.
func TestHealthScript(t *testing.T) {
	type step struct {
		advance time.Duration
		node    *corev1.Node
		lease   *coordinationv1.Lease
		silent  bool
	}
	ready := testNode(readyAt(corev1.ConditionTrue, t0))
	cases := []struct {
		name  string
		steps []step
	}{
		{"lease renewals keep a node alive; silence past the grace period does not", []step{
			{advance: 0, node: ready, lease: leaseAt(t0)},
			{advance: 30 * time.Second, node: ready, lease: leaseAt(t0.Add(30 * time.Second))},
			{advance: 39 * time.Second, node: ready, lease: leaseAt(t0.Add(30 * time.Second))},
			{advance: 1 * time.Second, node: ready, lease: leaseAt(t0.Add(30 * time.Second)), silent: true},
			{advance: 5 * time.Second, node: ready, lease: leaseAt(t0.Add(75 * time.Second))},
		}},
		{"a stale lease seen for the first time counts from the controller's start", []step{
			{advance: time.Hour, node: ready, lease: leaseAt(t0)},
			{advance: 39 * time.Second, node: ready, lease: leaseAt(t0)},
			{advance: time.Second, node: ready, lease: leaseAt(t0), silent: true},
		}},
		{"Ready heartbeats count without a lease", []step{
			{advance: 0, node: ready},
			{advance: 35 * time.Second, node: testNode(readyAt(corev1.ConditionTrue, t0.Add(35*time.Second)))},
			{advance: 39 * time.Second, node: testNode(readyAt(corev1.ConditionTrue, t0.Add(35*time.Second)))},
			{advance: time.Second, node: testNode(readyAt(corev1.ConditionTrue, t0.Add(35*time.Second))), silent: true},
		}},
		{"the node's own clock does not matter, only that the heartbeat changed", []step{
			{advance: 0, node: ready, lease: leaseAt(t0.Add(-time.Hour))},
			{advance: 30 * time.Second, node: ready, lease: leaseAt(t0.Add(-time.Hour + time.Second))},
			{advance: 39 * time.Second, node: ready, lease: leaseAt(t0.Add(-time.Hour + time.Second))},
		}},
		{"a node that never posted status is judged from its creation, with the startup grace", []step{
			{advance: 59 * time.Second, node: testNode()},
			{advance: time.Second, node: testNode(), silent: true},
		}},
		{"a new node without status counts as silent at once when created long ago", []step{
			{advance: time.Hour, node: testNode(), silent: true},
		}},
		{"a lease revives a node that never posted status", []step{
			{advance: 59 * time.Second, node: testNode()},
			{advance: time.Second, node: testNode(), lease: leaseAt(t0.Add(60 * time.Second))},
			{advance: 30 * time.Second, node: testNode()},
		}},
		{"the controller's own Unknown leaves the heartbeat alone", []step{
			{advance: 0, node: ready},
			{advance: 40 * time.Second, node: ready, silent: true},
			{advance: time.Second, node: testNode(corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionUnknown,
				LastHeartbeatTime: metav1.NewTime(t0), LastTransitionTime: metav1.NewTime(t0.Add(40 * time.Second))}), silent: true},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(t0)
			var p *probe
			for i, s := range tc.steps {
				clk.Step(s.advance)
				next := observe(p, s.node, s.lease, clk.Now())
				p = &next
				silent := !clk.Now().Before(p.deadline(grace, startup))
				if silent != s.silent {
					t.Errorf("step %d at +%s: silent %v, want %v (last heard +%s)", i, clk.Now().Sub(t0), silent, s.silent, p.at.Sub(t0))
				}
			}
		})
	}
}

func TestMarkUnknown(t *testing.T) {
	now := t0.Add(time.Minute)
	created := metav1.NewTime(t0)
	hb := metav1.NewTime(t0.Add(10 * time.Second))
	cases := []struct {
		name        string
		in          []corev1.NodeCondition
		wantChanged bool
		check       func(t *testing.T, out []corev1.NodeCondition)
	}{
		{name: "Ready and pressures go Unknown with the upstream reason and message",
			in: []corev1.NodeCondition{
				{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: hb},
				{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, LastHeartbeatTime: hb},
				{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse, LastHeartbeatTime: hb},
				{Type: corev1.NodePIDPressure, Status: corev1.ConditionFalse, LastHeartbeatTime: hb},
				{Type: corev1.NodeNetworkUnavailable, Status: corev1.ConditionFalse, LastHeartbeatTime: hb},
			},
			wantChanged: true,
			check: func(t *testing.T, out []corev1.NodeCondition) {
				for _, c := range out {
					if c.Type == corev1.NodeNetworkUnavailable {
						if c.Status != corev1.ConditionFalse {
							t.Errorf("NetworkUnavailable changed: %+v", c)
						}
						continue
					}
					if c.Status != corev1.ConditionUnknown || c.Reason != "NodeStatusUnknown" ||
						c.Message != "Kubelet stopped posting node status." || !c.LastTransitionTime.Time.Equal(now) || !c.LastHeartbeatTime.Equal(&hb) {
						t.Errorf("condition %+v", c)
					}
				}
			}},
		{name: "missing conditions are added as never updated",
			in:          nil,
			wantChanged: true,
			check: func(t *testing.T, out []corev1.NodeCondition) {
				if len(out) != 4 {
					t.Fatalf("%d conditions", len(out))
				}
				for _, c := range out {
					if c.Status != corev1.ConditionUnknown || c.Reason != "NodeStatusNeverUpdated" ||
						c.Message != "Kubelet never posted node status." || !c.LastHeartbeatTime.Equal(&created) {
						t.Errorf("condition %+v", c)
					}
				}
			}},
		{name: "already Unknown: nothing changes, transition times kept",
			in: []corev1.NodeCondition{
				{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, LastTransitionTime: hb},
				{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionUnknown, LastTransitionTime: hb},
				{Type: corev1.NodeDiskPressure, Status: corev1.ConditionUnknown, LastTransitionTime: hb},
				{Type: corev1.NodePIDPressure, Status: corev1.ConditionUnknown, LastTransitionTime: hb},
			},
			check: func(t *testing.T, out []corev1.NodeCondition) {
				for _, c := range out {
					if !c.LastTransitionTime.Equal(&hb) {
						t.Errorf("transition time moved: %+v", c)
					}
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			orig := append([]corev1.NodeCondition(nil), tc.in...)
			out, changed := markUnknown(tc.in, created, now)
			if changed != tc.wantChanged {
				t.Errorf("changed %v, want %v", changed, tc.wantChanged)
			}
			for i := range orig {
				if orig[i] != tc.in[i] {
					t.Errorf("input modified at %d", i)
				}
			}
			tc.check(t, out)
		})
	}
}
