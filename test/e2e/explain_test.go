package e2e

import (
	"encoding/json"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/skiff-lab/skiff/podtrace"
)

const journeyPod = `apiVersion: v1
kind: Pod
metadata: {name: journey, labels: {app: journey}}
spec:
  terminationGracePeriodSeconds: 1
  initContainers:
  - name: setup
    image: skiff.test/busybox:1
    imagePullPolicy: Never
    command: ["sh", "-c", "echo page > /www/index.html"]
    volumeMounts: [{name: www, mountPath: /www}]
  containers:
  - name: web
    image: skiff.test/busybox:1
    imagePullPolicy: Never
    command: ["httpd", "-f", "-p", "8080", "-h", "/www"]
    volumeMounts: [{name: www, mountPath: /www}]
    readinessProbe:
      httpGet: {path: /index.html, port: 8080}
      periodSeconds: 1
  - name: sidecar
    image: skiff.test/busybox:1
    imagePullPolicy: Never
    command: ["sleep", "3600"]
  volumes:
  - name: www
    emptyDir: {}
---
apiVersion: v1
kind: Service
metadata: {name: journey}
spec:
  selector: {app: journey}
  ports: [{port: 80, targetPort: 8080}]
`

// testExplainPod: `skiff explain pod` shows the journey of a pod with an
// init container, two containers, a readiness probe and a Service, every
// step in the order of the pod creation flow, up to the node's proxy
// routing the Service to it; the steps account for the
// time from the create request to the Ready status within 5 %.
func testExplainPod(t *testing.T, n *nodeCluster) {
	n.mustIn(journeyPod, "apply", "-f", "-")
	n.must("wait", "--for=condition=Ready", "pod/journey", "--timeout=90s")
	e := explainUntil(t, n.cluster, "journey", "agent.ready", "endpoints.updated", "proxy.synced")
	timeline := explainPod(t, n.cluster, "journey")
	t.Logf("skiff explain pod journey:\n%s", timeline)
	flow := []string{"apiserver.create", "apiserver.admission", "etcd.write", "scheduler.queue", "scheduler.schedule", "scheduler.bind",
		"agent.queue", "agent.volumes", "agent.sandbox", "agent.image", "agent.container", "agent.init.run", "agent.image",
		"agent.container", "agent.image", "agent.container", "agent.ready", "endpoints.updated", "proxy.synced"}
	var names []string
	for _, s := range e.Steps {
		if s.Name != "apiserver.validation" && s.Name != "agent.network" {
			names = append(names, s.Name)
		}
	}
	if !slices.Equal(names, flow) {
		t.Fatalf("journey steps:\n  %v\nwant\n  %v", names, flow)
	}
	if !strings.HasPrefix(timeline, "Pod default/journey") || !strings.Contains(timeline, "agent.init.run") {
		t.Errorf("timeline:\n%s", timeline)
	}
	checkCoverage(t, e.Steps)
	testExplainService(t, n)
	testExplainDeletion(t, n)
}

// testExplainService: `skiff explain service` lists the pod as a ready
// endpoint on its node, the node's proxy synced with the current slices,
// and the node's DNS server answering the Service's cluster IP.
func testExplainService(t *testing.T, n *nodeCluster) {
	ip := n.must("get", "service", "journey", "-o", "jsonpath={.spec.clusterIP}")
	text := skiffExplain(t, n.cluster, "service", "journey")
	t.Logf("skiff explain service journey:\n%s", text)
	for _, want := range []string{"Service default/journey: cluster IP " + ip, "default/journey  " + n.nodeName + "  true",
		n.nodeName + "  synced ", "1 ready endpoints in its rules", "journey.default.svc.cluster.local → " + ip} {
		if !strings.Contains(text, want) {
			t.Errorf("no %q in:\n%s", want, text)
		}
	}
}

// testExplainDeletion: deleting the pod is a second trace (the API
// server's delete, each container stopped, with the signal that ended it,
// the sandbox torn down, the final delete), still explained once the pod
// is gone.
func testExplainDeletion(t *testing.T, n *nodeCluster) {
	n.must("delete", "pod", "journey", "--wait", "--timeout=60s")
	want := []string{"apiserver.delete", "agent.stop", "agent.teardown", "agent.deleted"}
	e := explainUntil(t, n.cluster, "journey", "agent.deleted")
	if !e.Deleted {
		t.Errorf("explanation of the deleted pod: deleted=false")
	}
	for _, name := range want {
		if !hasStep(e, name) {
			t.Errorf("the deletion has no %s step", name)
		}
	}
	if stops := countSteps(e, "agent.stop"); stops != 2 {
		t.Errorf("%d containers stopped in the deletion trace, want 2", stops)
	}
	for _, s := range e.Steps {
		if signal := s.Attrs["signal"]; s.Name == "agent.stop" && signal != "SIGTERM" && signal != "SIGKILL" {
			t.Errorf("agent.stop of %s: signal %q, want the signal that ended it", s.Attrs["container"], signal)
		}
	}
	t.Logf("skiff explain pod journey (deleted):\n%s", explainPod(t, n.cluster, "journey"))
}

// checkCoverage: the steps, overlaps counted once, cover at least 95 % of
// the time from the create request to the Ready status.
func checkCoverage(t *testing.T, steps []podtrace.Step) {
	i := slices.IndexFunc(steps, func(s podtrace.Step) bool { return s.Name == "agent.ready" })
	steps = steps[:i+1]
	first, last := steps[0].Start, steps[i].End
	total := last.Sub(first)
	sorted := slices.Clone(steps)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Start.Before(sorted[j].Start) })
	var covered time.Duration
	reach := first
	for _, s := range sorted {
		start := s.Start
		if start.Before(reach) {
			start = reach
		}
		if s.End.After(start) {
			covered += s.End.Sub(start)
			reach = s.End
		}
	}
	if float64(covered) < 0.95*float64(total) {
		t.Errorf("the steps cover %v of the %v from create to Ready (%.1f %%), want at least 95 %%",
			covered, total, 100*float64(covered)/float64(total))
	}
}

// checkJourneyAcrossRestart: an agent killed while a pod's init container
// runs, then started again, reports the rest of the pod's start in the
// same journey.
func checkJourneyAcrossRestart(t *testing.T, n *nodeCluster) {
	n.mustIn(`apiVersion: v1
kind: Pod
metadata: {name: restarted}
spec:
  terminationGracePeriodSeconds: 1
  initContainers:
  - {name: wait, image: skiff.test/busybox:1, imagePullPolicy: Never, command: ["sleep", "5"]}
  containers:
  - {name: c, image: skiff.test/busybox:1, imagePullPolicy: Never, command: ["sleep", "3600"]}
`, "apply", "-f", "-")
	if e := explainUntil(t, n.cluster, "restarted", "agent.container"); !hasStep(e, "agent.container") {
		t.Fatalf("the init container's start was not reported: %v", e.Steps)
	}
	n.restartAgent()
	n.must("wait", "--for=condition=Ready", "pod/restarted", "--timeout=90s")
	e := explainUntil(t, n.cluster, "restarted", "agent.ready")
	for _, step := range []string{"scheduler.bind", "agent.sandbox", "agent.init.run", "agent.ready"} {
		if !hasStep(e, step) {
			t.Errorf("after the agent's restart the journey has no %s step", step)
		}
	}
	if containers := countSteps(e, "agent.container"); containers != 2 {
		t.Errorf("%d containers started in the journey, want 2 (the init container before the restart, c after)", containers)
	}
	t.Logf("skiff explain pod restarted:\n%s", explainPod(t, n.cluster, "restarted"))
}

// explainUntil reads the pod's explanation until it has every one of
// steps, for at most 20 s (the agents report every 500 ms). A server that
// does not answer yet (one just restarted) is asked again.
func explainUntil(t *testing.T, c *cluster, pod string, steps ...string) podtrace.Explanation {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		out, err := runExplain(c, "pod", pod, "-o", "json")
		var e podtrace.Explanation
		if err == nil {
			err = json.Unmarshal([]byte(out), &e)
		}
		all := err == nil && !slices.ContainsFunc(steps, func(step string) bool { return !hasStep(e, step) })
		switch {
		case all:
			return e
		case time.Now().After(deadline) && err != nil:
			t.Fatalf("skiff explain pod %s -o json: %v\n%s", pod, err, out)
		case time.Now().After(deadline):
			return e
		}
	}
}

func hasStep(e podtrace.Explanation, name string) bool { return countSteps(e, name) > 0 }

func countSteps(e podtrace.Explanation, name string) int {
	n := 0
	for _, s := range e.Steps {
		if s.Name == name {
			n++
		}
	}
	return n
}

func explainPod(t *testing.T, c *cluster, args ...string) string {
	t.Helper()
	return skiffExplain(t, c, append([]string{"pod"}, args...)...)
}

// skiffExplain runs `skiff explain args...` against the cluster.
func skiffExplain(t *testing.T, c *cluster, args ...string) string {
	t.Helper()
	out, err := runExplain(c, args...)
	if err != nil {
		t.Fatalf("skiff explain %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// runExplain runs `skiff explain args...`: its output, and its error
// output with the error.
func runExplain(c *cluster, args ...string) (string, error) {
	var stderr strings.Builder
	cmd := exec.Command(skiffBin, append([]string{"explain", "--kubeconfig", c.kubeconfig}, args...)...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out) + stderr.String(), err
	}
	return string(out), nil
}

const explainedDeployment = `apiVersion: apps/v1
kind: Deployment
metadata: {name: explained}
spec:
  replicas: 2
  selector: {matchLabels: {app: explained}}
  template:
    metadata: {labels: {app: explained}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: app
        image: skiff.test/busybox:1
        imagePullPolicy: Never
        command: ["sleep", "3600"]
`

// testExplainWorkload: `skiff explain deployment` lists each of its pods
// with where it stands and says what held the slowest back; -o json has
// each pod's explanation.
func testExplainWorkload(t *testing.T, n *nodeCluster) {
	n.mustIn(explainedDeployment, "apply", "-f", "-")
	n.must("rollout", "status", "deployment/explained", "--timeout=90s")
	var wl podtrace.Workload
	waitUntil(t, "both pods of explained Ready in their journeys", func() bool {
		out := skiffExplain(t, n.cluster, "deployment", "explained", "-o", "json")
		return json.Unmarshal([]byte(out), &wl) == nil && len(wl.Pods) == 2 && wl.Pods[0].Ready() && wl.Pods[1].Ready()
	})
	text := skiffExplain(t, n.cluster, "deploy", "explained")
	t.Logf("skiff explain deploy explained:\n%s", text)
	for _, want := range []string{"Deployment default/explained: 2 of 2 ready", wl.Pods[0].Name, wl.Pods[1].Name, "agent.ready", "was Ready in"} {
		if !strings.Contains(text, want) {
			t.Errorf("no %q in:\n%s", want, text)
		}
	}
	n.must("delete", "deployment", "explained")
}
