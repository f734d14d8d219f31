package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
)

const workloadsManifest = `apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agentd}
spec:
  selector: {matchLabels: {app: agentd}}
  updateStrategy: {type: RollingUpdate, rollingUpdate: {maxUnavailable: 1}}
  template:
    metadata: {labels: {app: agentd}}
    spec:
      terminationGracePeriodSeconds: 1
      containers: [{name: c, image: ` + e2eImage + `, command: [sleep, "3600"], env: [{name: V, value: "1"}]}]
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: tick}
spec:
  schedule: "* * * * *"
  successfulJobsHistoryLimit: 1
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: Never
          containers: [{name: c, image: ` + e2eImage + `, command: [echo, tick]}]
---
apiVersion: batch/v1
kind: Job
metadata: {name: indexed}
spec:
  completions: 3
  parallelism: 3
  completionMode: Indexed
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, image: ` + e2eImage + `, command: [sh, -c, 'echo $JOB_COMPLETION_INDEX $(hostname)']}]
---
apiVersion: batch/v1
kind: Job
metadata: {name: failing}
spec:
  backoffLimit: 6
  podFailurePolicy:
    rules:
    - action: FailJob
      onExitCodes: {containerName: c, operator: In, values: [42]}
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, image: ` + e2eImage + `, command: [sh, -c, 'exit 42']}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: guard}
spec:
  replicas: 2
  selector: {matchLabels: {app: guard}}
  template:
    metadata: {labels: {app: guard}}
    spec:
      terminationGracePeriodSeconds: 1
      containers: [{name: c, image: ` + e2eImage + `, command: [sleep, "3600"]}]
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: guard}
spec:
  minAvailable: 2
  selector: {matchLabels: {app: guard}}
`

// checkWorkloads drives the workload kinds with kubectl as a user would:
// a DaemonSet on every node and its rolling update and undo, an Indexed
// Job, a Job stopped by its podFailurePolicy, `kubectl drain` held by a
// PodDisruptionBudget and then allowed, and a CronJob that runs every
// minute (checked last, its minute having passed meanwhile).
func checkWorkloads(t *testing.T, l *lab) {
	l.mustIn(workloadsManifest, "apply", "-f", "-")
	checkDaemonSetRollout(t, l)
	checkJobs(t, l)
	checkDrain(t, l)
	waitUntilFor(t, "the CronJob's job complete", 2*time.Minute, func() bool {
		out, _, _ := l.kubectl("get", "cronjob", "tick", "-o", "jsonpath={.status.lastSuccessfulTime}")
		return out != ""
	})
	l.must("create", "job", "tick-now", "--from=cronjob/tick")
	l.must("wait", "--for=condition=complete", "job/tick-now", "--timeout=90s")
	if out := l.must("logs", "job/tick-now"); strings.TrimSpace(out) != "tick" {
		t.Errorf("job from cronjob/tick logged %q", out)
	}
	l.must("delete", "job", "tick-now", "indexed", "failing")
	l.must("delete", "cronjob", "tick")
	l.must("delete", "daemonset", "agentd")
	l.must("delete", "deployment", "guard")
	l.must("delete", "pdb", "guard")
}

// daemonPods maps each node to the value of V of its ready agentd pods.
func (l *lab) daemonPods() map[string][]string {
	out, _, _ := l.kubectl("get", "pods", "-l", "app=agentd", "-o", `jsonpath={range .items[*]}{.spec.nodeName} {.spec.containers[0].env[0].value} `+
		`{.metadata.deletionTimestamp}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}`)
	byNode := map[string][]string{}
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[2] == "True" {
			byNode[f[0]] = append(byNode[f[0]], f[1])
		}
	}
	return byNode
}

// everyNodeRuns says whether every node runs exactly one ready agentd
// pod, with V=v.
func (l *lab) everyNodeRuns(v string) bool {
	pods := l.daemonPods()
	for _, n := range l.Nodes() {
		if !slices.Equal(pods[n], []string{v}) {
			return false
		}
	}
	return len(pods) == len(l.Nodes())
}

func checkDaemonSetRollout(t *testing.T, l *lab) {
	waitUntilFor(t, "an agentd pod on every node", 2*time.Minute, func() bool { return l.everyNodeRuns("1") })
	l.must("set", "env", "daemonset/agentd", "V=2")
	l.must("rollout", "status", "daemonset/agentd", "--timeout=2m")
	waitUntil(t, "every agentd pod updated", func() bool { return l.everyNodeRuns("2") })
	expectContains(t, "rollout history", l.must("rollout", "history", "daemonset/agentd"), "REVISION", "1", "2")
	l.must("rollout", "undo", "daemonset/agentd")
	l.must("rollout", "status", "daemonset/agentd", "--timeout=2m")
	waitUntil(t, "every agentd pod back to V=1", func() bool { return l.everyNodeRuns("1") })
}

func checkJobs(t *testing.T, l *lab) {
	l.must("wait", "--for=condition=complete", "job/indexed", "--timeout=2m")
	if got := l.must("get", "job", "indexed", "-o", "jsonpath={.status.completedIndexes}"); got != "0-2" {
		t.Errorf("indexed job's completedIndexes %q, want 0-2", got)
	}
	logs := l.must("logs", "-l", "batch.kubernetes.io/job-name=indexed", "--prefix=false")
	for i := range 3 {
		if want := fmt.Sprintf("%d indexed-%d", i, i); !strings.Contains(logs, want) {
			t.Errorf("indexed job's logs lack %q:\n%s", want, logs)
		}
	}
	l.must("wait", "--for=condition=failed", "job/failing", "--timeout=2m")
	reason := l.must("get", "job", "failing", "-o", `jsonpath={.status.conditions[?(@.type=="Failed")].reason} {.status.failed}`)
	if reason != "PodFailurePolicy 1" {
		t.Errorf("failing job: %q, want failed by its PodFailurePolicy after one pod", reason)
	}
}

// checkDrain: draining a node that runs a guarded pod waits on the
// budget; with room in the budget it evicts the node's pods (not the
// DaemonSet's) and leaves the node cordoned.
func checkDrain(t *testing.T, l *lab) {
	var guards []labPod
	waitUntilFor(t, "guard pods ready", 2*time.Minute, func() bool { guards = l.readyPods("app=guard"); return len(guards) == 2 })
	node := guards[0].node
	drain := []string{"drain", node, "--ignore-daemonsets", "--delete-emptydir-data", "--force"}
	_, errOut, err := l.kubectl(append(drain, "--timeout=15s")...)
	if err == nil || !strings.Contains(errOut, "Cannot evict pod as it would violate the pod's disruption budget") {
		t.Errorf("drain %s past a budget allowing no disruption: %v\n%s", node, err, errOut)
	}
	l.must("patch", "pdb", "guard", "--type=merge", "-p", `{"spec":{"minAvailable":1}}`)
	l.must(append(drain, "--timeout=2m")...)
	expectContains(t, "drained node", l.must("get", "node", node), "SchedulingDisabled")
	waitUntilFor(t, "guard pods ready elsewhere", 2*time.Minute, func() bool {
		guards = l.readyPods("app=guard")
		return len(guards) == 2 && !slices.ContainsFunc(guards, func(p labPod) bool { return p.node == node })
	})
	if pods := l.daemonPods(); len(pods[node]) != 1 {
		t.Errorf("drain removed the DaemonSet's pod from %s: %v", node, pods)
	}
	l.must("uncordon", node)
}

const burnerManifest = `apiVersion: v1
kind: ConfigMap
metadata: {name: load}
data: {mode: idle}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: burner}
spec:
  replicas: 1
  selector: {matchLabels: {app: burner}}
  template:
    metadata: {labels: {app: burner}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: c
        image: ` + e2eImage + `
        command: [sh, -c, 'while :; do if [ "$(cat /load/mode)" = burn ]; then i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; else sleep 1; fi; done']
        resources: {requests: {cpu: 50m}, limits: {cpu: 100m}}
        volumeMounts: [{name: load, mountPath: /load}]
      volumes: [{name: load, configMap: {name: load}}]
`

// checkAutoscaling: `kubectl autoscale` makes an HPA that grows a
// Deployment while its pods burn CPU (told so through a ConfigMap, each
// pod at most 100m) and shrinks it once they stop; `kubectl top` sees the
// load the HPA acts on.
func checkAutoscaling(t *testing.T, l *lab) {
	l.mustIn(burnerManifest, "apply", "-f", "-")
	l.must("autoscale", "deployment", "burner", "--min=1", "--max=3", "--cpu=50%")
	l.must("patch", "hpa", "burner", "--type=merge", "-p", `{"spec":{"behavior":{"scaleDown":{"stabilizationWindowSeconds":0}}}}`)
	waitUntilFor(t, "the HPA reading the pods' cpu", 2*time.Minute, func() bool {
		out, _, _ := l.kubectl("get", "hpa", "burner", "-o", `jsonpath={.status.conditions[?(@.type=="ScalingActive")].status}`)
		return out == "True"
	})
	l.must("patch", "configmap", "load", "--type=merge", "-p", `{"data":{"mode":"burn"}}`)
	waitUntilFor(t, "burner scaled up to 3 under load", 3*time.Minute, func() bool {
		return len(l.readyPods("app=burner")) == 3
	})
	waitUntilFor(t, "kubectl top and the HPA agreeing on the pods' cpu", 2*time.Minute, func() bool {
		top, hpa := l.burnerCPU()
		t.Logf("burner cpu: kubectl top %dm a pod, the HPA %dm", top, hpa)
		return top > 0 && hpa > 0 && 2*abs(top-hpa) <= max(top, hpa)
	})
	expectContains(t, "hpa events", l.must("describe", "hpa", "burner"), "SuccessfulRescale", "New size: 3")
	l.must("patch", "configmap", "load", "--type=merge", "-p", `{"data":{"mode":"idle"}}`)
	for deadline := time.Now().Add(3 * time.Minute); ; time.Sleep(2 * time.Second) {
		if out, _, _ := l.kubectl("get", "deployment", "burner", "-o", "jsonpath={.spec.replicas}"); out == "1" {
			break
		}
		if time.Now().After(deadline) {
			top, _, _ := l.kubectl("top", "pod", "-l", "app=burner")
			t.Fatalf("burner not scaled back to 1 in 3 minutes once idle:\n%s\n%s", l.must("describe", "hpa", "burner"), top)
		}
	}
	l.must("delete", "hpa", "burner")
	l.must("delete", "deployment", "burner")
	l.must("delete", "configmap", "load")
}

// burnerCPU is the burner pods' mean cpu in millicores as `kubectl top`
// shows it, and as the HPA last saw it (its current average value).
func (l *lab) burnerCPU() (top, hpa int64) {
	out, _, _ := l.kubectl("top", "pod", "-l", "app=burner", "--no-headers")
	var sum, n int64
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if f := strings.Fields(line); len(f) >= 2 {
			if q, err := resource.ParseQuantity(f[1]); err == nil {
				sum, n = sum+q.MilliValue(), n+1
			}
		}
	}
	if n > 0 {
		top = sum / n
	}
	out, _, _ = l.kubectl("get", "hpa", "burner", "-o", "jsonpath={.status.currentMetrics[0].resource.current.averageValue}")
	if q, err := resource.ParseQuantity(strings.TrimSpace(out)); err == nil {
		hpa = q.MilliValue()
	}
	return top, hpa
}

func abs(v int64) int64 { return max(v, -v) }
