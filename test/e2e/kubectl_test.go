package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

const podYAML = `apiVersion: v1
kind: Pod
metadata:
  name: web
  labels: {app: web}
spec:
  containers:
  - name: c
    image: busybox:1.36
    ports: [{containerPort: 80, name: http}]
`

const deploymentYAML = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: shop
spec:
  replicas: 2
  selector: {matchLabels: {app: shop}}
  template:
    metadata: {labels: {app: shop}}
    spec:
      containers: [{name: c, image: busybox:1.36}]
`

const endpointSliceYAML = `apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: web-1
  labels: {kubernetes.io/service-name: web}
addressType: IPv4
ports: [{name: http, port: 80}]
endpoints:
- addresses: [10.244.0.5]
- addresses: [10.244.0.6]
`

// columns splits kubectl's table output into header and rows of fields.
func columns(out string) (header []string, rows [][]string) {
	for i, line := range strings.Split(strings.TrimSpace(out), "\n") {
		fields := regexp.MustCompile(`\s{2,}`).Split(strings.TrimSpace(line), -1)
		if i == 0 {
			header = fields
		} else {
			rows = append(rows, fields)
		}
	}
	return header, rows
}

func expectContains(t *testing.T, what, out string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(out, w) {
			t.Errorf("%s: %q not in output:\n%s", what, w, out)
		}
	}
}

func TestKubectlCreateApplyGet(t *testing.T) {
	c := startCluster(t)
	out, errOut, err := c.kubectlIn(podYAML, "create", "-f", "-")
	if err != nil || !strings.Contains(out, "pod/web created") {
		t.Fatalf("create -f: %v %s %s", err, out, errOut)
	}
	out, errOut, err = c.kubectlIn(deploymentYAML, "apply", "-f", "-")
	if err != nil || !strings.Contains(out, "deployment.apps/shop created") {
		t.Fatalf("apply: %v %s %s", err, out, errOut)
	}
	out, errOut, err = c.kubectlIn(deploymentYAML, "apply", "-f", "-")
	if err != nil || !strings.Contains(out, "deployment.apps/shop unchanged") {
		t.Fatalf("second apply should be unchanged: %v %s %s", err, out, errOut)
	}
	changed := strings.Replace(deploymentYAML, "replicas: 2", "replicas: 4", 1)
	out = c.mustIn(changed, "apply", "-f", "-")
	expectContains(t, "apply change", out, "deployment.apps/shop configured")
	if got := c.must("get", "deploy", "shop", "-o", "jsonpath={.spec.replicas}"); got != "4" {
		t.Errorf("applied replicas %q, want 4", got)
	}

	header, rows := columns(c.must("get", "pods", "-l", "app=web"))
	if strings.Join(header, "|") != "NAME|READY|STATUS|RESTARTS|AGE" || len(rows) != 1 || rows[0][0] != "web" || rows[0][1] != "0/1" || rows[0][2] != "Pending" {
		t.Errorf("get pods: %v %v", header, rows)
	}
	header, _ = columns(c.must("get", "pods", "-o", "wide"))
	expectContains(t, "get -o wide", strings.Join(header, "|"), "IP", "NODE", "NOMINATED NODE", "READINESS GATES")
	header, rows = columns(c.must("get", "deploy"))
	if strings.Join(header, "|") != "NAME|READY|UP-TO-DATE|AVAILABLE|AGE" || rows[0][1] != "0/4" {
		t.Errorf("get deploy: %v %v", header, rows)
	}
	expectContains(t, "get -o yaml", c.must("get", "pod", "web", "-o", "yaml"), "kind: Pod", "restartPolicy: Always", "uid:", "imagePullPolicy: IfNotPresent")
	var pod map[string]any
	if err := json.Unmarshal([]byte(c.must("get", "pod", "web", "-o", "json")), &pod); err != nil || pod["kind"] != "Pod" {
		t.Errorf("get -o json: %v %v", err, pod["kind"])
	}
	_, rows = columns(c.must("get", "pods", "-l", "app=web"))
	if len(rows) != 1 {
		t.Errorf("get -l app=web: %v", rows)
	}
	if out, _, _ := c.kubectl("get", "pods", "-l", "app=none"); strings.Contains(out, "web") {
		t.Errorf("get -l app=none listed web")
	}
	header, rows = columns(c.must("get", "svc", "-A"))
	if header[0] != "NAMESPACE" || rows[0][0] != "default" || rows[0][1] != "kubernetes" {
		t.Errorf("get -A: %v %v", header, rows)
	}
	expectContains(t, "get ns", c.must("get", "ns"), "kube-system", "kube-node-lease", "Active")
	c.mustIn(endpointSliceYAML, "create", "-f", "-")
	header, rows = columns(c.must("get", "endpointslices", "-l", "kubernetes.io/service-name=web"))
	if strings.Join(header, "|") != "NAME|ADDRESSTYPE|PORTS|ENDPOINTS|AGE" || len(rows) != 1 || strings.Join(rows[0][:4], "|") != "web-1|IPv4|80|10.244.0.5,10.244.0.6" {
		t.Errorf("get endpointslices: %v %v", header, rows)
	}
	expectContains(t, "describe", c.must("describe", "pod", "web"), "Name:", "web", "Containers:", "busybox:1.36", "Status:", "Pending")
	expectContains(t, "describe deploy", c.must("describe", "deploy", "shop"), "Replicas:", "4 desired", "RollingUpdate")
}

func (c *cluster) mustIn(stdin string, args ...string) string {
	c.t.Helper()
	out, errOut, err := c.kubectlIn(stdin, args...)
	if err != nil {
		c.t.Fatalf("kubectl %s: %v\n%s%s", strings.Join(args, " "), err, out, errOut)
	}
	return out
}

func TestKubectlMutations(t *testing.T) {
	c := startCluster(t)
	c.mustIn(podYAML, "create", "-f", "-")
	expectContains(t, "label", c.must("label", "pod", "web", "tier=front"), "pod/web labeled")
	expectContains(t, "annotate", c.must("annotate", "pod", "web", "note=hello"), "pod/web annotated")
	c.must("patch", "pod", "web", "-p", `{"metadata":{"labels":{"strategic":"yes"}}}`)
	c.must("patch", "pod", "web", "--type", "merge", "-p", `{"metadata":{"labels":{"merge":"yes"}}}`)
	c.must("patch", "pod", "web", "--type", "json", "-p", `[{"op":"replace","path":"/spec/containers/0/image","value":"busybox:1.37"}]`)
	got := c.must("get", "pod", "web", "-o", "jsonpath={.metadata.labels.tier},{.metadata.labels.strategic},{.metadata.labels.merge},{.metadata.annotations.note},{.spec.containers[0].image}")
	if got != "front,yes,yes,hello,busybox:1.37" {
		t.Errorf("after label/annotate/patches: %q", got)
	}

	c.must("create", "deployment", "api", "--image=busybox:1.36", "--replicas=2", "--port=8080")
	expectContains(t, "scale", c.must("scale", "deployment", "api", "--replicas=5"), "deployment.apps/api scaled")
	if got := c.must("get", "deploy", "api", "-o", "jsonpath={.spec.replicas}"); got != "5" {
		t.Errorf("scaled replicas %q", got)
	}
	expectContains(t, "expose", c.must("expose", "deployment", "api", "--port=80", "--target-port=8080"), "service/api exposed")
	_, rows := columns(c.must("get", "svc", "api"))
	if len(rows) != 1 || !strings.HasPrefix(rows[0][2], "10.96.") || rows[0][4] != "80/TCP" {
		t.Errorf("exposed service: %v", rows)
	}
	if sel := c.must("get", "svc", "api", "-o", "jsonpath={.spec.selector.app}"); sel != "api" {
		t.Errorf("service selector %q", sel)
	}
	c.must("create", "configmap", "cfg", "--from-literal=k=v")
	c.must("create", "secret", "generic", "sec", "--from-literal=password=pw")
	if got := c.must("get", "cm", "cfg", "-o", "jsonpath={.data.k}"); got != "v" {
		t.Errorf("configmap data %q", got)
	}
	if got := c.must("get", "secret", "sec", "-o", "jsonpath={.data.password}"); got != "cHc=" {
		t.Errorf("secret data %q", got)
	}
	_, rows = columns(c.must("get", "secret", "sec"))
	if rows[0][1] != "Opaque" || rows[0][2] != "1" {
		t.Errorf("get secret row %v", rows)
	}

	expectContains(t, "delete", c.must("delete", "pod", "web"), `pod "web" deleted`)
	if _, errOut, err := c.kubectl("get", "pod", "web"); err == nil || !strings.Contains(errOut, `pods "web" not found`) {
		t.Errorf("deleted pod: %v %s", err, errOut)
	}
}

func TestKubectlEventsAndErrors(t *testing.T) {
	c := startCluster(t)
	c.mustIn(podYAML, "create", "-f", "-")
	uid := c.must("get", "pod", "web", "-o", "jsonpath={.metadata.uid}")
	event := `apiVersion: v1
kind: Event
metadata: {name: web.1, namespace: default}
involvedObject: {kind: Pod, name: web, namespace: default, uid: UID}
reason: Testing
message: hello from the test
type: Normal
firstTimestamp: "2026-01-01T00:00:00Z"
lastTimestamp: "2026-01-01T00:00:00Z"
count: 1
source: {component: e2e}
`
	event = strings.Replace(event, "UID", uid, 1)
	other := strings.NewReplacer("web.1", "other.1", "name: web,", "name: other,", "hello from the test", "about another").Replace(event)
	c.mustIn(event, "create", "-f", "-")
	c.mustIn(other, "create", "-f", "-")
	out := c.must("get", "events", "--field-selector", "involvedObject.name=web")
	expectContains(t, "events", out, "Testing", "pod/web", "hello from the test")
	if strings.Contains(out, "about another") {
		t.Errorf("field selector let another object's event through:\n%s", out)
	}
	expectContains(t, "describe shows events", c.must("describe", "pod", "web"), "Events:", "Testing")

	_, errOut, err := c.kubectl("get", "pod", "missing")
	if err == nil || !strings.Contains(errOut, `Error from server (NotFound): pods "missing" not found`) {
		t.Errorf("missing object: %v %q", err, errOut)
	}
	invalid := strings.Replace(podYAML, "name: web", "name: Web_Bad", 1)
	_, errOut, err = c.kubectlIn(invalid, "create", "-f", "-")
	if err == nil || !strings.Contains(errOut, "Invalid") || !strings.Contains(errOut, "metadata.name") {
		t.Errorf("invalid object: %v %q", err, errOut)
	}
	unknown := strings.Replace(podYAML, "  containers:", "  bogusField: 1\n  containers:", 1)
	_, errOut, err = c.kubectlIn(unknown, "create", "-f", "-")
	if err == nil || !strings.Contains(errOut, `unknown field "spec.bogusField"`) {
		t.Errorf("strict validation: %v %q", err, errOut)
	}
}

func TestKubectlGetWatch(t *testing.T) {
	c := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, kubectlBin, "--kubeconfig", c.kubeconfig, "get", "pods", "-w")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); _ = cmd.Wait() }()
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	time.Sleep(time.Second) // let the watch start
	c.mustIn(podYAML, "create", "-f", "-")
	c.must("label", "pod", "web", "seen=yes")
	var got []string
	for len(got) < 3 {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("watch ended early: %v", got)
			}
			got = append(got, l)
		case <-ctx.Done():
			t.Fatalf("watch output so far: %v", got)
		}
	}
	if !strings.HasPrefix(got[0], "NAME") || !strings.HasPrefix(got[1], "web") || !strings.HasPrefix(got[2], "web") {
		t.Errorf("get -w printed %q", got)
	}
}

// TestSkiffKubectl: `skiff kubectl` is kubectl (the release it is stamped
// as), and so is the skiff binary run through a symlink named kubectl.
func TestSkiffKubectl(t *testing.T) {
	c := startCluster(t)
	link := filepath.Join(t.TempDir(), "kubectl")
	if err := os.Symlink(skiffBin, link); err != nil {
		t.Fatal(err)
	}
	for _, argv := range [][]string{{skiffBin, "kubectl"}, {link}} {
		cmd := exec.Command(argv[0], append(argv[1:], "get", "namespaces", "-o", "name")...)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+c.kubeconfig)
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "namespace/kube-system") {
			t.Errorf("%v get namespaces: %v\n%s", argv, err, out)
		}
	}
	out, err := exec.Command(skiffBin, "kubectl", "version", "--client").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Client Version: v1.37") {
		t.Errorf("skiff kubectl version --client: %v\n%s", err, out)
	}
	cmd := exec.Command(skiffBin, "kubectl", "get", "pods", "--kubeconfig", filepath.Join(t.TempDir(), "none"))
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "no such file or directory") {
		t.Errorf("skiff kubectl with a missing kubeconfig: %v\n%s", err, out)
	}
}
