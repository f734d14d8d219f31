package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/skiff-lab/skiff/controlplane"
	"github.com/skiff-lab/skiff/test/labtest"
)

// TestServersFormAnEtcdCluster starts a server with --cluster-init and
// joins two more to it with its server token (on 127.0.0.1, .2 and .3):
// their etcd members form one cluster of three voters, what one server
// writes the others read, and the kubernetes endpoints list all three.
// The first one's certificate holds its --tls-san names. A server with a
// token of the wrong CA, or a wrong secret, is refused.
// The first server killed, the other two go on (writes, controllers)
// and drop its address; restarted, it comes back as a member.
func TestServersFormAnEtcdCluster(t *testing.T) {
	servers := haServers(t, "--tls-san", "skiff.example,10.1.2.3")
	first, second, third := servers[0], servers[1], servers[2]
	for _, name := range []string{"skiff.example", "10.1.2.3"} {
		if err := servesAs(first, name); err != nil {
			t.Errorf("--tls-san %s: %v", name, err)
		}
	}
	token := readToken(t, first.dataDir, "server-token")

	members := etcdMembers(t, second)
	if len(members) != 3 || slices.Contains(members, "learner") {
		t.Fatalf("etcd members: %v, want three voters", members)
	}
	second.mustIn("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: shared}\ndata: {from: s2}\n", "create", "-f", "-")
	for _, s := range servers {
		if got := s.must("get", "configmap", "shared", "-o", "jsonpath={.data.from}"); got != "s2" {
			t.Errorf("%s reads %q", s.server(), got)
		}
	}
	waitForAPIEndpoints(t, third, "127.0.0.1 127.0.0.2 127.0.0.3")

	refused(t, first, "K10"+strings.Repeat("0", 8)+token[11:], "not sending the token")
	id, _, _ := strings.Cut(token[strings.Index(token, "::")+2:], ".")
	refused(t, first, token[:strings.Index(token, "::")+2]+id+"."+strings.Repeat("x", 16), "refused the token")

	first.kill9()
	// Until the survivors have elected an etcd leader (about a second),
	// a write may fail: a client retries it, as client-go's callers do.
	waitUntil(t, "a write through the survivors", func() bool {
		_, errOut, err := second.kubectlIn("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: after}\n", "apply", "-f", "-")
		if err != nil {
			t.Logf("write: %s", errOut)
		}
		return err == nil
	})
	waitForAPIEndpoints(t, third, "127.0.0.2 127.0.0.3")
	second.mustIn(deploymentYAML, "create", "-f", "-")
	waitUntil(t, "the surviving controllers to make the ReplicaSet", func() bool {
		out, _, _ := third.kubectl("get", "replicasets", "-l", "app=shop", "-o", "name")
		return strings.TrimSpace(out) != ""
	})

	first.start()
	if got := first.must("get", "configmap", "after", "-o", "name"); got != "configmap/after\n" {
		t.Errorf("the restarted server reads %q", got)
	}
	waitForAPIEndpoints(t, second, "127.0.0.1 127.0.0.2 127.0.0.3")
	if members := etcdMembers(t, first); len(members) != 3 {
		t.Errorf("etcd members after the restart: %v", members)
	}

	// A server gone for good is removed by name by the others.
	third.stop()
	name := readToken(t, third.dataDir, "etcd-name")
	if out := runSkiff(t, "etcd", "member", "remove", name, "--data-dir", first.dataDir); !strings.Contains(out, name+" (") {
		t.Errorf("member remove: %s", out)
	}
	if out := runSkiff(t, "etcd", "member", "list", "--data-dir", second.dataDir); strings.Contains(out, name) || strings.Count(out, "voter") != 2 {
		t.Errorf("members after the removal:\n%s", out)
	}

	// A stopped server leaves by itself; the last one cannot.
	second.stop()
	runSkiff(t, "server", "--leave", "--data-dir", second.dataDir, "--disable-agent", "--bind-address", "127.0.0.2",
		"--etcd-peer-port", flagValue(second.args, "--etcd-peer-port"))
	if members := etcdMembers(t, first); len(members) != 1 {
		t.Errorf("members after a server left: %v", members)
	}
	first.mustIn("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: alone}\n", "create", "-f", "-")
	first.stop()
	out, err := exec.Command(skiffBin, "server", "--leave", "--data-dir", first.dataDir, "--disable-agent").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "the last member") {
		t.Errorf("the last server leaving: %v\n%s", err, out)
	}
}

// TestEtcdSnapshots: scheduled snapshots are taken and the newest kept;
// one saved on demand, restored into a fresh data dir, brings back a
// cluster with every object.
func TestEtcdSnapshots(t *testing.T) {
	s := startCluster(t, "--etcd-snapshot-schedule", "@every 1s", "--etcd-snapshot-retention", "2")
	s.mustIn("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: kept}\ndata: {a: b}\n", "create", "-f", "-")
	file := filepath.Join(t.TempDir(), "snap.db")
	if out := runSkiff(t, "etcd", "snapshot", "save", file, "--data-dir", s.dataDir); !strings.Contains(out, "snapshot saved") {
		t.Errorf("snapshot save: %s", out)
	}
	scheduled := filepath.Join(s.dataDir, "server", "db", "snapshots")
	time.Sleep(4 * time.Second)
	// A snapshot being written (".part") is not yet one of the kept.
	entries, err := os.ReadDir(scheduled)
	var taken []string
	for _, e := range entries {
		if !strings.Contains(e.Name(), ".part") {
			taken = append(taken, e.Name())
		}
	}
	if err != nil || len(taken) != 2 {
		t.Errorf("scheduled snapshots: %v %v, want the newest 2", taken, err)
	}
	s.stop()

	dir := t.TempDir()
	if out := runSkiff(t, "etcd", "snapshot", "restore", file, "--data-dir", dir); !strings.Contains(out, "restored") {
		t.Errorf("snapshot restore: %s", out)
	}
	restored := launch(t, dir, "--disable-agent")
	if got := restored.must("get", "configmap", "kept", "-o", "jsonpath={.data.a}"); got != "b" {
		t.Errorf("the restored cluster has %q", got)
	}
	restored.mustIn("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: new}\n", "create", "-f", "-")
}

// flagValue is the last value of flag in args.
func flagValue(args []string, flag string) string {
	v := ""
	for i, a := range args[:len(args)-1] {
		if a == flag {
			v = args[i+1]
		}
	}
	return v
}

// servesAs checks that s's serving certificate is valid for name.
func servesAs(s *cluster, name string) error {
	rc, err := clientcmd.BuildConfigFromFlags("", s.kubeconfig)
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(rc.CAData)
	conn, err := tls.Dial("tcp", strings.TrimPrefix(rc.Host, "https://"), &tls.Config{RootCAs: pool, ServerName: name})
	if err != nil {
		return err
	}
	return conn.Close()
}

// readToken reads a token file of a server's data dir.
func readToken(t testing.TB, dataDir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dataDir, "server", name))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// etcdMembers lists the etcd members that s's member knows: "name" for a
// voter, "learner" for a learner.
func etcdMembers(t *testing.T, s *cluster) []string {
	t.Helper()
	c, err := controlplane.LocalEtcdClient(s.dataDir)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	list, err := c.MemberList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range list.Members {
		out = append(out, map[bool]string{true: "learner", false: m.Name}[m.IsLearner])
	}
	return out
}

// waitForAPIEndpoints waits until default/kubernetes's Endpoints and
// EndpointSlice both list want (addresses, space-separated).
func waitForAPIEndpoints(t *testing.T, s *cluster, want string) {
	t.Helper()
	var got string
	ok := func() bool {
		ep, err1 := s.client().CoreV1().Endpoints("default").Get(context.Background(), "kubernetes", metav1.GetOptions{})
		slice, err2 := s.client().DiscoveryV1().EndpointSlices("default").Get(context.Background(), "kubernetes", metav1.GetOptions{})
		if err1 != nil || err2 != nil || len(ep.Subsets) != 1 {
			got = fmt.Sprint(err1, err2)
			return false
		}
		var a, b []string
		for _, addr := range ep.Subsets[0].Addresses {
			a = append(a, addr.IP)
		}
		for _, e := range slice.Endpoints {
			b = append(b, e.Addresses...)
		}
		got = strings.Join(a, " ") + " / " + strings.Join(b, " ")
		return strings.Join(a, " ") == want && strings.Join(b, " ") == want
	}
	deadline := time.Now().Add(40 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("kubernetes endpoints %s, want %s", got, want)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// refused runs a server joining first with token and wants it to exit
// with an error that says why.
func refused(t *testing.T, first *cluster, token, why string) {
	t.Helper()
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := first.command(ctx, skiffBin, "server", "--data-dir", dir, "--disable-agent", "--bind-address", "127.0.0.4",
		"--write-kubeconfig", "", "--server", first.server(), "--token", token).CombinedOutput()
	if err == nil || !strings.Contains(string(out), why) {
		t.Errorf("a server joining with %s: %v, want refused (%q):\n%s", token, err, why, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "server", "tls", "ca.key")); err == nil {
		t.Errorf("a refused server got the cluster CA's key")
	}
}

// TestAgentFailsOver runs a lab of three servers and an agent joined to
// the first. The first killed, the agent goes on through the others: its
// pod keeps running untouched, a pod created through another server
// (scheduled once a survivor holds the leader lease) starts on it, and
// its Lease stays renewed. Each survivor explains both pods' whole
// journeys. The first restarted, it is listed again, and explains them
// too.
func TestAgentFailsOver(t *testing.T) {
	l := startLab(t, labtest.Config{Agents: 1, Servers: 3})
	second := &cluster{t: t, dataDir: l.dataDir, kubeconfig: filepath.Join(l.Dir, "lab-server2", "admin.kubeconfig")}
	waitForAPIEndpoints(t, second, "10.213.0.1 10.213.0.250 10.213.0.251")
	l.mustIn(pinnedPod("before", "lab-node1"), "apply", "-f", "-")
	waitForRunning(t, l.cluster, "before")
	container := l.must("get", "pod", "before", "-o", "jsonpath={.status.containerStatuses[0].containerID}")
	third := &cluster{t: t, dataDir: l.dataDir, kubeconfig: filepath.Join(l.Dir, "lab-server3", "admin.kubeconfig")}
	checkWholeJourneys(t, []*cluster{second, third}, "before")

	if out, err := l.Script("kill", "lab-server"); err != nil {
		t.Fatalf("lab.sh kill: %v\n%s", err, out)
	}
	killed := time.Now()
	second.mustIn(pinnedPod("after", "lab-node1"), "apply", "-f", "-")
	waitForRunning(t, second, "after")
	t.Logf("a pod created after the kill ran in %s", time.Since(killed).Round(time.Second))
	waitUntil(t, "the node's Lease renewed through another server", func() bool {
		out, _, err := second.kubectl("get", "lease", "-n", "kube-node-lease", "lab-node1", "-o", "jsonpath={.spec.renewTime}")
		renewed, perr := time.Parse(time.RFC3339Nano, out)
		return err == nil && perr == nil && renewed.After(killed.Add(time.Second))
	})
	if got := second.must("get", "pod", "before", "-o", "jsonpath={.status.containerStatuses[0].containerID} {.status.containerStatuses[0].restartCount}"); got != container+" 0" {
		t.Errorf("the pod from before the kill: %q, was %q", got, container)
	}
	checkWholeJourneys(t, []*cluster{second, third}, "before", "after")

	if out, err := l.Script("restart", "lab-server"); err != nil {
		t.Fatalf("lab.sh restart: %v\n%s", err, out)
	}
	waitForAPIEndpoints(t, second, "10.213.0.1 10.213.0.250 10.213.0.251")
	// Restarted, it has read the journeys back from the others.
	checkWholeJourneys(t, []*cluster{l.cluster}, "before", "after")
	checkAgentWithoutServers(t, l, second, container)

	// A server's Node deleted, its etcd member is removed, and it stops.
	second.must("delete", "node", "lab-server3")
	waitUntil(t, "lab-server3's member removed", func() bool {
		c, err := controlplane.LocalEtcdClient(filepath.Join(l.Dir, "lab-server2"))
		if err != nil {
			return false
		}
		defer c.Close()
		list, err := c.MemberList(context.Background())
		return err == nil && len(list.Members) == 2
	})
	waitUntil(t, "lab-server3 to stop", func() bool {
		out, _ := l.Script("status")
		return strings.Contains(out, "lab-server3 10.213.0.250 skiff not running")
	})
	waitForAPIEndpoints(t, second, "10.213.0.1 10.213.0.251")
}

// checkWholeJourneys: each of servers explains each pod's whole journey
// (created, scheduled, ready), whichever server took each step: the
// servers forward them to each other, and a server's loss loses none.
func checkWholeJourneys(t *testing.T, servers []*cluster, pods ...string) {
	t.Helper()
	whole := []string{"apiserver.create", "scheduler.schedule", "agent.ready"}
	for _, s := range servers {
		for _, pod := range pods {
			e := explainUntil(t, s, pod, whole...)
			if slices.ContainsFunc(whole, func(step string) bool { return !hasStep(e, step) }) {
				t.Errorf("%s explains %s with %v, want %v", s.kubeconfig, pod, e.StepNames(), whole)
			}
		}
	}
}

// checkAgentWithoutServers: with every server down, the agent restarted
// waits for one (it does not exit), its pod keeps running, and the node's
// DNS answers the pod from the catalog the agent saved (asked through
// crictl exec, as kubectl cannot reach the pod); once the servers are back the node is
// Ready and the pod's container unchanged.
func checkAgentWithoutServers(t *testing.T, l *lab, second *cluster, container string) {
	kubernetesIP := second.must("get", "service", "kubernetes", "-o", "jsonpath={.spec.clusterIP}")
	servers := []string{"lab-server", "lab-server2", "lab-server3", "lab-node1"}
	for _, node := range servers {
		if out, err := l.Script("kill", node); err != nil {
			t.Fatalf("lab.sh kill %s: %v\n%s", node, err, out)
		}
	}
	if out, err := l.Script("restart", "lab-node1"); err != nil {
		t.Fatalf("lab.sh restart lab-node1: %v\n%s", err, out)
	}
	time.Sleep(8 * time.Second)
	if out, _ := l.Script("status"); !regexp.MustCompile(`(?m)^lab-node1 .*skiff pid `).MatchString(out) {
		t.Errorf("with no server reachable, the restarted agent stopped:\n%s", out)
	}
	id := strings.TrimPrefix(container, "containerd://")
	// crictl runs in the node's network namespace, where the CRI streaming
	// server listens on 127.0.0.1.
	out, err := exec.Command("nsenter", "--net=/run/netns/lab-node1", skiffBin, "crictl", "--data-dir", l.NodeDir("lab-node1"),
		"exec", id, "nslookup", "kubernetes.default.svc.cluster.local").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Address: "+kubernetesIP) {
		t.Errorf("with no server reachable, nslookup kubernetes.default from a pod: %v\n%s, want %s", err, out, kubernetesIP)
	}
	for _, node := range servers[:3] {
		if out, err := l.Script("restart", node); err != nil {
			t.Fatalf("lab.sh restart %s: %v\n%s", node, err, out)
		}
	}
	waitUntil(t, "lab-node1 Ready again", func() bool {
		out, _, err := second.kubectl("get", "node", "lab-node1", "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`)
		return err == nil && out == "True"
	})
	if got := second.must("get", "pod", "before", "-o", "jsonpath={.status.containerStatuses[0].containerID} {.status.containerStatuses[0].restartCount}"); got != container+" 0" {
		t.Errorf("the pod from before the servers went down: %q, was %q", got, container)
	}
}

// pinnedPod is a pod of the test image that the scheduler must put on
// node.
func pinnedPod(name, node string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  nodeSelector: {kubernetes.io/hostname: %s}
  terminationGracePeriodSeconds: 1
  containers: [{name: c, image: %s, imagePullPolicy: Never, command: [sleep, "3600"]}]
`, name, node, e2eImage)
}

// waitForRunning waits up to 90 s for the pod to be Running.
func waitForRunning(t *testing.T, c *cluster, pod string) {
	t.Helper()
	waitUntilFor(t, pod+" Running", 90*time.Second, func() bool {
		out, _, _ := c.kubectl("get", "pod", pod, "-o", "jsonpath={.status.phase}")
		return out == "Running"
	})
}
