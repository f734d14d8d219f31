package e2e

import (
	"strings"
	"testing"
)

// The classic ReplicationController example: no selector (defaulted from
// the template's labels).
const replicationControllerYAML = `apiVersion: v1
kind: ReplicationController
metadata:
  name: nginx
spec:
  replicas: 3
  template:
    metadata:
      name: nginx
      labels: {app: nginx}
    spec:
      containers:
      - name: nginx
        image: busybox:1.36
        ports: [{containerPort: 80}]
`

// TestKubectlReplicationController creates, scales, describes and deletes
// a ReplicationController with kubectl, its pods run on a (simulated)
// node, and a bad one is refused with the field named.
func TestKubectlReplicationController(t *testing.T) {
	c := startCluster(t)
	startSimNode(t, c.client(), "sim-1")
	expectContains(t, "create", c.mustIn(replicationControllerYAML, "create", "-f", "-"), "replicationcontroller/nginx created")
	waitUntil(t, "3 ready replicas", func() bool {
		out, _, _ := c.kubectl("get", "rc", "nginx", "-o", "jsonpath={.status.readyReplicas}")
		return out == "3"
	})
	header, rows := columns(c.must("get", "rc", "-o", "wide"))
	wantHeader := []string{"NAME", "DESIRED", "CURRENT", "READY", "AGE", "CONTAINERS", "IMAGES", "SELECTOR"}
	if strings.Join(header, " ") != strings.Join(wantHeader, " ") {
		t.Errorf("get rc -o wide header %v, want %v", header, wantHeader)
	}
	if len(rows) != 1 || strings.Join(rows[0][:4], " ") != "nginx 3 3 3" || rows[0][7] != "app=nginx" {
		t.Errorf("get rc rows %v", rows)
	}
	owner := c.must("get", "pods", "-l", "app=nginx", "-o", "jsonpath={.items[0].metadata.ownerReferences[0].kind}")
	if owner != "ReplicationController" {
		t.Errorf("pod owner kind %q", owner)
	}
	expectContains(t, "get all", c.must("get", "all"), "replicationcontroller/nginx")

	expectContains(t, "scale", c.must("scale", "rc", "nginx", "--replicas=1"), "replicationcontroller/nginx scaled")
	waitUntil(t, "one pod left", func() bool {
		out, _, _ := c.kubectl("get", "pods", "-l", "app=nginx", "-o", "name")
		return len(strings.Fields(out)) == 1
	})
	expectContains(t, "describe rc", c.must("describe", "rc", "nginx"),
		"Replicas:", "1 current / 1 desired", "SuccessfulCreate", "SuccessfulDelete", "replication-controller")

	bad := strings.Replace(replicationControllerYAML, "replicas: 3", "replicas: 1\n  selector: {app: other}", 1)
	bad = strings.Replace(bad, "name: nginx\nspec", "name: bad\nspec", 1)
	_, errOut, err := c.kubectlIn(bad, "create", "-f", "-")
	if err == nil || !strings.Contains(errOut, "spec.template.metadata.labels: Invalid value") {
		t.Errorf("a selector that does not match the template: err %v, %s", err, errOut)
	}

	c.must("delete", "rc", "nginx")
	waitUntil(t, "the pods to go with the ReplicationController", func() bool {
		out, _, _ := c.kubectl("get", "pods", "-l", "app=nginx", "-o", "name")
		return strings.TrimSpace(out) == ""
	})
}
