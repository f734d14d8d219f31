package nodelifecycle_test

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/skiff-lab/skiff/controlplane/servertest"
)

const (
	pollStep    = 200 * time.Millisecond
	pollTimeout = 30 * time.Second
	// noScheduler keeps the default scheduler away from pods the test
	// binds itself.
	noScheduler = "skiff-test-none"
)

// TestNodeLifecycle runs the controller in a real control plane with
// servertest's short grace period. There are no agents: the test creates
// Node objects and plays the agent's part, renewing Leases and posting
// status.
func TestNodeLifecycle(t *testing.T) {
	s := servertest.Start(t)
	c := s.Client()
	t.Run("pod CIDRs are distinct and reused after a node is deleted", func(t *testing.T) { testPodCIDRs(t, c) })
	t.Run("a silent node goes Unknown, its pods are evicted, and it recovers", func(t *testing.T) {
		testSilentNode(t, c, s.Config.NodeMonitorGracePeriod)
	})
	t.Run("an untolerated NoExecute taint evicts at once", func(t *testing.T) { testUntolerated(t, c) })
}

func testPodCIDRs(t *testing.T, c kubernetes.Interface) {
	ctx := t.Context()
	cluster := netip.MustParsePrefix("10.244.0.0/16")
	names := []string{"cidr-a", "cidr-b", "cidr-c"}
	for _, n := range names {
		createNode(t, c, n)
	}
	cidrs := map[string]string{}
	for _, n := range names {
		cidrs[n] = waitPodCIDR(t, c, n)
	}
	seen := map[string]bool{}
	for n, cidr := range cidrs {
		p := netip.MustParsePrefix(cidr)
		if seen[cidr] || p.Bits() != 24 || !cluster.Contains(p.Addr()) {
			t.Errorf("node %s podCIDR %s: want a distinct /24 of %s (all: %v)", n, cidr, cluster, cidrs)
		}
		seen[cidr] = true
	}
	if err := c.CoreV1().Nodes().Delete(ctx, "cidr-b", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	createNode(t, c, "cidr-d")
	if got := waitPodCIDR(t, c, "cidr-d"); got != cidrs["cidr-b"] {
		t.Errorf("new node got %s, want the deleted node's %s (all: %v)", got, cidrs["cidr-b"], cidrs)
	}
}

func testSilentNode(t *testing.T, c kubernetes.Interface, grace time.Duration) {
	ctx := t.Context()
	ns := namespace(t, c, "silent")
	agent := startAgent(t, c, "lost")
	two := int64(2)
	unreachable := corev1.Toleration{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}
	forTwo := unreachable
	forTwo.TolerationSeconds = &two
	bindPod(t, c, ns, "tolerates-2s", "lost", forTwo)
	bindPod(t, c, ns, "tolerates-forever", "lost", unreachable)
	rs := createRS(t, c, ns, "lost", forTwo)
	original := waitFor(t, c, "the ReplicaSet's pod bound to lost", ns, func(pods []corev1.Pod) (*corev1.Pod, bool) {
		p := ownedBy(pods, rs)
		return p, p != nil && p.Spec.NodeName == "lost"
	})

	agent.stop()
	node := poll(t, "lost Ready=Unknown and tainted unreachable:NoExecute", func(ctx context.Context) (*corev1.Node, string) {
		n, err := c.CoreV1().Nodes().Get(ctx, "lost", metav1.GetOptions{})
		if err != nil {
			return nil, err.Error()
		}
		ready := condition(n)
		if ready.Status != corev1.ConditionUnknown || taintOf(n, corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute) == nil {
			return nil, fmt.Sprintf("Ready %+v, taints %v", ready, n.Spec.Taints)
		}
		return n, ""
	})
	ready := condition(node)
	if ready.Reason != "NodeStatusUnknown" || ready.Message != "Kubelet stopped posting node status." {
		t.Errorf("Ready condition %+v", ready)
	}
	taint := taintOf(node, corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute)
	if taint.TimeAdded == nil {
		t.Fatalf("unreachable taint without timeAdded: %+v", taint)
	}
	// timeAdded is truncated to the second.
	if silent := taint.TimeAdded.Sub(agent.renewed()); silent < grace-time.Second || silent > grace+5*time.Second {
		t.Errorf("tainted %s after the last renewal, want about the %s grace period", silent, grace)
	}
	waitEvent(t, c, metav1.NamespaceDefault, "lost", "NodeNotReady", "Node lost status is now: NodeNotReady")

	// The pod tolerating the taint for 2s is deleted (gracefully: bound
	// pods wait for their agent) 2s after the taint's timeAdded.
	evicted := waitFor(t, c, "tolerates-2s deleted", ns, func(pods []corev1.Pod) (*corev1.Pod, bool) {
		p := named(pods, "tolerates-2s")
		return p, p != nil && p.DeletionTimestamp != nil
	})
	deletedAt := evicted.DeletionTimestamp.Add(-time.Duration(*evicted.DeletionGracePeriodSeconds) * time.Second)
	// Both times are whole seconds, truncated: allow one second of slack.
	if after := deletedAt.Sub(taint.TimeAdded.Time); after < time.Second || after > 8*time.Second {
		t.Errorf("tolerates-2s deleted %s after the taint was added, want about 2s", after)
	}
	waitEvent(t, c, ns, "tolerates-2s", "TaintManagerEviction", "Marking for deletion Pod silent/tolerates-2s")
	if !hasCondition(evicted, corev1.DisruptionTarget, "DeletionByTaintManager") {
		t.Errorf("evicted pod conditions %+v", evicted.Status.Conditions)
	}
	// The ReplicaSet replaces its evicted pod (the replacement cannot go
	// to the tainted node, so it stays Pending).
	waitFor(t, c, "a replacement for the ReplicaSet's evicted pod", ns, func(pods []corev1.Pod) (*corev1.Pod, bool) {
		var gone, replacement bool
		for i := range pods {
			p := &pods[i]
			if ref := metav1.GetControllerOf(p); ref == nil || ref.UID != rs.UID {
				continue
			}
			gone = gone || (p.Name == original.Name && p.DeletionTimestamp != nil)
			replacement = replacement || (p.Name != original.Name && p.DeletionTimestamp == nil)
		}
		return nil, gone && replacement
	})
	forever, err := c.CoreV1().Pods(ns).Get(ctx, "tolerates-forever", metav1.GetOptions{})
	if err != nil || forever.DeletionTimestamp != nil {
		t.Errorf("pod tolerating the taint forever was deleted: %v %v", err, forever.DeletionTimestamp)
	}
	if c := podReady(forever); c == nil || c.Status != corev1.ConditionFalse {
		t.Errorf("pod on the Unknown node: Ready %+v, want False", c)
	}

	// Renewing the lease is not enough: Ready stays Unknown until the
	// agent posts status, and the taints stay with it.
	agent.start()
	time.Sleep(2 * time.Second)
	n, err := c.CoreV1().Nodes().Get(ctx, "lost", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if taintOf(n, corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute) == nil || condition(n).Status != corev1.ConditionUnknown {
		t.Errorf("with only the lease renewed: Ready %+v, taints %v", condition(n), n.Spec.Taints)
	}
	agent.postReady()
	poll(t, "lost Ready and untainted", func(ctx context.Context) (*corev1.Node, string) {
		n, err := c.CoreV1().Nodes().Get(ctx, "lost", metav1.GetOptions{})
		if err != nil {
			return nil, err.Error()
		}
		return n, fmt.Sprintf("Ready %s, taints %v", condition(n).Status, n.Spec.Taints)
	}, func(n *corev1.Node) bool {
		return condition(n).Status == corev1.ConditionTrue && len(n.Spec.Taints) == 0
	})
}

func testUntolerated(t *testing.T, c kubernetes.Interface) {
	ctx := t.Context()
	ns := namespace(t, c, "untolerated")
	startAgent(t, c, "tainted")
	bindPod(t, c, ns, "victim", "tainted")
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := c.CoreV1().Nodes().Get(ctx, "tainted", metav1.GetOptions{})
		if err != nil {
			return err
		}
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: "example.com/evict", Effect: corev1.TaintEffectNoExecute})
		_, err = c.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	waitFor(t, c, "victim deleted", ns, func(pods []corev1.Pod) (*corev1.Pod, bool) {
		p := named(pods, "victim")
		return p, p != nil && p.DeletionTimestamp != nil
	})
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("untolerated pod deleted after %s, want at once", took)
	}
}

// agent plays a node agent: it registers the node, posts Ready status and
// renews the node's Lease every 500ms while started.
type agent struct {
	t         *testing.T
	c         kubernetes.Interface
	node      string
	mu        sync.Mutex
	cancel    context.CancelFunc
	done      chan struct{}
	lastRenew time.Time
}

func startAgent(t *testing.T, c kubernetes.Interface, node string) *agent {
	t.Helper()
	createNode(t, c, node)
	a := &agent{t: t, c: c, node: node}
	a.postReady()
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: node, Namespace: corev1.NamespaceNodeLease},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &node, LeaseDurationSeconds: new(int32(40)), RenewTime: &metav1.MicroTime{Time: time.Now()}}}
	if _, err := c.CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(t.Context(), lease, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	a.start()
	t.Cleanup(a.stop)
	return a
}

func (a *agent) start() {
	ctx, cancel := context.WithCancel(context.Background())
	a.cancel, a.done = cancel, make(chan struct{})
	go func() {
		defer close(a.done)
		leases := a.c.CoordinationV1().Leases(corev1.NamespaceNodeLease)
		wait.UntilWithContext(ctx, func(ctx context.Context) {
			l, err := leases.Get(ctx, a.node, metav1.GetOptions{})
			if err != nil {
				return
			}
			now := time.Now()
			l.Spec.RenewTime = &metav1.MicroTime{Time: now}
			if _, err := leases.Update(ctx, l, metav1.UpdateOptions{}); err == nil {
				a.mu.Lock()
				a.lastRenew = now
				a.mu.Unlock()
			}
		}, 500*time.Millisecond)
	}()
}

// renewed is when the lease was last renewed.
func (a *agent) renewed() time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.lastRenew
}

// stop stops renewing; stopping twice is fine.
func (a *agent) stop() {
	if a.cancel != nil {
		a.cancel()
		<-a.done
		a.cancel = nil
	}
}

// postReady writes the node's status as an agent does: Ready with a fresh
// heartbeat, and capacity. The node lifecycle controller writes the node
// too, so conflicts are retried.
func (a *agent) postReady() {
	a.t.Helper()
	ctx := a.t.Context()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := a.c.CoreV1().Nodes().Get(ctx, a.node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		now := metav1.Now()
		capacity := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi"),
			corev1.ResourcePods: resource.MustParse("110")}
		n.Status.Capacity, n.Status.Allocatable = capacity, capacity
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			Message: "kubelet is posting ready status", LastHeartbeatTime: now, LastTransitionTime: now}}
		_, err = a.c.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		a.t.Fatal(err)
	}
}

func createNode(t *testing.T, c kubernetes.Interface, name string) {
	t.Helper()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name}}}
	if _, err := c.CoreV1().Nodes().Create(t.Context(), n, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func waitPodCIDR(t *testing.T, c kubernetes.Interface, name string) string {
	t.Helper()
	n := poll(t, "a podCIDR for "+name, func(ctx context.Context) (*corev1.Node, string) {
		n, err := c.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, err.Error()
		}
		return n, fmt.Sprintf("podCIDR %q podCIDRs %v", n.Spec.PodCIDR, n.Spec.PodCIDRs)
	}, func(n *corev1.Node) bool { return n.Spec.PodCIDR != "" })
	if !slices.Equal(n.Spec.PodCIDRs, []string{n.Spec.PodCIDR}) {
		t.Errorf("node %s podCIDR %s podCIDRs %v", name, n.Spec.PodCIDR, n.Spec.PodCIDRs)
	}
	return n.Spec.PodCIDR
}

func namespace(t *testing.T, c kubernetes.Interface, name string) string {
	t.Helper()
	if _, err := c.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return name
}

// bindPod creates a pod the default scheduler leaves alone, binds it to
// node and marks it Ready, as its agent would once it runs.
func bindPod(t *testing.T, c kubernetes.Interface, ns, name, node string, tolerations ...corev1.Toleration) {
	t.Helper()
	ctx := t.Context()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{
		SchedulerName: noScheduler, Tolerations: tolerations, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	if _, err := c.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.CoreV1().Pods(ns).Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: name},
		Target: corev1.ObjectReference{Kind: "Node", Name: node}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p, err := c.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()})
	if _, err := c.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// createRS creates a one-replica ReplicaSet whose pods go to node.
func createRS(t *testing.T, c kubernetes.Interface, ns, node string, tolerations ...corev1.Toleration) *appsv1.ReplicaSet {
	t.Helper()
	labels := map[string]string{"app": "web"}
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: appsv1.ReplicaSetSpec{
		Replicas: new(int32(1)),
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
			NodeSelector: map[string]string{corev1.LabelHostname: node},
			Tolerations:  tolerations,
			Containers:   []corev1.Container{{Name: "c", Image: "busybox"}},
		}},
	}}
	created, err := c.AppsV1().ReplicaSets(ns).Create(t.Context(), rs, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return created
}

// waitFor polls the pods of ns until check accepts them.
func waitFor(t *testing.T, c kubernetes.Interface, what, ns string, check func([]corev1.Pod) (*corev1.Pod, bool)) *corev1.Pod {
	t.Helper()
	var found *corev1.Pod
	poll(t, what, func(ctx context.Context) (*corev1.Node, string) {
		l, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err.Error()
		}
		p, ok := check(l.Items)
		if !ok {
			return nil, fmt.Sprint(podSummaries(l.Items))
		}
		found = p
		return &corev1.Node{}, ""
	})
	return found
}

func waitEvent(t *testing.T, c kubernetes.Interface, ns, object, reason, message string) {
	t.Helper()
	poll(t, fmt.Sprintf("event %s on %s", reason, object), func(ctx context.Context) (*corev1.Node, string) {
		l, err := c.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: fields.Set{
			"involvedObject.name": object, "reason": reason}.String()})
		if err != nil {
			return nil, err.Error()
		}
		var msgs []string
		for _, e := range l.Items {
			if e.Message == message {
				return &corev1.Node{}, ""
			}
			msgs = append(msgs, e.Message)
		}
		return nil, fmt.Sprint(msgs)
	})
}

// poll waits for get to return a result that done (if given) accepts; get
// returns nil and what it saw while waiting.
func poll(t *testing.T, what string, get func(context.Context) (*corev1.Node, string), done ...func(*corev1.Node) bool) *corev1.Node {
	t.Helper()
	var last string
	var result *corev1.Node
	err := wait.PollUntilContextTimeout(t.Context(), pollStep, pollTimeout, true, func(ctx context.Context) (bool, error) {
		n, seen := get(ctx)
		last = seen
		if n == nil {
			return false, nil
		}
		for _, d := range done {
			if !d(n) {
				return false, nil
			}
		}
		result = n
		return true, nil
	})
	if err != nil {
		t.Fatalf("%s: not within %s; last seen: %s", what, pollTimeout, last)
	}
	return result
}

func condition(n *corev1.Node) corev1.NodeCondition {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c
		}
	}
	return corev1.NodeCondition{}
}

func taintOf(n *corev1.Node, key string, effect corev1.TaintEffect) *corev1.Taint {
	for i, t := range n.Spec.Taints {
		if t.Key == key && t.Effect == effect {
			return &n.Spec.Taints[i]
		}
	}
	return nil
}

func podReady(p *corev1.Pod) *corev1.PodCondition {
	for i, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

func hasCondition(p *corev1.Pod, typ corev1.PodConditionType, reason string) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == typ && c.Reason == reason && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func named(pods []corev1.Pod, name string) *corev1.Pod {
	for i := range pods {
		if pods[i].Name == name {
			return &pods[i]
		}
	}
	return nil
}

func ownedBy(pods []corev1.Pod, rs *appsv1.ReplicaSet) *corev1.Pod {
	for i := range pods {
		if ref := metav1.GetControllerOf(&pods[i]); ref != nil && ref.UID == rs.UID && pods[i].DeletionTimestamp == nil {
			return &pods[i]
		}
	}
	return nil
}

func podSummaries(pods []corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, fmt.Sprintf("%s@%s(deleting=%v)", p.Name, p.Spec.NodeName, p.DeletionTimestamp != nil))
	}
	return out
}
