package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// buildInCluster builds ./incluster (a client-go program using
// rest.InClusterConfig) statically into a new directory and returns it.
func buildInCluster(t *testing.T) string { return buildForPods(t, "incluster") }

// buildForPods builds the program ./name statically into a new directory
// (for pods to mount from the host) and returns the directory.
func buildForPods(t *testing.T, name string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "build", "-trimpath", "-o", filepath.Join(dir, name), "./"+name)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", name, err, out)
	}
	return dir
}

// inClusterPod runs the program from dir (a hostPath volume: the lab's
// nodes share the machine's filesystem) once, as service account default.
func inClusterPod(name, dir string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  restartPolicy: Never
  containers:
  - name: client
    image: %s
    command: ["/incluster/incluster"]
    volumeMounts: [{name: bin, mountPath: /incluster, readOnly: true}]
  volumes:
  - {name: bin, hostPath: {path: %s, type: Directory}}`, name, e2eImage, dir)
}

// viewPodsReview asks whether default/default may list default's pods.
const viewPodsReview = `apiVersion: authorization.k8s.io/v1
kind: SubjectAccessReview
spec:
  user: system:serviceaccount:default:default
  groups: [system:serviceaccounts, system:serviceaccounts:default, system:authenticated]
  resourceAttributes: {namespace: default, verb: list, resource: pods}`

// checkInClusterClient: a pod's client-go program reaches the API through
// the kubernetes Service's ClusterIP with its projected service account
// token, and is refused pods until a RoleBinding lets its account view
// them.
func checkInClusterClient(t *testing.T, l *lab) {
	dir := buildInCluster(t)
	run := func(name, wantPhase string) string {
		l.cluster.mustIn(inClusterPod(name, dir), "apply", "-f", "-")
		waitUntil(t, name+" "+wantPhase, func() bool {
			phase, _, _ := l.kubectl("get", "pod", name, "-o", "jsonpath={.status.phase}")
			return phase == wantPhase || phase == "Failed" || phase == "Succeeded"
		})
		return l.must("logs", name)
	}
	refused := run("api-reader", "Failed")
	if want := `pods is forbidden: User "system:serviceaccount:default:default" cannot list resource "pods" in API group "" in the namespace "default"`; !strings.Contains(refused, want) {
		t.Errorf("without a binding the pod's client says %q, want %q", refused, want)
	}
	l.must("create", "rolebinding", "default-view", "--clusterrole=view", "--serviceaccount=default:default")
	waitUntil(t, "the binding to count", func() bool {
		out, _, _ := l.kubectlIn(viewPodsReview, "create", "-o", "jsonpath={.status.allowed}", "-f", "-")
		return out == "true"
	})
	listed := run("api-reader-2", "Succeeded")
	if !strings.HasPrefix(listed, "listed ") || !strings.Contains(listed, "via https://10.96.0.1:443") {
		t.Errorf("with view the pod's client says %q, want it to list pods through the kubernetes Service", listed)
	}
	mounts := l.must("get", "pod", "api-reader-2", "-o", "jsonpath={.spec.volumes[*].name} {.spec.serviceAccountName}")
	if !strings.Contains(mounts, "kube-api-access-") || !strings.HasSuffix(mounts, " default") {
		t.Errorf("api-reader-2's volumes and account: %q", mounts)
	}
	l.must("delete", "pod", "api-reader", "api-reader-2", "--wait=false")
	l.must("delete", "rolebinding", "default-view")
}
