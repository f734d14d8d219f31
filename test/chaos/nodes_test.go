package chaos

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/skiff-lab/skiff/cri"
)

// checkPods: nothing duplicated in the API: one ReplicaSet per Deployment
// (the workload never changes a template), no pod IP given twice.
func (c *chaos) checkPods(r *row) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var s snapshot
	err := c.api(func(cs kubernetes.Interface) error { return s.read(ctx, cs) })
	if err != nil {
		c.problem(r, duplicate, "reading the cluster: %v", err)
		return
	}
	var sets map[string]int
	err = c.api(func(cs kubernetes.Interface) error {
		list, err := cs.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{})
		sets = map[string]int{}
		for _, rs := range list.Items {
			sets[rs.Labels["app"]]++
		}
		return err
	})
	if err != nil {
		c.problem(r, duplicate, "listing ReplicaSets: %v", err)
	}
	for name, n := range sets {
		if _, ok := s.deployments[name]; ok && n != 1 {
			c.problem(r, duplicate, "deployment %s has %d ReplicaSets", name, n)
		}
	}
	ips := map[string]string{}
	for _, p := range s.live() {
		if p.Spec.HostNetwork || p.Status.PodIP == "" {
			continue
		}
		if other, ok := ips[p.Status.PodIP]; ok {
			c.problem(r, duplicate, "pods %s and %s/%s both have IP %s", other, p.Namespace, p.Name, p.Status.PodIP)
		}
		ips[p.Status.PodIP] = p.Namespace + "/" + p.Name
	}
}

// checkNodes: what each node runs and holds is what its pods need, no
// more: it polls for a while, as a node lets go of a deleted pod's things
// in its own time, then reports what is still wrong.
func (c *chaos) checkNodes(r *row) {
	var wrong []finding
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(2 * time.Second) {
		wrong = c.nodeFindings()
		if len(wrong) == 0 || time.Now().After(deadline) {
			break
		}
	}
	for _, f := range wrong {
		c.problem(r, f.kind, "%s", f.what)
	}
}

// finding is one thing wrong on a node: a leak or a duplicate.
type finding struct{ kind, what string }

func (c *chaos) nodeFindings() []finding {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var s snapshot
	if err := c.api(func(cs kubernetes.Interface) error { return s.read(ctx, cs) }); err != nil {
		return []finding{{leak, "reading the cluster: " + err.Error()}}
	}
	var out []finding
	for _, node := range c.lab.Nodes() {
		n := &nodeState{name: node, dir: c.lab.NodeDir(node)}
		if err := n.read(ctx, &s); err != nil {
			out = append(out, finding{leak, fmt.Sprintf("%s: %v", node, err)})
			continue
		}
		for _, f := range n.findings(&s) {
			out = append(out, finding{f.kind, node + ": " + f.what})
		}
	}
	return out
}

// nodeState is what one node holds, read from its containerd, file
// systems, network namespace, cgroups and processes.
type nodeState struct {
	name, dir  string
	livePods   map[string]corev1.Pod // by UID: the node's pods, neither ended nor being deleted
	knownPods  map[string]bool       // every pod UID the API has
	containers map[string]bool       // every containerd container ID
	running    map[string]bool       // containers with a running task
	sandboxes  map[string]bool       // sandboxes with a running task
	found      []finding             // from containerd
}

func (n *nodeState) read(ctx context.Context, s *snapshot) error {
	n.livePods, n.knownPods = map[string]corev1.Pod{}, map[string]bool{}
	for _, p := range s.pods {
		n.knownPods[string(p.UID)] = true
	}
	for _, p := range s.live() {
		if p.Spec.NodeName == n.name {
			n.livePods[string(p.UID)] = p
		}
	}
	return n.readContainers(ctx)
}

// readContainers lists the node's containerd: every container, those
// running, and any pod with two running tasks for one container.
func (n *nodeState) readContainers(ctx context.Context) error {
	client, err := containerd.New(filepath.Join(n.dir, "agent", "containerd", "containerd.sock"))
	if err != nil {
		return err
	}
	defer client.Close()
	ctx = namespaces.WithNamespace(ctx, "skiff")
	list, err := client.Containers(ctx)
	if err != nil {
		return err
	}
	n.containers, n.running, n.sandboxes = map[string]bool{}, map[string]bool{}, map[string]bool{}
	seen := map[string]string{}
	for _, ctr := range list {
		labels, err := ctr.Labels(ctx)
		if err != nil {
			continue // gone meanwhile
		}
		n.containers[ctr.ID()] = true
		if !n.knownPods[labels[cri.LabelPodUID]] {
			n.found = append(n.found, n.leak("container %s of pod %s/%s, which the API no longer has", ctr.ID(), labels[cri.LabelPodNamespace], labels[cri.LabelPodName]))
		}
		if !taskRunning(ctx, ctr) {
			continue
		}
		n.running[ctr.ID()] = true
		key := labels[cri.LabelPodUID] + " " + labels[cri.LabelKind] + " " + labels[cri.LabelContainerName]
		if other, ok := seen[key]; ok {
			n.found = append(n.found, finding{duplicate, fmt.Sprintf("pod %s/%s runs %s twice: %s and %s", labels[cri.LabelPodNamespace], labels[cri.LabelPodName], key, other, ctr.ID())})
		}
		seen[key] = ctr.ID()
		if labels[cri.LabelKind] == cri.KindSandbox {
			n.sandboxes[ctr.ID()] = true
		}
		if _, ok := n.livePods[labels[cri.LabelPodUID]]; !ok {
			n.found = append(n.found, n.leak("container %s of pod %s/%s runs, but the pod is not live here", ctr.ID(), labels[cri.LabelPodNamespace], labels[cri.LabelPodName]))
		}
	}
	return nil
}

func taskRunning(ctx context.Context, ctr containerd.Container) bool {
	task, err := ctr.Task(ctx, nil)
	if err != nil {
		return false
	}
	st, err := task.Status(ctx)
	return err == nil && st.Status == containerd.Running
}

func (n *nodeState) leak(format string, args ...any) finding {
	return finding{leak, fmt.Sprintf(format, args...)}
}

// findings are the node's leaks and duplicates.
func (n *nodeState) findings(s *snapshot) []finding {
	podNet := 0
	podIPs := map[string]bool{}
	for _, p := range n.livePods {
		if !p.Spec.HostNetwork {
			podNet++
			podIPs[p.Status.PodIP] = true
		}
	}
	var leaks []string
	if v := n.veths(); v != podNet {
		leaks = append(leaks, fmt.Sprintf("%d veths for %d pods on the pod network", v, podNet))
	}
	for _, more := range [][]string{n.netnsLeaks(), n.ipamLeaks(podIPs), n.ruleLeaks(s), n.cgroupLeaks(), n.mountLeaks(), n.shimLeaks()} {
		leaks = append(leaks, more...)
	}
	out := append([]finding(nil), n.found...)
	for _, l := range leaks {
		out = append(out, finding{leak, l})
	}
	return out
}

// netnsLeaks: every pod network namespace is a running sandbox's.
func (n *nodeState) netnsLeaks() []string {
	var out []string
	entries, _ := os.ReadDir(filepath.Join(n.dir, "netns"))
	for _, e := range entries {
		if !n.sandboxes[e.Name()] {
			out = append(out, "network namespace "+e.Name()+" of no running sandbox")
		}
	}
	return out
}

// ipamLeaks: every address host-local holds is a live pod's.
func (n *nodeState) ipamLeaks(podIPs map[string]bool) []string {
	var out []string
	filepath.WalkDir(filepath.Join(n.dir, "agent", "cni", "ipam"), func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if _, perr := netip.ParseAddr(d.Name()); perr == nil && !podIPs[d.Name()] {
				out = append(out, "IPAM holds "+d.Name()+", no live pod's address")
			}
		}
		return nil
	})
	return out
}

// veths counts the pods' veths in the node's network namespace: one a
// pod (the node's own eth0, on the lab's switch, is a veth too).
func (n *nodeState) veths() int {
	out, err := exec.Command("ip", "-n", n.name, "-o", "link", "show", "type", "veth").Output()
	if err != nil {
		return -1
	}
	return strings.Count(string(out), "\n") - strings.Count(string(out), ": eth0@")
}

var (
	serviceComment = regexp.MustCompile(`--comment "?` + ns + `/([a-z0-9-]+)`)
	dnatTarget     = regexp.MustCompile(`-j DNAT --to-destination ([0-9.]+):`)
)

// ruleLeaks: the node's nat rules name only Services that exist and send
// only to live pods (or the servers, for the kubernetes Service).
func (n *nodeState) ruleLeaks(s *snapshot) []string {
	out, err := exec.Command("ip", "netns", "exec", n.name, "iptables-save", "-t", "nat").Output()
	if err != nil {
		return []string{"iptables-save: " + err.Error()}
	}
	allowed := map[string]bool{}
	for _, p := range s.live() {
		allowed[p.Status.PodIP] = true
	}
	for _, node := range s.nodes {
		for _, a := range node.Status.Addresses {
			allowed[a.Address] = true
		}
	}
	var leaks []string
	for _, line := range strings.Split(string(out), "\n") {
		if m := serviceComment.FindStringSubmatch(line); m != nil && !s.services[m[1]] {
			leaks = append(leaks, "a rule for deleted Service "+ns+"/"+m[1]+": "+line)
		}
		if m := dnatTarget.FindStringSubmatch(line); m != nil && !allowed[m[1]] {
			leaks = append(leaks, "a rule sends to "+m[1]+", no live pod: "+line)
		}
	}
	return leaks
}

// cgroupLeaks: every pod cgroup is a live pod's, and every one of its
// container cgroups with a process in it a running container's.
func (n *nodeState) cgroupLeaks() []string {
	root := filepath.Join("/sys/fs/cgroup", "skiff-"+n.name)
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err != nil {
		root = filepath.Join("/sys/fs/cgroup", "pids", "skiff-"+n.name) // cgroup v1: one hierarchy tells
	}
	var out []string
	pods, _ := os.ReadDir(root)
	for _, pod := range pods {
		uid, ok := strings.CutPrefix(pod.Name(), "pod")
		if !pod.IsDir() || !ok {
			continue
		}
		if _, live := n.livePods[uid]; !live {
			out = append(out, "cgroup "+pod.Name()+" of no live pod")
		}
		ctrs, _ := os.ReadDir(filepath.Join(root, pod.Name()))
		for _, ctr := range ctrs {
			procs, _ := os.ReadFile(filepath.Join(root, pod.Name(), ctr.Name(), "cgroup.procs"))
			if ctr.IsDir() && len(strings.TrimSpace(string(procs))) > 0 && !n.running[ctr.Name()] {
				out = append(out, fmt.Sprintf("cgroup %s/%s has processes but no running container", pod.Name(), ctr.Name()))
			}
		}
	}
	return out
}

var (
	uidSegment = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	idSegment  = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// mountLeaks: every mount under the node's dir that names a pod or a
// container is a live pod's or an existing container's.
func (n *nodeState) mountLeaks() []string {
	out, err := exec.Command("findmnt", "-rn", "-o", "TARGET").Output()
	if err != nil {
		return []string{"findmnt: " + err.Error()}
	}
	var leaks []string
	for _, target := range strings.Split(string(out), "\n") {
		if !strings.HasPrefix(target, n.dir+"/") {
			continue
		}
		for _, seg := range strings.Split(target, "/") {
			_, live := n.livePods[seg]
			if uidSegment.MatchString(seg) && !live || idSegment.MatchString(seg) && !n.containers[seg] {
				leaks = append(leaks, "mount "+target+" of no live pod or container")
				break
			}
		}
	}
	return leaks
}

// shimLeaks: every shim of the node serves a running sandbox (one shim a
// pod).
func (n *nodeState) shimLeaks() []string {
	var out []string
	for _, p := range nodeProcesses(n.dir, "containerd-shim-runc-v2") {
		if id := flagValue(p.args, "-id"); !n.sandboxes[id] {
			out = append(out, fmt.Sprintf("shim %d (%s) serves no running sandbox", p.pid, id))
		}
	}
	return out
}

// process is a running program: its pid and arguments.
type process struct {
	pid  int
	args []string
}

// nodeProcesses are the processes of program prog (its base name) whose
// command line names a path under a node's dir.
func nodeProcesses(dir, prog string) []process {
	var out []process
	cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range cmdlines {
		raw, err := os.ReadFile(p)
		args := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
		if err != nil || filepath.Base(args[0]) != prog || !strings.Contains(string(raw), dir+"/") {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p))); err == nil {
			out = append(out, process{pid, args})
		}
	}
	return out
}

func flagValue(args []string, name string) string {
	for i, a := range args {
		if a == name && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}
