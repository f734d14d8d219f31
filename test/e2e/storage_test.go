package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const statefulManifest = `apiVersion: v1
kind: Service
metadata: {name: db}
spec: {clusterIP: None, selector: {app: db}, ports: [{port: 80}]}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: db
  replicas: 3
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: db
        image: ` + e2eImage + `
        command: [sh, -c, 'test -f /data/first || hostname > /data/first; exec sleep 3600']
        volumeMounts: [{name: data, mountPath: /data}, {name: data, mountPath: /sub, subPath: sub}]
  volumeClaimTemplates:
  - metadata: {name: data}
    spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 64Mi}}}
`

// checkStatefulStorage: a 3-replica StatefulSet whose claims get the
// default class (local-path): each pod's claim is bound to a volume made
// on its node, the pods have stable DNS names, a deleted pod comes back on
// its node with its data, a claim grows when asked, scaling down keeps
// the claims and scaling up finds them again, and deleting the claims
// removes the volumes and their directories.
func checkStatefulStorage(t *testing.T, l *lab) {
	expectContains(t, "get storageclass", l.must("get", "storageclass"), "local-path (default)", "skiff.io/local-path", "Delete", "WaitForFirstConsumer")
	l.mustIn(statefulManifest, "apply", "-f", "-")
	pods := l.statefulPods(t, 3)
	dirs := map[string]string{}
	for i, p := range pods {
		claim := fmt.Sprintf("data-db-%d", i)
		pv := strings.TrimSpace(l.must("get", "pvc", claim, "-o", "jsonpath={.spec.volumeName}"))
		got := strings.Fields(l.must("get", "pv", pv, "-o", `jsonpath={.spec.hostPath.path} {.spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].values[0]} {.spec.claimRef.name}`))
		if len(got) != 3 || got[1] != p.node || got[2] != claim {
			t.Errorf("%s's volume %s: %v, want a path on %s bound to %s", p.name, pv, got, p.node, claim)
			continue
		}
		if _, err := os.Stat(filepath.Join(got[0], "first")); err != nil {
			t.Errorf("%s's data is not in its volume's directory: %v", p.name, err)
		}
		dirs[claim] = got[0]
		if first := l.exec(p.name, "cat", "/data/first"); first != p.name {
			t.Errorf("%s wrote %q", p.name, first)
		}
		if got := l.exec(p.name, "sh", "-c", "echo in-sub > /sub/x && cat /data/sub/x"); got != "in-sub" {
			t.Errorf("%s: a file written through the claim's subPath mount: %q in the volume", p.name, got)
		}
	}
	if out := l.exec("db-0", "nslookup", "db-2.db.default.svc.cluster.local"); !strings.Contains(out, pods[2].ip) {
		t.Errorf("db-2.db.default.svc.cluster.local from db-0, want %s:\n%s", pods[2].ip, out)
	}
	l.must("patch", "pvc", "data-db-0", "-p", `{"spec":{"resources":{"requests":{"storage":"128Mi"}}}}`)
	waitUntil(t, "data-db-0 grown to 128Mi", func() bool {
		claim, _, _ := l.kubectl("get", "pvc", "data-db-0", "-o", "jsonpath={.status.capacity.storage}")
		volume, _, _ := l.kubectl("get", "pv", "-o", `jsonpath={.items[?(@.spec.claimRef.name=="data-db-0")].spec.capacity.storage}`)
		return claim == "128Mi" && volume == "128Mi"
	})
	l.exec("db-1", "sh", "-c", "echo kept > /data/marker")
	l.must("delete", "pod", "db-1", "--wait=false")
	waitUntilFor(t, "db-1 back", 2*time.Minute, func() bool {
		back := l.readyPods("statefulset.kubernetes.io/pod-name=db-1")
		return len(back) == 1 && back[0].ip != pods[1].ip
	})
	if got := l.readyPods("statefulset.kubernetes.io/pod-name=db-1")[0]; got.node != pods[1].node || l.exec("db-1", "cat", "/data/marker") != "kept" {
		t.Errorf("db-1 came back on %s (was %s) without its data", got.node, pods[1].node)
	}
	l.must("scale", "statefulset", "db", "--replicas=1")
	waitUntilFor(t, "db scaled to 1", 2*time.Minute, func() bool { return len(l.readyPods("app=db")) == 1 })
	expectContains(t, "claims kept when scaled down", l.must("get", "pvc"), "data-db-1", "data-db-2")
	l.must("scale", "statefulset", "db", "--replicas=3")
	l.statefulPods(t, 3)
	if first := l.exec("db-2", "cat", "/data/first"); first != "db-2" {
		t.Errorf("db-2 after scaling up: %q in its volume, want what it wrote before", first)
	}
	l.must("delete", "statefulset", "db")
	l.must("delete", "pvc", "data-db-0", "data-db-1", "data-db-2", "--wait=false")
	waitUntilFor(t, "the volumes and their directories gone", 2*time.Minute, func() bool {
		out, _, _ := l.kubectl("get", "pv", "-o", "name")
		return strings.TrimSpace(out) == ""
	})
	for claim, dir := range dirs {
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("%s's directory %s: %v, want it removed", claim, dir, err)
		}
	}
}

// statefulPods waits for the db pods 0..n-1 to be ready and returns them
// in order.
func (l *lab) statefulPods(t *testing.T, n int) []labPod {
	t.Helper()
	var pods []labPod
	waitUntilFor(t, fmt.Sprintf("%d db pods ready", n), 3*time.Minute, func() bool {
		pods = pods[:0]
		for i := range n {
			if p := l.readyPods(fmt.Sprintf("statefulset.kubernetes.io/pod-name=db-%d", i)); len(p) == 1 {
				pods = append(pods, p[0])
			}
		}
		return len(pods) == n
	})
	return pods
}

// exec runs a command in pod and returns its trimmed output.
func (l *lab) exec(pod string, args ...string) string {
	out, _, _ := l.kubectl(append([]string{"exec", pod, "--"}, args...)...)
	return strings.TrimSpace(out)
}

const claimsManifest = `apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: manual}
provisioner: kubernetes.io/no-provisioner
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: manual}
spec: {storageClassName: manual, accessModes: [ReadWriteOnce], resources: {requests: {storage: 10Mi}}}
---
apiVersion: v1
kind: Pod
metadata: {name: uses-manual}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: c, image: ` + e2eImage + `, command: [sh, -c, 'cat /data/hello; exec sleep 3600'], volumeMounts: [{name: d, mountPath: /data}]}
  volumes: [{name: d, persistentVolumeClaim: {claimName: manual}}]
---
apiVersion: v1
kind: Pod
metadata: {name: scratch}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: c, image: ` + e2eImage + `, command: [sh, -c, 'echo hi > /scratch/x; exec sleep 3600'], volumeMounts: [{name: s, mountPath: /scratch}]}
  volumes:
  - name: s
    ephemeral:
      volumeClaimTemplate:
        spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 10Mi}}}
`

// checkClaims: a pod whose claim (of an Immediate class) is not bound
// waits Pending with the scheduler's reason, and runs once a hostPath
// volume is made for the claim (which may then not grow: its class does
// not allow it); a pod's generic ephemeral volume gets a
// claim owned by the pod, gone (with its volume) when the pod goes.
func checkClaims(t *testing.T, l *lab) {
	l.mustIn(claimsManifest, "apply", "-f", "-")
	waitUntil(t, "uses-manual unschedulable", func() bool {
		out, _, _ := l.kubectl("get", "events", "--field-selector", "involvedObject.name=uses-manual,reason=FailedScheduling")
		return strings.Contains(out, "pod has unbound immediate PersistentVolumeClaims")
	})
	expectContains(t, "uses-manual", l.must("get", "pod", "uses-manual"), "Pending")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hello"), []byte("from the host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	l.mustIn(fmt.Sprintf(`apiVersion: v1
kind: PersistentVolume
metadata: {name: manual}
spec: {storageClassName: manual, accessModes: [ReadWriteOnce], capacity: {storage: 10Mi}, hostPath: {path: %s, type: Directory}}
`, dir), "apply", "-f", "-")
	waitUntilFor(t, "uses-manual running with the host's file", 2*time.Minute, func() bool {
		out, _, _ := l.kubectl("logs", "uses-manual")
		return strings.TrimSpace(out) == "from the host"
	})
	if _, errOut, err := l.kubectl("patch", "pvc", "manual", "-p", `{"spec":{"resources":{"requests":{"storage":"20Mi"}}}}`); err == nil ||
		!strings.Contains(errOut, "only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize") {
		t.Errorf("growing a claim of a class without expansion: %v %s", err, errOut)
	}
	waitUntilFor(t, "scratch running", 2*time.Minute, func() bool { return l.exec("scratch", "cat", "/scratch/x") == "hi" })
	owner := l.must("get", "pvc", "scratch-s", "-o", "jsonpath={.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name} {.status.phase}")
	if owner != "Pod/scratch Bound" {
		t.Errorf("scratch's claim: %q, want owned by the pod and Bound", owner)
	}
	pv := l.must("get", "pvc", "scratch-s", "-o", "jsonpath={.spec.volumeName}")
	l.must("delete", "pod", "scratch", "uses-manual")
	waitUntilFor(t, "scratch's claim and volume gone", 2*time.Minute, func() bool {
		_, _, errClaim := l.kubectl("get", "pvc", "scratch-s")
		_, _, errVolume := l.kubectl("get", "pv", pv)
		return errClaim != nil && errVolume != nil
	})
	l.must("delete", "pvc", "manual")
	l.must("delete", "pv", "manual")
	l.must("delete", "storageclass", "manual")
}
