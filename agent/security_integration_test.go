package agent

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/skiff-lab/skiff/cri"
)

// statusLines prints what the checks below read of a process's status.
const statusLines = "grep -E '^(CapEff|NoNewPrivs|Seccomp):' /proc/self/status"

// securePod runs one container per security setting; each prints what the
// test checks and exits 0.
func securePod() *v1.Pod {
	user := busybox("user", "sh", "-c", "id; "+statusLines+"; echo port_start=$(cat /proc/sys/net/ipv4/ip_unprivileged_port_start)")
	user.SecurityContext = &v1.SecurityContext{RunAsUser: ptr.To[int64](1000), RunAsGroup: ptr.To[int64](3000), AllowPrivilegeEscalation: ptr.To(false)}
	root := busybox("root", "sh", "-c", "touch /rootfile 2>/dev/null && echo root-writable || echo root-readonly; touch /data/f && echo data-writable; "+statusLines)
	root.SecurityContext = &v1.SecurityContext{ReadOnlyRootFilesystem: ptr.To(true),
		Capabilities:   &v1.Capabilities{Drop: []v1.Capability{"NET_RAW"}},
		SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeUnconfined}}
	root.VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: "/data"}}
	dropAll := busybox("dropall", "sh", "-c", statusLines)
	dropAll.SecurityContext = &v1.SecurityContext{Capabilities: &v1.Capabilities{Drop: []v1.Capability{"ALL"}}}
	priv := busybox("priv", "sh", "-c", statusLines+"; grep ' /sys ' /proc/mounts")
	priv.SecurityContext = &v1.SecurityContext{Privileged: ptr.To(true)}
	nonRoot := busybox("nonroot", "id")
	nonRoot.SecurityContext = &v1.SecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](1000)}
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "secure"}, Spec: v1.PodSpec{
		RestartPolicy: v1.RestartPolicyNever,
		SecurityContext: &v1.PodSecurityContext{FSGroup: ptr.To[int64](2000), SupplementalGroups: []int64{4000},
			Sysctls: []v1.Sysctl{{Name: "net.ipv4.ip_unprivileged_port_start", Value: "0"}}},
		Containers: []v1.Container{user, root, dropAll, priv, nonRoot},
		Volumes:    []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}},
	}}
}

// TestSecurityContext: users and groups, a read-only root, capabilities,
// no_new_privs, seccomp (RuntimeDefault unless asked), privileged, a safe
// sysctl; runAsNonRoot with a root image waits with
// CreateContainerConfigError; an unsafe sysctl gets the pod rejected.
func TestSecurityContext(t *testing.T) {
	n := startTestNode(t)
	secure := n.createPod(securePod())
	refused := busybox("c", "sleep", "3600")
	refused.SecurityContext = &v1.SecurityContext{RunAsNonRoot: ptr.To(true)}
	rootPod := n.createPod(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "as-root"}, Spec: v1.PodSpec{Containers: []v1.Container{refused}}})
	unsafe := n.createPod(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "unsafe-sysctl"}, Spec: v1.PodSpec{
		SecurityContext: &v1.PodSecurityContext{Sysctls: []v1.Sysctl{{Name: "kernel.msgmax", Value: "65536"}}},
		Containers:      []v1.Container{busybox("c", "sleep", "3600")},
	}})

	n.waitPod("default", "secure", "secure succeeded", 90*time.Second, func(p *v1.Pod) bool { return p.Status.Phase == v1.PodSucceeded })
	n.checkSecureLogs(secure)

	w := n.waitPod("default", "as-root", "as-root refused", 60*time.Second, func(p *v1.Pod) bool {
		w := waitingOf(p, "c")
		return w != nil && w.Reason == "CreateContainerConfigError"
	})
	want := fmt.Sprintf(`container has runAsNonRoot and image will run as root (pod: "as-root_default(%s)", container: c)`, rootPod.UID)
	if msg := waitingOf(w, "c").Message; msg != want {
		t.Errorf("waiting message %q, want %q", msg, want)
	}

	rejected := n.waitPod("default", "unsafe-sysctl", "unsafe-sysctl rejected", 30*time.Second, func(p *v1.Pod) bool { return p.Status.Phase == v1.PodFailed })
	if msg := `Pod was rejected: forbidden sysctl: "kernel.msgmax" not allowlisted`; rejected.Status.Reason != "SysctlForbidden" || rejected.Status.Message != msg {
		t.Errorf("rejected with %q %q, want SysctlForbidden %q", rejected.Status.Reason, rejected.Status.Message, msg)
	}
	n.waitEvent(unsafe, "SysctlForbidden")

	// Neither refused pod has a container; the rejected one has nothing at all.
	for _, p := range []*v1.Pod{rootPod, unsafe} {
		all, err := n.runtime().List(context.Background(), string(p.UID))
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range all {
			if c.Kind == cri.KindContainer || p == unsafe {
				t.Errorf("pod %s has %s %s", p.Name, c.Kind, c.Name)
			}
		}
	}
}

// checkSecureLogs checks what securePod's containers printed.
func (n *testNode) checkSecureLogs(pod *v1.Pod) {
	t := n.t
	user := n.containerLog(pod, "user")
	if !regexp.MustCompile(`uid=1000 gid=3000 groups=(\d+,)*2000,3000,4000\b`).MatchString(user) {
		t.Errorf("user: want uid 1000, gid 3000, groups with fsGroup 2000 and 4000:\n%s", user)
	}
	for _, want := range []string{"NoNewPrivs:\t1", "Seccomp:\t2", "port_start=0"} {
		if !strings.Contains(user, want) {
			t.Errorf("user: want %q:\n%s", want, user)
		}
	}
	root := n.containerLog(pod, "root")
	for _, want := range []string{"root-readonly", "data-writable", "NoNewPrivs:\t0", "Seccomp:\t0"} {
		if !strings.Contains(root, want) {
			t.Errorf("root: want %q:\n%s", want, root)
		}
	}
	const netRaw, chown = 13, 0
	if caps := capEff(t, root); caps&(1<<netRaw) != 0 || caps&(1<<chown) == 0 {
		t.Errorf("root: CapEff %x, want CAP_NET_RAW dropped and CAP_CHOWN kept", caps)
	}
	if caps := capEff(t, n.containerLog(pod, "dropall")); caps != 0 {
		t.Errorf("dropall: CapEff %x, want none", caps)
	}
	self, _ := os.ReadFile("/proc/self/status")
	priv := n.containerLog(pod, "priv")
	if got, want := capEff(t, priv), capEff(t, string(self)); got != want {
		t.Errorf("priv: CapEff %x, want the agent's %x", got, want)
	}
	if !strings.Contains(priv, "Seccomp:\t0") || !regexp.MustCompile(`sysfs /sys sysfs rw`).MatchString(priv) {
		t.Errorf("priv: want no seccomp and a writable /sys:\n%s", priv)
	}
	if out := n.containerLog(pod, "nonroot"); !strings.Contains(out, "uid=1000") {
		t.Errorf("nonroot: %q", out)
	}
}

// capEff reads the CapEff line of a /proc/<pid>/status text.
func capEff(t testing.TB, status string) uint64 {
	t.Helper()
	m := regexp.MustCompile(`CapEff:\s*([0-9a-f]+)`).FindStringSubmatch(status)
	if m == nil {
		t.Fatalf("no CapEff in %q", status)
	}
	v, err := strconv.ParseUint(m[1], 16, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestHostNetworkPod: a host-network pod (also host PID and IPC) has the
// node's namespaces, its IP, hostname and hosts file, and no network
// namespace or IP allocation of its own, while a pod beside it keeps its own.
// Each has its hostname in /etc/hostname.
func TestHostNetworkPod(t *testing.T) {
	n := startTestNode(t)
	bridgedPod := n.createPod(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bridged"}, Spec: v1.PodSpec{
		TerminationGracePeriodSeconds: ptr.To[int64](1),
		Containers:                    []v1.Container{busybox("c", "sh", "-c", "echo ETC_HOSTNAME=$(cat /etc/hostname); exec sleep 3600")}}})
	bridged := n.waitPod("default", "bridged", "bridged running", 60*time.Second, running)
	n.waitLog(bridgedPod, "c", "ETC_HOSTNAME=bridged\n")

	show := "readlink /proc/self/ns/net; readlink /proc/self/ns/ipc; grep PPid /proc/self/status; cat /proc/net/dev; head -1 /etc/hosts; " +
		"echo ETC_HOSTNAME=$(cat /etc/hostname); echo HOSTNAME=$HOSTNAME; exec sleep 3600"
	host := n.createPod(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "hostnet"}, Spec: v1.PodSpec{
		HostNetwork: true, HostPID: true, HostIPC: true, TerminationGracePeriodSeconds: ptr.To[int64](1),
		Containers: []v1.Container{busybox("c", "sh", "-c", show)}}})
	p := n.waitPod("default", "hostnet", "hostnet running", 60*time.Second, running)
	if p.Status.PodIP != n.cfg.NodeIP || p.Status.PodIP != p.Status.HostIP || bridged.Status.PodIP == n.cfg.NodeIP {
		t.Errorf("hostnet pod IP %q, host IP %q; bridged pod IP %q", p.Status.PodIP, p.Status.HostIP, bridged.Status.PodIP)
	}
	n.waitLog(host, "c", "HOSTNAME=")
	out := n.containerLog(host, "c")
	hostname, _ := os.Hostname()
	netns, ipcns := nodeNamespace(t, "net"), nodeNamespace(t, "ipc")
	for _, want := range []string{netns, ipcns, " lo:", n.cfg.Bridge + ":", "# Kubernetes-managed hosts file (host network).", "\nHOSTNAME=" + hostname, "ETC_HOSTNAME=" + hostname + "\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("hostnet: want %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "PPid:\t1\n") {
		t.Errorf("hostnet: the shell is PID 1, not in the node's PID namespace:\n%s", out)
	}
	// Only the bridged pod has a network namespace and an address.
	if entries, _ := os.ReadDir(n.cfg.NetNSDir); len(entries) != 1 {
		t.Errorf("%d network namespaces, want the bridged pod's only", len(entries))
	}
	if ips := allocatedIPs(n.cfg.dir("cni", "ipam")); len(ips) != 1 || ips[0] != bridged.Status.PodIP {
		t.Errorf("allocated IPs %v, want only %s", ips, bridged.Status.PodIP)
	}
	n.deleteAndCheckClean(bridged.Status.PodIP, "hostnet", "bridged")
}

// nodeNamespace names the node's namespace of a kind ("net:[4026531840]"),
// as this thread sees it: /proc/self is the main thread, which CNI code may
// have left in a pod's network namespace.
func nodeNamespace(t *testing.T, kind string) string {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	ns, err := os.Readlink("/proc/thread-self/ns/" + kind)
	if err != nil {
		t.Fatal(err)
	}
	return ns
}

// allocatedIPs lists the addresses host-local IPAM has handed out under dir.
func allocatedIPs(dir string) []string {
	files, _ := filepath.Glob(filepath.Join(dir, "*", "*"))
	var ips []string
	for _, f := range files {
		if ip := filepath.Base(f); net.ParseIP(ip) != nil {
			ips = append(ips, ip)
		}
	}
	return ips
}
