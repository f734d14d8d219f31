package e2e

import (
	"strings"
	"testing"
)

// TestKubectlRolloutAndScheduling drives the scheduler and the controllers
// with a real kubectl: a deployment is scheduled onto a (simulated) node,
// rolled to a new image and back, and kubectl shows what users expect.
func TestKubectlRolloutAndScheduling(t *testing.T) {
	c := startCluster(t)
	startSimNode(t, c.client(), "sim-1")
	expectContains(t, "get nodes", c.must("get", "nodes"), "sim-1", "Ready", "v1.37.0-sim")
	c.mustIn(deploymentYAML, "apply", "-f", "-")
	expectContains(t, "rollout status", c.must("rollout", "status", "deployment/shop", "--timeout=60s"), `deployment "shop" successfully rolled out`)
	_, rows := columns(c.must("get", "pods", "-l", "app=shop", "-o", "wide"))
	if len(rows) != 2 || rows[0][2] != "Running" || rows[0][1] != "1/1" || rows[0][6] != "sim-1" {
		t.Errorf("pods: %v", rows)
	}
	pod := rows[0][0]
	expectContains(t, "describe pod", c.must("describe", "pod", pod), "Node:", "sim-1", "Scheduled", "Successfully assigned default/"+pod+" to sim-1")
	expectContains(t, "get events", c.must("get", "events"), "Scheduled", "SuccessfulCreate", "ScalingReplicaSet")

	c.must("set", "image", "deployment/shop", "c=busybox:1.37")
	c.must("rollout", "status", "deployment/shop", "--timeout=60s")
	history := c.must("rollout", "history", "deployment/shop")
	expectContains(t, "rollout history", history, "REVISION", "1", "2")
	expectContains(t, "rollout undo", c.must("rollout", "undo", "deployment/shop"), "deployment.apps/shop rolled back")
	c.must("rollout", "status", "deployment/shop", "--timeout=60s")
	if img := c.must("get", "deploy", "shop", "-o", "jsonpath={.spec.template.spec.containers[0].image}"); img != "busybox:1.36" {
		t.Errorf("image after undo: %q", img)
	}
	if rev := c.must("get", "deploy", "shop", "-o", `jsonpath={.metadata.annotations.deployment\.kubernetes\.io/revision}`); rev != "3" {
		t.Errorf("revision after undo: %q", rev)
	}

	c.must("delete", "deployment", "shop")
	waitUntil(t, "the deployment's replica sets and pods to go", func() bool {
		out, _, _ := c.kubectl("get", "rs,pods", "-l", "app=shop", "-o", "name")
		return strings.TrimSpace(out) == ""
	})
}
