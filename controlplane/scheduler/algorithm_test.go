package scheduler

import (
	"context"
	"errors"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/skiff-lab/skiff/controlplane/scheduler/framework"
	"github.com/skiff-lab/skiff/controlplane/scheduler/plugins"
)

func TestFitErrorError(t *testing.T) {
	tests := []struct {
		name string
		err  FitError
		want string
	}{
		{
			name: "no nodes",
			err:  FitError{NumAllNodes: 0, Reasons: map[string]int{}},
			want: "0/0 nodes are available.",
		},
		{
			name: "one reason",
			err:  FitError{NumAllNodes: 1, Reasons: map[string]int{"Insufficient cpu": 1}},
			want: "0/1 nodes are available: 1 Insufficient cpu.",
		},
		{
			name: "reasons with their counts, sorted",
			err: FitError{NumAllNodes: 3, Reasons: map[string]int{
				"node(s) had untolerated taint {dedicated: gpu}": 2,
				"Insufficient cpu": 1,
			}},
			want: "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had untolerated taint {dedicated: gpu}.",
		},
		{
			name: "sorted as text, count first, as kube-scheduler does",
			err: FitError{NumAllNodes: 12, Reasons: map[string]int{
				"node(s) were unschedulable": 2,
				"Insufficient memory":        10,
				"Insufficient cpu":           10,
			}},
			want: "0/12 nodes are available: 10 Insufficient cpu, 10 Insufficient memory, 2 node(s) were unschedulable.",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.want {
				t.Errorf("Error() = %q\nwant      %q", got, tt.want)
			}
		})
	}
}

func TestNumFeasibleNodesToFind(t *testing.T) {
	// All nodes below 100; else max(n*pct/100, 100) with pct given or
	// max(50 - n/125, 5).
	tests := []struct {
		nodes, percentage, want int
	}{
		{nodes: 0, want: 0},
		{nodes: 10, want: 10},
		{nodes: 99, want: 99},
		{nodes: 100, want: 100},     // 50% is 50, raised to 100
		{nodes: 500, want: 230},     // 46%
		{nodes: 1000, want: 420},    // 42%
		{nodes: 5000, want: 500},    // 10%
		{nodes: 100000, want: 5000}, // 50 - 800 < 5: 5%
		{nodes: 1000, percentage: 20, want: 200},
		{nodes: 1000, percentage: 5, want: 100}, // 50, raised to 100
		{nodes: 5000, percentage: 30, want: 1500},
		{nodes: 1000, percentage: 100, want: 1000},
		{nodes: 1000, percentage: 150, want: 1000},
		{nodes: 50, percentage: 10, want: 50}, // below 100 nodes, all of them
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d nodes, %d%%", tt.nodes, tt.percentage), func(t *testing.T) {
			if got := numFeasibleNodesToFind(tt.nodes, tt.percentage); got != tt.want {
				t.Errorf("numFeasibleNodesToFind(%d, %d) = %d, want %d", tt.nodes, tt.percentage, got, tt.want)
			}
		})
	}
}

func nodeInfos(nodes []*corev1.Node, pods ...*corev1.Pod) []*framework.NodeInfo {
	byName := map[string]*framework.NodeInfo{}
	var out []*framework.NodeInfo
	for _, n := range nodes {
		ni := framework.NewNodeInfo(n)
		byName[n.Name] = ni
		out = append(out, ni)
	}
	for _, p := range pods {
		byName[p.Spec.NodeName].AddPod(p)
	}
	return out
}

func newDecider(t *testing.T, cfg Config) *decider {
	t.Helper()
	p, err := NewProfile(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &decider{profile: p}
}

func withTaint(key, value string, effect corev1.TaintEffect) func(*corev1.Node) {
	return func(n *corev1.Node) {
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: key, Value: value, Effect: effect})
	}
}

// cpuOnly drops the pod's memory request.
func cpuOnly(p *corev1.Pod) { delete(p.Spec.Containers[0].Resources.Requests, corev1.ResourceMemory) }

func TestDecide(t *testing.T) {
	// Three 4-cpu nodes: "full" with 3 cpu requested, "half" with 1,
	// "empty" with none; pods request 2Gi of memory per cpu.
	load := []*corev1.Pod{boundTo(testPod("big", "3"), "full"), boundTo(testPod("small", "1"), "half")}
	three := func(opts map[string][]func(*corev1.Node)) []*corev1.Node {
		return []*corev1.Node{testNode("full", "4", opts["full"]...), testNode("half", "4", opts["half"]...), testNode("empty", "4", opts["empty"]...)}
	}
	tests := []struct {
		name     string
		cfg      Config
		nodes    []*corev1.Node
		existing []*corev1.Pod
		pod      *corev1.Pod
		want     string // node, or the FitError message
	}{
		{
			name: "LeastAllocated picks the least loaded node", nodes: three(nil), existing: load,
			pod: testPod("p", "500m"), want: "empty",
		},
		{
			name: "MostAllocated picks the fullest node that fits", cfg: Config{ScoringStrategy: plugins.MostAllocated},
			nodes: three(nil), existing: load, pod: testPod("p", "500m"), want: "full",
		},
		{
			name: "MostAllocated skips a node the pod does not fit", cfg: Config{ScoringStrategy: plugins.MostAllocated},
			nodes: three(nil), existing: load, pod: testPod("p", "1500m"), want: "half",
		},
		{
			name:     "a PreferNoSchedule taint outweighs load",
			nodes:    three(map[string][]func(*corev1.Node){"empty": {withTaint("spot", "true", corev1.TaintEffectPreferNoSchedule)}}),
			existing: load, pod: testPod("p", "500m"), want: "half",
		},
		{
			name: "a pod naming its node goes there", nodes: three(nil), existing: load,
			pod: testPod("p", "500m", func(p *corev1.Pod) { p.Spec.NodeName = "full" }), want: "full",
		},
		{
			name: "a single fitting node", nodes: three(nil), existing: load,
			pod: testPod("p", "3500m"), want: "empty",
		},
		{
			name: "no node fits: reasons counted across nodes",
			nodes: three(map[string][]func(*corev1.Node){
				"half":  {withTaint("dedicated", "gpu", corev1.TaintEffectNoSchedule)},
				"empty": {withTaint("dedicated", "gpu", corev1.TaintEffectNoSchedule)},
			}),
			existing: load, pod: testPod("p", "2", cpuOnly),
			want: "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had untolerated taint {dedicated: gpu}.",
		},
		{
			name: "no node fits: the first failing filter gives a node's reason",
			nodes: three(map[string][]func(*corev1.Node){
				"full":  {func(n *corev1.Node) { n.Spec.Unschedulable = true }},
				"empty": {withTaint("dedicated", "gpu", corev1.TaintEffectNoExecute)},
			}),
			existing: load, pod: testPod("p", "4", cpuOnly),
			want: "0/3 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint {dedicated: gpu}, 1 node(s) were unschedulable.",
		},
		{
			name:  "no node fits: a node may give several reasons",
			nodes: three(nil), existing: load, pod: testPod("p", "5"),
			want: "0/3 nodes are available: 3 Insufficient cpu, 3 Insufficient memory.",
		},
		{
			name: "no nodes", pod: testPod("p", "500m"),
			want: "0/0 nodes are available.",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newDecider(t, tt.cfg)
			dec, err := d.decide(context.Background(), tt.pod, newSnapshot(nodeInfos(tt.nodes, tt.existing...)))
			got := dec.node
			if err != nil {
				var fe *FitError
				if !errors.As(err, &fe) {
					t.Fatalf("decide error %v is not a *FitError", err)
				}
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("decide = %q, want %q", got, tt.want)
			}
		})
	}
}

// rejectingPreFilter makes the pod unschedulable everywhere.
type rejectingPreFilter struct{ reasons []string }

func (rejectingPreFilter) Name() string { return "Rejecter" }
func (f rejectingPreFilter) PreFilter(context.Context, *framework.CycleState, *corev1.Pod, []*framework.NodeInfo) *framework.Status {
	return framework.Unfit(f.reasons...)
}

func TestDecidePreFilterRejects(t *testing.T) {
	tests := []struct {
		name    string
		reasons []string
		want    string
	}{
		{name: "one reason", reasons: []string{"pod has unbound immediate PersistentVolumeClaims"},
			want: "0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims."},
		{name: "reasons joined", reasons: []string{"a", "b"},
			want: "0/3 nodes are available: a, b."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newDecider(t, Config{})
			rec := &checkedFilter{}
			d.profile.PreFilters = append(d.profile.PreFilters, rejectingPreFilter{tt.reasons})
			d.profile.Filters = append([]framework.FilterPlugin{rec}, d.profile.Filters...)
			nodes := nodeInfos([]*corev1.Node{testNode("a", "4"), testNode("b", "4"), testNode("c", "4")})
			_, err := d.decide(context.Background(), testPod("p", "1"), newSnapshot(nodes))
			if err == nil || err.Error() != tt.want {
				t.Errorf("decide error = %v, want %q", err, tt.want)
			}
			if len(rec.nodes) > 0 {
				t.Errorf("filters ran on %v after a PreFilter rejected the pod", rec.nodes)
			}
		})
	}
}

func TestDecideBreaksTiesAtRandom(t *testing.T) {
	d := newDecider(t, Config{})
	nodes := nodeInfos([]*corev1.Node{testNode("a", "4"), testNode("b", "4")})
	picked := map[string]int{}
	for range 100 {
		node, err := d.decide(context.Background(), testPod("p", "1"), newSnapshot(nodes))
		if err != nil {
			t.Fatal(err)
		}
		picked[node.node]++
	}
	if picked["a"] == 0 || picked["b"] == 0 {
		t.Errorf("100 decisions between equal nodes picked %v, want both", picked)
	}
}

// checkedFilter records the nodes it is asked about and lets every node
// through.
type checkedFilter struct{ nodes []string }

func (*checkedFilter) Name() string { return "Recorder" }
func (f *checkedFilter) Filter(_ context.Context, _ *framework.CycleState, _ *corev1.Pod, ni *framework.NodeInfo) *framework.Status {
	f.nodes = append(f.nodes, ni.Node.Name)
	return nil
}

func TestDecideStopsEarlyAndRotates(t *testing.T) {
	numbered := func(n int, full func(i int) bool) []*corev1.Node {
		var nodes []*corev1.Node
		for i := range n {
			cpu := "4"
			if full(i) {
				cpu = "50m" // too little for the pod's 100m
			}
			nodes = append(nodes, testNode(fmt.Sprintf("node-%04d", i), cpu))
		}
		return nodes
	}
	none := func(int) bool { return false }
	type round struct {
		first   string // first node checked
		checked int
		next    int // nextStart afterwards
	}
	tests := []struct {
		name       string
		percentage int
		nodes      []*corev1.Node
		want       []round
	}{
		{
			name:  "1000 nodes: 42% found per pod, each pod starting where the last stopped",
			nodes: numbered(1000, none),
			want: []round{
				{first: "node-0000", checked: 420, next: 420},
				{first: "node-0420", checked: 420, next: 840},
				{first: "node-0840", checked: 420, next: 260}, // wraps around
			},
		},
		{
			name:       "an explicit percentage",
			percentage: 10,
			nodes:      numbered(1000, none),
			want: []round{
				{first: "node-0000", checked: 100, next: 100},
				{first: "node-0100", checked: 100, next: 200},
			},
		},
		{
			name:  "rejected nodes are checked but do not count",
			nodes: numbered(1000, func(i int) bool { return i%2 == 1 }),
			want: []round{
				{first: "node-0000", checked: 839, next: 839}, // the 420th fitting node is node-0838
				{first: "node-0839", checked: 840, next: 679}, // 161 to the end, then node-0000..0678
			},
		},
		{
			name:  "below 100 nodes every node is checked",
			nodes: numbered(50, none),
			want: []round{
				{first: "node-0000", checked: 50, next: 0},
				{first: "node-0000", checked: 50, next: 0},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newDecider(t, Config{PercentageOfNodesToScore: tt.percentage})
			rec := &checkedFilter{}
			d.profile.Filters = append([]framework.FilterPlugin{rec}, d.profile.Filters...)
			nodes := nodeInfos(tt.nodes)
			for i, want := range tt.want {
				rec.nodes = nil
				if _, err := d.decide(context.Background(), testPod("p", "100m"), newSnapshot(nodes)); err != nil {
					t.Fatalf("round %d: %v", i, err)
				}
				got := round{checked: len(rec.nodes), next: d.nextStart}
				if len(rec.nodes) > 0 {
					got.first = rec.nodes[0]
				}
				if got != want {
					t.Errorf("round %d: %+v, want %+v", i, got, want)
				}
			}
		})
	}
}

// TestDecideJudgesClassesOnce: nodes cordoned or tainted alike are turned
// away as a class, without a per-node filter looking at them, and counted
// in the FailedScheduling message as if each had been looked at; a pod
// that tolerates the taint is judged on those nodes too.
func TestDecideJudgesClassesOnce(t *testing.T) {
	taint := corev1.Taint{Key: corev1.TaintNodeNetworkUnavailable, Effect: corev1.TaintEffectNoSchedule}
	var nodes []*corev1.Node
	for i := range 300 {
		nodes = append(nodes, testNode(fmt.Sprintf("node-%03d", i), "4", func(n *corev1.Node) {
			switch {
			case i < 200:
				n.Spec.Taints = []corev1.Taint{taint}
			case i < 290:
				n.Spec.Unschedulable = true
			}
		}))
	}
	d := newDecider(t, Config{PercentageOfNodesToScore: 100})
	rec := &checkedFilter{}
	d.profile.Filters = append([]framework.FilterPlugin{rec}, d.profile.Filters...)
	snap := newSnapshot(nodeInfos(nodes))
	if len(snap.Classes) != 3 {
		t.Fatalf("%d classes, want 3 (untainted, tainted, cordoned)", len(snap.Classes))
	}

	if _, err := d.decide(context.Background(), testPod("p", "100m"), snap); err != nil {
		t.Fatal(err)
	}
	if len(rec.nodes) != 10 || rec.nodes[0] != "node-290" {
		t.Errorf("per-node filters looked at %d nodes from %v, want the 10 untainted ones", len(rec.nodes), rec.nodes[:min(3, len(rec.nodes))])
	}

	rec.nodes = nil
	_, err := d.decide(context.Background(), testPod("big", "8"), snap)
	want := "0/300 nodes are available: 10 Insufficient cpu, 10 Insufficient memory, 200 node(s) had untolerated taint {node.kubernetes.io/network-unavailable: }, 90 node(s) were unschedulable."
	if err == nil || err.Error() != want {
		t.Errorf("decide error = %v\nwant %s", err, want)
	}

	rec.nodes = nil
	tolerant := testPod("tolerant", "100m")
	tolerant.Spec.Tolerations = []corev1.Toleration{{Key: taint.Key, Operator: corev1.TolerationOpExists}}
	if _, err := d.decide(context.Background(), tolerant, snap); err != nil {
		t.Fatal(err)
	}
	if len(rec.nodes) != 210 {
		t.Errorf("per-node filters looked at %d nodes for a tolerating pod, want 210", len(rec.nodes))
	}
}
