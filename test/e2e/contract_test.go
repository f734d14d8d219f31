package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// contractPod uses what a pod spec promises about its containers: env from
// a ConfigMap, a Secret and the Downward API, a configMap volume, a
// security context, a PostStart hook and readiness/liveness probes.
const contractPod = `apiVersion: v1
kind: Pod
metadata:
  name: contract
  labels: {app: contract}
spec:
  securityContext: {runAsUser: 1000, runAsGroup: 3000, fsGroup: 2000}
  containers:
  - name: web
    image: skiff.test/busybox:1
    imagePullPolicy: Never
    command: ["sh", "-c", "echo greeting=$GREETING password=$PASSWORD pod=$POD; cat /config/color; id; mkdir -p /tmp/www; echo ok > /tmp/www/index.html; exec httpd -f -p 8080 -h /tmp/www"]
    ports: [{name: http, containerPort: 8080}]
    env:
    - {name: GREETING, valueFrom: {configMapKeyRef: {name: app-config, key: greeting}}}
    - {name: PASSWORD, valueFrom: {secretKeyRef: {name: app-secret, key: password}}}
    - {name: POD, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
    volumeMounts: [{name: config, mountPath: /config}]
    securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}
    lifecycle:
      postStart: {exec: {command: ["sh", "-c", "echo hooked > /tmp/hooked"]}}
    readinessProbe: {httpGet: {path: /index.html, port: http}, periodSeconds: 1}
    livenessProbe: {exec: {command: ["cat", "/tmp/hooked"]}, periodSeconds: 2}
  volumes:
  - {name: config, configMap: {name: app-config}}
`

// TestKubectlPodContract: with an unmodified kubectl, a pod using env from
// ConfigMaps, Secrets and fieldRefs, a configMap volume, a security context,
// a PostStart hook and probes becomes Ready; its output shows the values;
// a pod whose ConfigMap is missing waits with CreateContainerConfigError.
func TestKubectlPodContract(t *testing.T) {
	n := startNodeCluster(t)
	n.must("create", "configmap", "app-config", "--from-literal=greeting=hello", "--from-literal=color=blue")
	n.must("create", "secret", "generic", "app-secret", "--from-literal=password=s3cret")
	n.mustIn(contractPod, "apply", "-f", "-")
	n.must("wait", "--for=condition=Ready", "pod/contract", "--timeout=90s")
	if ready := n.podField("contract", "{.status.containerStatuses[0].ready}"); ready != "true" {
		t.Errorf("container ready = %q", ready)
	}
	uid := n.podField("contract", "{.metadata.uid}")
	logPath := filepath.Join(n.dataDir, "logs", "default_contract_"+uid, "web", "0.log")
	waitUntil(t, "the container's output", func() bool {
		b, _ := os.ReadFile(logPath)
		return strings.Contains(string(b), "uid=1000")
	})
	out, _ := os.ReadFile(logPath)
	for _, want := range []string{"greeting=hello password=s3cret pod=contract", "blue", "uid=1000 gid=3000", "2000"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	n.must("run", "lacking", "--image="+e2eImage, "--image-pull-policy=Never",
		"--overrides", `{"spec":{"containers":[{"name":"lacking","image":"`+e2eImage+`","imagePullPolicy":"Never","command":["sleep","3600"],"envFrom":[{"configMapRef":{"name":"absent"}}]}]}}`)
	waitUntil(t, "CreateContainerConfigError", func() bool {
		return n.podField("lacking", "{.status.containerStatuses[0].state.waiting.reason}") == "CreateContainerConfigError"
	})
	if msg := n.podField("lacking", "{.status.containerStatuses[0].state.waiting.message}"); !strings.Contains(msg, `configmap "absent" not found`) {
		t.Errorf("waiting message %q", msg)
	}
	n.must("create", "configmap", "absent", "--from-literal=k=v")
	n.must("wait", "--for=condition=Ready", "pod/lacking", "--timeout=60s")
}
