package scheduler_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/skiff-lab/skiff/controlplane"
	"github.com/skiff-lab/skiff/controlplane/servertest"
)

// startCluster runs a control plane whose nodes, simulated here without
// an agent renewing their Leases, are not judged silent during a test.
func startCluster(t *testing.T) *servertest.Server {
	return servertest.StartWith(t, func(c *controlplane.Config) { c.NodeMonitorGracePeriod = time.Hour })
}

func node(name, cpu string, labels map[string]string, taints ...corev1.Taint) *corev1.Node {
	alloc := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse(cpu),
		corev1.ResourceMemory: resource.MustParse("8Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec:       corev1.NodeSpec{Taints: taints},
		Status: corev1.NodeStatus{Capacity: alloc, Allocatable: alloc,
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
	}
}

func createNode(t *testing.T, c kubernetes.Interface, n *corev1.Node) {
	t.Helper()
	ctx := context.Background()
	status := n.Status
	if _, err := c.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The node controller gives the node a podCIDR meanwhile: retry on conflict.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		current, err := c.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		current.Status = status
		_, err = c.CoreV1().Nodes().UpdateStatus(ctx, current, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func pod(name, cpu string, mutate ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}},
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

// boundNode waits for the pod to be bound and returns its node.
func boundNode(t *testing.T, c kubernetes.Interface, name string) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		p, err := c.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
		if err == nil && p.Spec.NodeName != "" {
			return p.Spec.NodeName
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("pod %s was not bound in 20s", name)
	return ""
}

func eventFor(t *testing.T, c kubernetes.Interface, podName, reason string) *corev1.Event {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		evs, err := c.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{
			FieldSelector: "involvedObject.name=" + podName + ",reason=" + reason})
		if err == nil && len(evs.Items) > 0 {
			return &evs.Items[0]
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("no %s event for %s in 20s", reason, podName)
	return nil
}

func TestSchedulingDecisions(t *testing.T) {
	if testing.Short() {
		t.Skip("integration: runs the control plane")
	}
	s := startCluster(t)
	c := s.Client()
	ctx := context.Background()
	createNode(t, c, node("small", "1", map[string]string{"disk": "hdd"}))
	createNode(t, c, node("big", "8", map[string]string{"disk": "ssd"}))
	createNode(t, c, node("gpu", "8", map[string]string{"disk": "ssd"}, corev1.Taint{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}))

	cases := []struct {
		pod  *corev1.Pod
		want []string
	}{
		{pod("selector", "100m", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"disk": "hdd"} }), []string{"small"}},
		{pod("fit", "4"), []string{"big"}},
		{pod("tolerates", "100m", func(p *corev1.Pod) {
			p.Spec.NodeSelector = map[string]string{"disk": "ssd"}
			p.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "gpu", Effect: corev1.TaintEffectNoSchedule}}
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{
				Weight: 100, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpIn, Values: []string{"gpu"}}}}}}}}
		}), []string{"gpu"}},
		{pod("affinity-in", "100m", func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "disk", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"ssd"}}}}}}}}
		}), []string{"small"}},
	}
	// kubernetes.io/hostname is set by the agent on real nodes; label them here.
	for _, n := range []string{"small", "big", "gpu"} {
		patch := fmt.Sprintf(`{"metadata":{"labels":{"kubernetes.io/hostname":%q}}}`, n)
		if _, err := c.CoreV1().Nodes().Patch(ctx, n, "application/merge-patch+json", []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range cases {
		if _, err := c.CoreV1().Pods("default").Create(ctx, tc.pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range cases {
		got := boundNode(t, c, tc.pod.Name)
		if !contains(tc.want, got) {
			t.Errorf("%s bound to %s, want one of %v", tc.pod.Name, got, tc.want)
		}
	}
	ev := eventFor(t, c, "fit", "Scheduled")
	if ev.Message != "Successfully assigned default/fit to big" || ev.Source.Component != "default-scheduler" {
		t.Errorf("Scheduled event: %q from %q", ev.Message, ev.Source.Component)
	}
}

// eventMatching waits for an event about podName with reason and message.
func eventMatching(t *testing.T, c kubernetes.Interface, podName, reason, message string) *corev1.Event {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	var seen []string
	for time.Now().Before(deadline) {
		evs, err := c.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{
			FieldSelector: "involvedObject.name=" + podName + ",reason=" + reason})
		seen = seen[:0]
		for i := range evs.Items {
			if err == nil && evs.Items[i].Message == message {
				return &evs.Items[i]
			}
			seen = append(seen, evs.Items[i].Message)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("no %s event %q for %s in 20s; saw %q", reason, message, podName, seen)
	return nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func TestUnschedulableUntilANodeFits(t *testing.T) {
	if testing.Short() {
		t.Skip("integration: runs the control plane")
	}
	s := startCluster(t)
	c := s.Client()
	ctx := context.Background()
	createNode(t, c, node("tiny", "500m", nil))
	createNode(t, c, node("gpu-1", "8", nil, corev1.Taint{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}))
	createNode(t, c, node("gpu-2", "8", nil, corev1.Taint{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}))
	if _, err := c.CoreV1().Pods("default").Create(ctx, pod("waiting", "2"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// An attempt made before the scheduler saw every node says less; wait
	// for the one that counts all three.
	want := "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had untolerated taint {dedicated: gpu}."
	ev := eventMatching(t, c, "waiting", "FailedScheduling", want)
	if ev.Type != corev1.EventTypeWarning {
		t.Errorf("FailedScheduling event type %q", ev.Type)
	}
	// The condition is patched after the event is recorded.
	servertest.Eventually(t, "PodScheduled=False of 0/3", 10*time.Second, func(ctx context.Context) (bool, string) {
		p, err := c.CoreV1().Pods("default").Get(ctx, "waiting", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodScheduled {
				return cond.Status == corev1.ConditionFalse && cond.Reason == "Unschedulable" && strings.HasPrefix(cond.Message, "0/3"),
					fmt.Sprintf("%+v", cond)
			}
		}
		return false, "no PodScheduled condition"
	})
	start := time.Now()
	createNode(t, c, node("roomy", "4", nil))
	if got := boundNode(t, c, "waiting"); got != "roomy" {
		t.Errorf("bound to %s, want roomy", got)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("a fitting node took %s to be used; the node event should retry at once", took)
	}
	// The server's /metrics counted both results, and the queue's parts.
	metrics := scrape(t, c)
	for _, series := range []string{`scheduler_schedule_attempts_total{profile="default-scheduler",result="unschedulable"}`,
		`scheduler_schedule_attempts_total{profile="default-scheduler",result="scheduled"}`,
		`scheduler_scheduling_attempt_duration_seconds_count{profile="default-scheduler",result="scheduled"}`} {
		if v := sample(metrics, series); v < 1 {
			t.Errorf("%s is %v, want at least 1", series, v)
		}
	}
	if !strings.Contains(metrics, `scheduler_pending_pods{queue="unschedulable"}`) {
		t.Error("no scheduler_pending_pods in /metrics")
	}
}

// scrape reads the API server's /metrics.
func scrape(t *testing.T, c kubernetes.Interface) string {
	t.Helper()
	raw, err := c.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// sample is the value of one series in an exposition, or -1.
func sample(exposition, series string) float64 {
	for line := range strings.Lines(exposition) {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err == nil {
				return f
			}
		}
	}
	return -1
}

func TestAntiAffinityAndTopologySpread(t *testing.T) {
	if testing.Short() {
		t.Skip("integration: runs the control plane")
	}
	s := startCluster(t)
	c := s.Client()
	ctx := context.Background()
	for i, zone := range []string{"a", "b", "c"} {
		name := fmt.Sprintf("n%d", i)
		createNode(t, c, node(name, "8", map[string]string{corev1.LabelHostname: name, corev1.LabelTopologyZone: zone}))
	}
	createNode(t, c, node("n3", "8", map[string]string{corev1.LabelHostname: "n3", corev1.LabelTopologyZone: "a"}))
	antiAffine := func(p *corev1.Pod) {
		p.Labels = map[string]string{"app": "db"}
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			TopologyKey: corev1.LabelTopologyZone, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}}}}}
	}
	zones := map[string]bool{}
	for i := range 3 {
		name := fmt.Sprintf("db-%d", i)
		if _, err := c.CoreV1().Pods("default").Create(ctx, pod(name, "100m", antiAffine), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		n, err := c.CoreV1().Nodes().Get(ctx, boundNode(t, c, name), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		zones[n.Labels[corev1.LabelTopologyZone]] = true
	}
	if len(zones) != 3 {
		t.Errorf("3 anti-affine replicas landed in zones %v, want one per zone", zones)
	}
	if _, err := c.CoreV1().Pods("default").Create(ctx, pod("db-3", "100m", antiAffine), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventMatching(t, c, "db-3", "FailedScheduling", "0/4 nodes are available: 4 node(s) didn't match pod anti-affinity rules.")

	spread := func(p *corev1.Pod) {
		p.Labels = map[string]string{"app": "web"}
		p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone,
			WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
	}
	perZone := map[string]int{}
	for i := range 6 {
		name := fmt.Sprintf("web-%d", i)
		if _, err := c.CoreV1().Pods("default").Create(ctx, pod(name, "100m", spread), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		n, _ := c.CoreV1().Nodes().Get(ctx, boundNode(t, c, name), metav1.GetOptions{})
		perZone[n.Labels[corev1.LabelTopologyZone]]++
	}
	for zone, n := range perZone {
		if n != 2 {
			t.Errorf("zone %s got %d of 6 spread pods, want 2 (%v)", zone, n, perZone)
		}
	}
}
