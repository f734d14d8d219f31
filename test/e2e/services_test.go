package e2e

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netns"

	"github.com/skiff-lab/skiff/test/netnstest"
	"github.com/skiff-lab/skiff/test/nodetest"
)

// webDeployment serves each pod's name on port 8080; a pod is ready while
// its /tmp/ready exists (an HTTP probe of /ready: an exec probe would
// start a runc per probe, a fifth of the machine's CPU for three pods).
const webDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 3
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: httpd
        image: skiff.test/busybox:1
        imagePullPolicy: Never
        command: ["sh", "-c", "hostname > /tmp/index.html; touch /tmp/ready; exec httpd -f -p 8080 -h /tmp"]
        ports: [{name: http, containerPort: 8080}]
        readinessProbe:
          httpGet: {path: /ready, port: 8080}
          periodSeconds: 1
          failureThreshold: 1
`

// startWeb starts a node cluster with the test guard, the web Deployment
// behind the Service web and a client pod, and returns the web pods.
func startWeb(t *testing.T) (*nodeCluster, []string) {
	n := startNodeCluster(t)
	return n, setUpWeb(t, n)
}

// setUpWeb guards the machine and runs the web Deployment, its Service and
// a client pod on n; it returns the web pods.
func setUpWeb(t *testing.T, n *nodeCluster) []string {
	n.node.GuardServiceTraffic(t, "10.96.0.0/16", "10.252.0.0/16")
	t.Cleanup(func() {
		if t.Failed() {
			for _, line := range strings.Split(n.log.String(), "\n") {
				if strings.Contains(line, "proxy") || strings.Contains(line, "ERROR") || strings.Contains(line, "DNS") {
					t.Log(line)
				}
			}
		}
	})
	n.mustIn(webDeployment, "apply", "-f", "-")
	n.must("expose", "deployment", "web", "--port", "80", "--target-port", "http")
	n.must("run", "client", "--image="+e2eImage, "--image-pull-policy=Never", "--command", "--", "sleep", "3600")
	waitUntil(t, "3 web pods ready", func() bool {
		out, _, _ := n.kubectl("get", "deploy", "web", "-o", "jsonpath={.status.readyReplicas}")
		return out == "3"
	})
	waitUntil(t, "client Running", func() bool { return n.podField("client", "{.status.phase}") == "Running" })
	return strings.Fields(n.must("get", "pods", "-l", "app=web", "-o", "jsonpath={.items[*].metadata.name}"))
}

// TestServicesOnANode runs a Deployment behind Services on a real node
// and reaches it as users do: from a pod through the ClusterIP and by
// name, from another namespace, from the host through a NodePort on
// 127.0.0.1, from a backend through its own Service (hairpin), with
// ClientIP affinity, over UDP; a Service without endpoints refuses at once.
func TestServicesOnANode(t *testing.T) {
	n, pods := startWeb(t)
	ips := strings.Fields(n.must("get", "pods", "-l", "app=web", "-o", "jsonpath={.items[*].status.podIP}"))
	describe := n.must("describe", "svc", "web")
	for _, ip := range ips {
		expectContains(t, "describe svc", describe, ip+":8080")
	}

	clusterIP := n.must("get", "svc", "web", "-o", "jsonpath={.spec.clusterIP}")
	// The proxy may not have synced the last pod to turn ready yet: every
	// backend answers within a few rounds.
	answered := map[string]bool{}
	waitUntil(t, "every backend to answer through "+clusterIP, func() bool {
		answers := n.must("exec", "client", "--", "sh", "-c", "for i in $(seq 30); do timeout 2 wget -q -O- http://"+clusterIP+"/; done")
		for _, a := range strings.Fields(answers) {
			answered[a] = true
		}
		return !slices.ContainsFunc(pods, func(p string) bool { return !answered[p] })
	})

	hairpin := n.must("exec", pods[0], "--", "sh", "-c", "for i in $(seq 10); do timeout 2 wget -q -O- http://"+clusterIP+"/; done")
	if got := strings.Count(hairpin, "web-"); got != 10 {
		t.Errorf("a backend reaching its own service: %d of 10 answered:\n%s", got, hairpin)
	}

	checkProxySubresources(t, n, pods[0])

	for _, name := range []string{"web", "web.default", "web.default.svc", "web.default.svc.cluster.local"} {
		if got := n.must("exec", "client", "--", "timeout", "5", "wget", "-q", "-O-", "http://"+name+"/"); !strings.HasPrefix(got, "web-") {
			t.Errorf("wget http://%s/ from a pod: %q", name, got)
		}
	}
	n.must("create", "namespace", "other")
	n.must("run", "-n", "other", "client", "--image="+e2eImage, "--image-pull-policy=Never", "--command", "--", "sleep", "3600")
	waitUntil(t, "other/client Running", func() bool {
		out, _, _ := n.kubectl("get", "pod", "-n", "other", "client", "-o", "jsonpath={.status.phase}")
		return out == "Running"
	})
	if got := n.must("exec", "-n", "other", "client", "--", "timeout", "5", "wget", "-q", "-O-", "http://web.default/"); !strings.HasPrefix(got, "web-") {
		t.Errorf("wget http://web.default/ from another namespace: %q", got)
	}
	if out, _, _ := n.kubectl("exec", "client", "--", "nslookup", "nothing.default.svc.cluster.local", nodetest.ClusterDNS); !strings.Contains(out, "NXDOMAIN") {
		t.Errorf("a name under cluster.local that does not exist: %q, want NXDOMAIN", out)
	}

	n.must("create", "service", "clusterip", "empty", "--tcp", "80:8080")
	emptyIP := n.must("get", "svc", "empty", "-o", "jsonpath={.spec.clusterIP}")
	waitUntil(t, "a service without endpoints to refuse", func() bool {
		start := time.Now()
		out, _, _ := n.kubectl("exec", "client", "--", "sh", "-c", "timeout 5 wget -q -O- http://"+emptyIP+"/ 2>&1; true")
		return strings.Contains(out, "Connection refused") && time.Since(start) < 4*time.Second
	})

	checkAffinity(t, n)
	checkUDP(t, n, pods)

	n.must("expose", "deployment", "web", "--name", "web-np", "--type", "NodePort", "--port", "80", "--target-port", "8080")
	nodePort := n.must("get", "svc", "web-np", "-o", "jsonpath={.spec.ports[0].nodePort}")
	var body string
	waitUntil(t, "NodePort "+nodePort+" on 127.0.0.1", func() bool {
		body = get(fmt.Sprintf("http://127.0.0.1:%s/", nodePort))
		return strings.HasPrefix(body, "web-")
	})
}

// checkProxySubresources reaches a web pod and the web Service through the
// API server's pods/proxy and services/proxy, as kubectl get --raw does.
func checkProxySubresources(t *testing.T, n *nodeCluster, pod string) {
	for path, want := range map[string]string{
		"pods/" + pod + ":8080/proxy/":      pod,
		"pods/http:" + pod + ":8080/proxy/": pod,
		"services/web/proxy/":               "web-",
		"services/http:web:80/proxy/":       "web-",
	} {
		if got := n.must("get", "--raw", "/api/v1/namespaces/default/"+path); !strings.HasPrefix(got, want) {
			t.Errorf("GET %s: %q, want %s…", path, got, want)
		}
	}
	_, errOut, err := n.kubectl("get", "--raw", "/api/v1/namespaces/default/services/web:81/proxy/")
	if err == nil || !strings.Contains(errOut, "no service port 81") {
		t.Errorf("services/web:81/proxy: %v %s, want no service port 81", err, errOut)
	}
}

// checkAffinity exposes web with ClientIP session affinity: 20 requests
// from the client pod are all answered by one backend.
func checkAffinity(t *testing.T, n *nodeCluster) {
	n.must("expose", "deployment", "web", "--name", "web-sticky", "--port", "80", "--target-port", "http", "--session-affinity", "ClientIP")
	ip := n.must("get", "svc", "web-sticky", "-o", "jsonpath={.spec.clusterIP}")
	waitUntil(t, "web-sticky to answer", func() bool {
		out, _, _ := n.kubectl("exec", "client", "--", "timeout", "2", "wget", "-q", "-O-", "http://"+ip+"/")
		return strings.HasPrefix(out, "web-")
	})
	answers := strings.Fields(n.must("exec", "client", "--", "sh", "-c", "for i in $(seq 20); do timeout 2 wget -q -O- http://"+ip+"/; done"))
	if len(answers) != 20 || len(slices.Compact(slices.Sorted(slices.Values(answers)))) != 1 {
		t.Errorf("ClientIP affinity: %d of 20 answered, by %v; want one backend", len(answers), answers)
	}
}

// checkUDP reaches the web pods through a UDP Service. The datagrams are
// answered, with the pod's name, by sockets the test opens inside each web
// pod's network namespace and sent from a socket opened inside the client
// pod's (busybox has no UDP server): the path is the pods'. A client
// socket whose backend turns unready reaches another: the proxy deleted
// the flow's conntrack entry, which would otherwise keep it on the old
// backend (still answering) for as long as it keeps sending.
func checkUDP(t *testing.T, n *nodeCluster, pods []string) {
	n.must("expose", "deployment", "web", "--name", "web-udp", "--protocol", "UDP", "--port", "5353", "--target-port", "5353")
	addr := net.JoinHostPort(n.must("get", "svc", "web-udp", "-o", "jsonpath={.spec.clusterIP}"), "5353")
	for _, pod := range pods {
		netnstest.AnswerUDP(t, podNetNS(t, n, pod), 5353, pod)
	}
	client := podNetNS(t, n, "client")
	seen := map[string]bool{}
	for i := 0; i < 300 && len(seen) < len(pods); i++ {
		conn := dialUDP(t, client, addr)
		who := askUDP(conn)
		conn.Close()
		if who != "" {
			seen[who] = true
		} else {
			time.Sleep(200 * time.Millisecond) // the service's rules not there yet
		}
	}
	if len(seen) != len(pods) {
		t.Fatalf("through the UDP service %s answered only %v", addr, seen)
	}

	pinned := dialUDP(t, client, addr)
	defer pinned.Close()
	first := askUDP(pinned)
	if first == "" {
		t.Fatal("no answer on the pinned socket")
	}
	n.must("exec", first, "--", "rm", "/tmp/ready")
	t.Cleanup(func() { _, _, _ = n.kubectl("exec", first, "--", "touch", "/tmp/ready") })
	waitUntilFor(t, "the pinned flow to leave "+first, 20*time.Second, func() bool {
		who := askUDP(pinned)
		return who != "" && who != first
	})
	n.must("exec", first, "--", "touch", "/tmp/ready")
}

// dialUDP opens a UDP socket inside h towards addr.
func dialUDP(t *testing.T, h netns.NsHandle, addr string) net.Conn {
	var conn net.Conn
	inPod(t, h, func() {
		var err error
		if conn, err = net.Dial("udp4", addr); err != nil {
			t.Fatal(err)
		}
	})
	return conn
}

// askUDP sends a datagram on conn and returns the answer, "" after 1 s.
func askUDP(conn net.Conn) string {
	_ = conn.SetDeadline(time.Now().Add(time.Second))
	if _, err := conn.Write([]byte("who")); err != nil {
		return ""
	}
	buf := make([]byte, 512)
	k, err := conn.Read(buf)
	if err != nil {
		return ""
	}
	return string(buf[:k])
}

// get returns the body of a GET, or "" on any failure.
func get(url string) string {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// TestServiceTrafficThroughChanges follows a Service through changes: a
// backend turning unready leaves the rotation, a LoadBalancer Service gets
// the node's address and answers there, `kubectl run -i --rm` reaches the
// service by name, and a client looping against the ClusterIP while the
// server (and its in-process agent) is killed with SIGKILL and restarted
// loses no request: the rules stay in the kernel.
func TestServiceTrafficThroughChanges(t *testing.T) {
	n, pods := startWeb(t)
	clusterIP := n.must("get", "svc", "web", "-o", "jsonpath={.spec.clusterIP}")

	n.must("exec", pods[0], "--", "rm", "/tmp/ready")
	start := time.Now()
	waitUntilFor(t, pods[0]+" out of rotation", 10*time.Second, func() bool {
		out, _, _ := n.kubectl("exec", "client", "--", "sh", "-c", "for i in $(seq 10); do timeout 2 wget -q -O- http://"+clusterIP+"/; done")
		return strings.Count(out, "web-") == 10 && !strings.Contains(out, pods[0])
	})
	t.Logf("an unready backend left the rotation within %s", time.Since(start).Round(100*time.Millisecond))

	n.must("expose", "deployment", "web", "--name", "web-lb", "--type", "LoadBalancer", "--port", "8081", "--target-port", "8080")
	waitUntil(t, "web-lb's ingress address", func() bool {
		out, _, _ := n.kubectl("get", "svc", "web-lb", "-o", "jsonpath={.status.loadBalancer.ingress[*].ip}")
		return out == "127.0.0.1"
	})
	waitUntil(t, "web-lb on 127.0.0.1:8081", func() bool { return strings.HasPrefix(get("http://127.0.0.1:8081/"), "web-") })

	// A try whose lookup or request timed out on a loaded machine prints
	// nothing; the pod goes with it (--rm) and the next try is a new pod.
	var once string
	waitUntilFor(t, "kubectl run -i --rm ... wget http://web/", time.Minute, func() bool {
		once, _, _ = n.kubectl("run", "-i", "--rm", "once", "--image="+e2eImage, "--image-pull-policy=Never", "--restart=Never", "--",
			"wget", "-q", "-O-", "http://web/")
		return strings.Contains(once, "web-")
	})

	n.requestsThrough(t, "http://"+clusterIP+"/", func() {
		n.kill9()
		time.Sleep(2 * time.Second)
		n.start()
		n.waitNodeReady()
	})
}

// TestNodeServesWhileTheServerIsDown runs the agent as its own process and
// kills the server under a client resolving and fetching web by name: the
// node's DNS answers from its caches and the proxy's rules stay, so every
// request is answered while the API server is gone.
func TestNodeServesWhileTheServerIsDown(t *testing.T) {
	n, _ := startSeparateNode(t)
	setUpWeb(t, n)
	n.requestsThrough(t, "http://web/", func() {
		n.kill9()
		time.Sleep(8 * time.Second)
		n.start()
	})
}

// requestsThrough has the client pod send 60 requests to url, four a
// second, while during runs, and fails the test unless all were answered.
func (n *nodeCluster) requestsThrough(t *testing.T, url string, during func()) {
	t.Helper()
	n.must("exec", "client", "--", "sh", "-c", "setsid sh -c 'for i in $(seq 60); do timeout 2 wget -q -O- "+url+
		" >/dev/null && echo ok || echo FAIL; sleep 0.25; done > /tmp/loop.log 2>&1; echo done >> /tmp/loop.log' > /dev/null 2>&1 &")
	time.Sleep(2 * time.Second)
	during()
	var log string
	waitUntil(t, "the client's loop to end", func() bool {
		log, _, _ = n.kubectl("exec", "client", "--", "cat", "/tmp/loop.log")
		return strings.Contains(log, "done")
	})
	if strings.Count(log, "ok") != 60 || strings.Contains(log, "FAIL") {
		t.Errorf("requests to %s:\n%s", url, log)
	}
}
