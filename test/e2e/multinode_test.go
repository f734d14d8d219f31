package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skiff-lab/skiff/controlplane/servertest"
	"github.com/skiff-lab/skiff/jointoken"
	"github.com/skiff-lab/skiff/test/labtest"
)

// webManifest is six web pods (busybox httpd: / answers the pod's name,
// /cgi-bin/ip the client's address) that leave an unreachable node after
// 5 s, and one more pinned to lab-node1; Services over them of every kind.
var webManifest = strings.Join([]string{
	labDeployment("web", 6, `
      tolerations:
      - {key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute, tolerationSeconds: 5}
      - {key: node.kubernetes.io/not-ready, operator: Exists, effect: NoExecute, tolerationSeconds: 5}`),
	labDeployment("solo", 1, `
      nodeSelector: {kubernetes.io/hostname: lab-node1}`),
	labService("web", "web", 80),
	labService("web-np", "web", 80, "type: NodePort"),
	labService("solo", "solo", 80, "type: NodePort", "externalTrafficPolicy: Local"),
	labService("web-lb", "web", 8088, "type: LoadBalancer"),
}, "\n---\n")

// labDeployment is a Deployment of web pods; spec is YAML added to their
// pod spec.
func labDeployment(name string, replicas int, spec string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: %[1]s}
spec:
  replicas: %[2]d
  selector: {matchLabels: {app: %[1]s}}
  template:
    metadata: {labels: {app: %[1]s}}
    spec:%[3]s
      containers:
      - name: web
        image: %[4]s
        command: ["sh", "-c", "%[5]s"]
        ports: [{name: http, containerPort: 8080}]
        readinessProbe: {httpGet: {path: /, port: http}, periodSeconds: 1}`, name, replicas, spec, e2eImage, webScript)
}

// labService is a Service on port to the pods labelled app, with spec's
// lines added to its spec.
func labService(name, app string, port int, spec ...string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Service
metadata: {name: %s}
spec:
  selector: {app: %s}
  ports: [{port: %d, targetPort: http}]
  %s`, name, app, port, strings.Join(spec, "\n  "))
}

const webScript = `mkdir -p /www/cgi-bin && hostname > /www/index.html && ` +
	`printf '#!/bin/sh\\necho\\necho $REMOTE_ADDR\\n' > /www/cgi-bin/ip && chmod +x /www/cgi-bin/ip && ` +
	`echo serving on $(hostname) && exec httpd -f -p 8080 -h /www`

// labPod is one pod as the test sees it.
type labPod struct{ name, node, ip string }

// TestMultiNode runs a cluster of four nodes (a server and three agents
// joined with its token, lab.sh) and checks that it is one cluster: pods
// spread over the nodes reach each other by pod IP with their own source
// address, Services and DNS work across nodes, NodePorts on every node,
// logs/exec/port-forward reach every node, a pod's client-go program
// reaches the API with its service account, StatefulSets keep their
// pods' data in local-path volumes and claims bind as they should, a
// partitioned node's pods are replaced and cleaned up once it heals, and
// DaemonSets, Jobs, CronJobs, `kubectl drain` and `kubectl autoscale`
// behave as kubectl users expect.
func TestMultiNode(t *testing.T) {
	l := startLab(t, labtest.Config{Agents: 3, ServerArgs: []string{"--node-monitor-grace-period=25s"}})
	checkLabNodes(t, l)
	l.cluster.mustIn(webManifest, "apply", "-f", "-")
	pods := l.webPods(t, 6)
	checkPodToPod(t, l, pods)
	checkServiceAcrossNodes(t, l, pods)
	checkNodePorts(t, l)
	checkInClusterClient(t, l)
	checkExtensions(t, l)
	checkStreamsOnEveryNode(t, l, pods)
	checkStatefulStorage(t, l)
	checkClaims(t, l)
	checkPartition(t, l)
	checkWorkloads(t, l)
	checkAutoscaling(t, l)
	checkBadJoins(t, l)
}

// checkLabNodes: every node joined, with its lab address, a pod CIDR and
// Ready, as `kubectl get nodes` shows.
func checkLabNodes(t *testing.T, l *lab) {
	wide := l.must("get", "nodes", "-o", "wide")
	cols := l.must("get", "nodes", "-o", `custom-columns=NAME:.metadata.name,CIDR:.spec.podCIDR,READY:.status.conditions[?(@.type=="Ready")].status`, "--no-headers")
	for _, n := range l.Nodes() {
		if !regexp.MustCompile(`(?m)^` + n + `\s+Ready\s.*\s` + regexp.QuoteMeta(l.IP(n)) + `\s`).MatchString(wide) {
			t.Errorf("%s is not Ready at %s:\n%s", n, l.IP(n), wide)
		}
		if !regexp.MustCompile(`(?m)^` + n + `\s+10\.244\.\d+\.0/24\s+True$`).MatchString(cols) {
			t.Errorf("%s has no pod CIDR:\n%s", n, cols)
		}
	}
}

// webPods waits for want ready web pods and returns them; every node must
// run at least one.
func (l *lab) webPods(t *testing.T, want int) []labPod {
	t.Helper()
	var pods []labPod
	waitUntilFor(t, "web pods ready", 2*time.Minute, func() bool {
		pods = l.readyPods("app=web")
		return len(pods) == want
	})
	for _, n := range l.Nodes() {
		if !slices.ContainsFunc(pods, func(p labPod) bool { return p.node == n }) {
			t.Errorf("no web pod on %s: %v", n, pods)
		}
	}
	return pods
}

// readyPods lists the ready, not terminating pods with label sel.
func (l *lab) readyPods(sel string) []labPod {
	out, _, _ := l.kubectl("get", "pods", "-l", sel, "-o", `jsonpath={range .items[*]}{.metadata.name} {.spec.nodeName} {.status.podIP} `+
		`{.metadata.deletionTimestamp}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}`)
	var pods []labPod
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) == 4 && f[3] == "True" {
			pods = append(pods, labPod{f[0], f[1], f[2]})
		}
	}
	return pods
}

// on returns the first pod on node.
func on(pods []labPod, node string) labPod {
	i := slices.IndexFunc(pods, func(p labPod) bool { return p.node == node })
	return pods[max(i, 0)]
}

// fetch runs wget in pod and returns what it got ("" on failure).
func (l *lab) fetch(pod, url string) string {
	out, _, _ := l.kubectl("exec", pod, "--", "timeout", "3", "wget", "-q", "-O-", url)
	return strings.TrimSpace(out)
}

// checkPodToPod: a pod on each node reaches a pod on every other node by
// its IP, which sees the client pod's own address.
func checkPodToPod(t *testing.T, l *lab, pods []labPod) {
	for _, from := range l.Nodes() {
		src := on(pods, from)
		for _, to := range l.Nodes() {
			if to == from {
				continue
			}
			dst := on(pods, to)
			got := strings.Trim(strings.TrimPrefix(l.fetch(src.name, "http://"+dst.ip+":8080/cgi-bin/ip"), "[::ffff:"), "]")
			if got != src.ip {
				t.Errorf("%s (%s, %s) → %s (%s, %s): the server saw %q, want the pod's own address", src.name, from, src.ip, dst.name, to, dst.ip, got)
			}
		}
	}
}

// checkServiceAcrossNodes: a pod resolves the web Service by name and its
// connections reach backends on the other nodes; a LoadBalancer Service
// answers on its ingress addresses.
func checkServiceAcrossNodes(t *testing.T, l *lab, pods []labPod) {
	client := on(pods, "lab-node2")
	out := l.must("exec", client.name, "--", "sh", "-c", "for i in $(seq 30); do timeout 3 wget -q -O- http://web.default.svc.cluster.local/; done")
	answers := strings.Fields(out)
	remote := 0
	for _, a := range answers {
		i := slices.IndexFunc(pods, func(p labPod) bool { return p.name == a })
		if i < 0 {
			t.Errorf("web answered %q, not a web pod", a)
		} else if pods[i].node != client.node {
			remote++
		}
	}
	if len(answers) != 30 || remote == 0 {
		t.Errorf("30 requests to web from %s: %d answers, %d from other nodes: %v", client.node, len(answers), remote, answers)
	}
	var ingress []string
	waitUntil(t, "web-lb's ingress", func() bool {
		ingress = strings.Fields(l.must("get", "svc", "web-lb", "-o", "jsonpath={.status.loadBalancer.ingress[*].ip}"))
		return len(ingress) == len(l.Nodes())
	})
	for _, ip := range ingress {
		if got := l.fetch(client.name, "http://"+ip+":8088/"); !strings.HasPrefix(got, "web-") {
			t.Errorf("web-lb at %s:8088 from a pod: %q", ip, got)
		}
	}
}

// checkNodePorts: web-np answers on every node's address; solo (one pod on
// lab-node1, externalTrafficPolicy Local) only on lab-node1's.
func checkNodePorts(t *testing.T, l *lab) {
	port := l.must("get", "svc", "web-np", "-o", "jsonpath={.spec.ports[0].nodePort}")
	solo := l.must("get", "svc", "solo", "-o", "jsonpath={.spec.ports[0].nodePort}")
	waitUntil(t, "solo's pod ready", func() bool { return len(l.readyPods("app=solo")) == 1 })
	for _, n := range l.Nodes() {
		if got := get("http://" + l.IP(n) + ":" + port + "/"); !strings.HasPrefix(got, "web-") {
			t.Errorf("NodePort %s on %s: %q", port, n, got)
		}
		got := get("http://" + l.IP(n) + ":" + solo + "/")
		if n == "lab-node1" != strings.HasPrefix(got, "solo-") {
			t.Errorf("Local NodePort %s on %s answered %q; want an answer only on lab-node1, where its pod runs", solo, n, got)
		}
	}
}

// checkStreamsOnEveryNode: logs, exec and port-forward reach a pod on
// every node through the API server, which checks each node's serving
// certificate.
func checkStreamsOnEveryNode(t *testing.T, l *lab, pods []labPod) {
	for _, n := range l.Nodes() {
		p := on(pods, n)
		if out := l.must("logs", p.name); !strings.Contains(out, "serving on "+p.name) {
			t.Errorf("logs of %s on %s: %q", p.name, n, out)
		}
		if out := strings.TrimSpace(l.must("exec", p.name, "--", "hostname")); out != p.name {
			t.Errorf("exec in %s on %s: %q", p.name, n, out)
		}
		if got := l.portForward(t, p.name); got != p.name {
			t.Errorf("port-forward to %s on %s: %q", p.name, n, got)
		}
	}
}

// portForward fetches / from pod's port 8080 through kubectl port-forward.
func (l *lab) portForward(t *testing.T, pod string) string {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	port := servertest.FreePorts(t, 1)[0]
	out, cmd := l.kubectlStart(ctx, nil, "port-forward", "pod/"+pod, fmt.Sprintf("%d:8080", port))
	defer func() { cancel(); _ = cmd.Wait() }()
	waitUntilFor(t, "port-forward listening", 20*time.Second, func() bool { return strings.Contains(out.String(), "Forwarding from") })
	return strings.TrimSpace(get(fmt.Sprintf("http://127.0.0.1:%d/", port)))
}

// checkPartition cuts lab-node3 off: it turns Unknown, its web pods are
// replaced on the other nodes and the Service stops sending to it; healed,
// it is Ready again and its old pods are gone, six web pods in all.
func checkPartition(t *testing.T, l *lab) {
	const node = "lab-node3"
	var old []string
	for _, p := range l.readyPods("app=web") {
		if p.node == node {
			old = append(old, p.name)
		}
	}
	if out, err := l.Script("partition", node); err != nil {
		t.Fatalf("lab.sh partition: %v\n%s", err, out)
	}
	if out, _ := l.Script("status"); !regexp.MustCompile(`(?m)^`+node+` `+regexp.QuoteMeta(l.IP(node))+` link down, skiff pid \d+, \d+ processes$`).MatchString(out) ||
		!strings.Contains(out, "lab-server "+l.IP("lab-server")+" link up") {
		t.Errorf("lab.sh status with %s cut off:\n%s", node, out)
	}
	waitUntil(t, node+" Unknown", func() bool { return l.nodeReady(node) == "Unknown" })
	var pods []labPod
	waitUntilFor(t, "web pods replaced off "+node, 90*time.Second, func() bool {
		pods = l.readyPods("app=web")
		return len(pods) == 6 && !slices.ContainsFunc(pods, func(p labPod) bool { return p.node == node })
	})
	client := on(pods, "lab-server")
	answers := strings.Fields(l.must("exec", client.name, "--", "sh", "-c", "for i in $(seq 20); do timeout 3 wget -q -O- http://web/ || echo failed; done"))
	if slices.Contains(answers, "failed") || slices.ContainsFunc(answers, func(a string) bool { return slices.Contains(old, a) }) {
		t.Errorf("web with %s cut off: 20 requests answered by %v (%s's pods: %v)\n%s", node, answers, node, old,
			l.must("get", "endpointslices", "-l", "kubernetes.io/service-name=web", "-o", "yaml"))
	}
	if out, err := l.Script("heal", node); err != nil {
		t.Fatalf("lab.sh heal: %v\n%s", err, out)
	}
	waitUntil(t, node+" Ready again", func() bool { return l.nodeReady(node) == "True" })
	waitUntilFor(t, node+"'s old pods cleaned up", 90*time.Second, func() bool {
		out, _, _ := l.kubectl("get", "pods", "-l", "app=web", "-o", "name")
		return !slices.ContainsFunc(old, func(name string) bool { return strings.Contains(out, "pod/"+name+"\n") })
	})
	if pods := l.readyPods("app=web"); len(pods) != 6 {
		t.Errorf("%d ready web pods after the heal, want 6: %v\n%s", len(pods), pods, l.must("get", "pods", "-o", "wide"))
	}
}

// nodeReady is the status of node's Ready condition.
func (l *lab) nodeReady(node string) string {
	out, _, _ := l.kubectl("get", "node", node, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`)
	return out
}

// checkBadJoins: agents with a wrong secret, a wrong CA hash or an
// expired token do not join, say why, and leave no Node.
func checkBadJoins(t *testing.T, l *lab) {
	good, err := os.ReadFile(filepath.Join(l.Dir, "lab-server", "server", "token"))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jointoken.Parse(strings.TrimSpace(string(good)))
	if err != nil {
		t.Fatal(err)
	}
	wrongSecret, wrongCA := tok, tok
	wrongSecret.Secret = "0000000000000000"
	wrongCA.CAHash = "sha256:" + strings.Repeat("0", 64)
	expired := strings.TrimSpace(runSkiff(t, "token", "create", "--ttl", "1s", "--kubeconfig", l.kubeconfig))
	time.Sleep(2 * time.Second)
	for _, c := range []struct{ what, token, want string }{
		{"a wrong secret", wrongSecret.String(), "Unauthorized"},
		{"a token pinning another CA", wrongCA.String(), "not sending the token"},
		{"an expired token", expired, "Unauthorized"},
	} {
		dir := t.TempDir()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		out, err := exec.CommandContext(ctx, skiffBin, "agent", "--server", "https://"+l.IP("lab-server")+":6443", "--token", c.token,
			"--node-name", "lab-bad", "--data-dir", dir, "--kubeconfig", filepath.Join(dir, "kubeconfig")).CombinedOutput()
		cancel()
		if err == nil || !strings.Contains(string(out), c.want) {
			t.Errorf("joining with %s: %v, want an error with %q\n%s", c.what, err, c.want, out)
		}
	}
	if out, _, err := l.kubectl("get", "node", "lab-bad"); err == nil {
		t.Errorf("a refused join made a Node: %s", out)
	}
}

// runSkiff runs the skiff binary and returns its output.
func runSkiff(t testing.TB, args ...string) string {
	t.Helper()
	out, err := exec.Command(skiffBin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("skiff %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestMultiNodeRouted runs two nodes on subnets of their own, routed by
// the host (they share no L2 segment). With host-gw each says it cannot
// route to the other's pods (an event) instead of sending them to the
// gateway; with VXLAN, pods on the two nodes reach each other by pod IP
// with their own addresses.
func TestMultiNodeRouted(t *testing.T) {
	t.Run("host-gw", func(t *testing.T) {
		l := startLab(t, labtest.Config{Agents: 1, Routed: true})
		waitUntil(t, "PodRouteUnreachable on both nodes", func() bool {
			out, _, _ := l.kubectl("get", "events", "-A", "--field-selector", "reason=PodRouteUnreachable",
				"-o", `jsonpath={range .items[*]}{.involvedObject.name}{"\n"}{end}`)
			return strings.Contains(out, "lab-server\n") && strings.Contains(out, "lab-node1\n")
		})
		for _, n := range l.Nodes() {
			if out := nodeRoutes(t, n); strings.Contains(out, "10.244.") {
				t.Errorf("%s routes pods through the gateway:\n%s", n, out)
			}
		}
	})
	t.Run("vxlan", func(t *testing.T) {
		vxlan := []string{"--pod-network=vxlan"}
		l := startLab(t, labtest.Config{Agents: 1, Routed: true, ServerArgs: vxlan, AgentArgs: vxlan})
		l.mustIn(labDeployment("a", 1, "\n      nodeSelector: {kubernetes.io/hostname: lab-server}")+"\n---\n"+
			labDeployment("b", 1, "\n      nodeSelector: {kubernetes.io/hostname: lab-node1}"), "apply", "-f", "-")
		var pods []labPod
		waitUntilFor(t, "a pod on each node", 2*time.Minute, func() bool {
			pods = append(l.readyPods("app=a"), l.readyPods("app=b")...)
			return len(pods) == 2
		})
		checkPodToPod(t, l, pods)
		for _, n := range l.Nodes() {
			if out := nodeRoutes(t, n); !strings.Contains(out, "dev skiff.vxlan") {
				t.Errorf("%s's routes to pods do not use the VXLAN device:\n%s", n, out)
			}
		}
	})
}

// nodeRoutes lists skiff's routes in a lab node's namespace.
func nodeRoutes(t *testing.T, node string) string {
	out, err := exec.Command("ip", "-n", node, "route", "show", "proto", "157").CombinedOutput()
	if err != nil {
		t.Fatalf("ip -n %s route: %v\n%s", node, err, out)
	}
	return string(out)
}
