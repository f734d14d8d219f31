package e2e

import (
	"encoding/base64"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skiff-lab/skiff/controlplane/pki"
)

// extServerManifest runs ./extserver from dir (with its certificate for
// extserver.adm.svc) in namespace adm behind Service extserver:443, and
// makes namespace adm-test, which the webhooks and the policy act on.
func extServerManifest(dir string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Namespace
metadata: {name: adm}
---
apiVersion: v1
kind: Namespace
metadata: {name: adm-test, labels: {e2e-admission: "on"}}
---
apiVersion: v1
kind: Pod
metadata: {name: extserver, namespace: adm, labels: {app: extserver}}
spec:
  containers:
  - name: server
    image: %s
    command: ["/ext/extserver", "--cert", "/ext/tls.crt", "--key", "/ext/tls.key"]
    volumeMounts: [{name: bin, mountPath: /ext, readOnly: true}]
    readinessProbe: {tcpSocket: {port: 8443}, periodSeconds: 1}
  volumes:
  - {name: bin, hostPath: {path: %s, type: Directory}}
---
apiVersion: v1
kind: Service
metadata: {name: extserver, namespace: adm}
spec:
  selector: {app: extserver}
  ports: [{port: 443, targetPort: 8443}]
`, e2eImage, dir)
}

// extensionsManifest registers extserver as a mutating and a validating
// webhook of configmaps in adm-test and as the server of
// wardle.example.com/v1alpha1, and adds a ValidatingAdmissionPolicy.
func extensionsManifest(caBundle string) string {
	hook := func(kind, name, path string) string {
		return fmt.Sprintf(`apiVersion: admissionregistration.k8s.io/v1
kind: %s
metadata: {name: %s}
webhooks:
- name: %s.e2e.skiff.test
  clientConfig:
    service: {namespace: adm, name: extserver, path: %s}
    caBundle: %s
  rules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}]
  namespaceSelector: {matchLabels: {e2e-admission: "on"}}
  sideEffects: None
  admissionReviewVersions: [v1]
`, kind, name, name, path, caBundle)
	}
	return hook("MutatingWebhookConfiguration", "mutate", "/mutate") + "---\n" + hook("ValidatingWebhookConfiguration", "deny", "/deny") +
		fmt.Sprintf(`---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: few-keys}
spec:
  matchConstraints:
    namespaceSelector: {matchLabels: {e2e-admission: "on"}}
    resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [configmaps]}]
  validations:
  - {expression: "!has(object.data) || object.data.size() <= 2", message: "at most two keys"}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: few-keys}
spec: {policyName: few-keys, validationActions: [Deny]}
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1alpha1.wardle.example.com}
spec:
  group: wardle.example.com
  version: v1alpha1
  groupPriorityMinimum: 2000
  versionPriority: 200
  service: {namespace: adm, name: extserver, port: 443}
  caBundle: %s
`, caBundle)
}

// checkExtensions: with the unmodified kubectl, a webhook served by a pod
// mutates the configmaps it admits and another denies some, with the
// webhook's message; a ValidatingAdmissionPolicy refuses with its own; an
// APIService backed by the same pod becomes Available and its group is
// proxied to it (for the user kubectl is) and discovered; once the pod is
// gone, the webhooks' failurePolicy Fail refuses creates, naming the
// webhook. Everything is removed at the end.
func checkExtensions(t *testing.T, l *lab) {
	dir := buildForPods(t, "extserver")
	ca, err := pki.LoadOrCreateCA(dir, "e2e-extserver-ca")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ca.LoadOrIssueServing(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"), "extserver", []string{"extserver.adm.svc"}); err != nil {
		t.Fatal(err)
	}
	l.mustIn(extServerManifest(dir), "apply", "-f", "-")
	l.must("wait", "-n", "adm", "--for=condition=Ready", "pod/extserver", "--timeout=90s")
	l.mustIn(extensionsManifest(base64.StdEncoding.EncodeToString(ca.CertPEM)), "apply", "-f", "-")
	defer func() { _, _, _ = l.kubectlIn(extensionsManifest(""), "delete", "--ignore-not-found", "-f", "-") }()

	waitUntilFor(t, "the mutating webhook", time.Minute, func() bool {
		_, _, _ = l.kubectl("delete", "-n", "adm-test", "configmap", "probe", "--ignore-not-found")
		_, _, err := l.kubectl("create", "-n", "adm-test", "configmap", "probe")
		out, _, _ := l.kubectl("get", "-n", "adm-test", "configmap", "probe", "-o", "jsonpath={.metadata.labels.mutated-by}")
		return err == nil && out == "extserver"
	})
	_, errOut, err := l.kubectl("create", "-n", "adm-test", "configmap", "deny-me")
	if err == nil || !strings.Contains(errOut, `admission webhook "deny.e2e.skiff.test" denied the request: deny-me is refused by extserver`) {
		t.Errorf("create deny-me: %v %s, want the webhook's denial", err, errOut)
	}
	// Until the policy is in force a try succeeds: its ConfigMap goes
	// before the next try.
	waitUntilFor(t, "the policy", 30*time.Second, func() bool {
		_, _, _ = l.kubectl("delete", "-n", "adm-test", "configmap", "big", "--ignore-not-found")
		_, errOut, err = l.kubectl("create", "-n", "adm-test", "configmap", "big", "--from-literal=a=1", "--from-literal=b=2", "--from-literal=c=3")
		return err != nil
	})
	if !strings.Contains(errOut, "ValidatingAdmissionPolicy 'few-keys' with binding 'few-keys' denied request: at most two keys") {
		t.Errorf("create a configmap of three keys: %s, want the policy's message", errOut)
	}

	l.must("wait", "--for=condition=Available", "apiservice/v1alpha1.wardle.example.com", "--timeout=60s")
	user := l.must("auth", "whoami", "-o", "jsonpath={.status.userInfo.username}")
	expectContains(t, "list flunders", l.must("get", "--raw", "/apis/wardle.example.com/v1alpha1/namespaces/default/flunders"), `"name":"for-`+user+`"`)
	waitUntilFor(t, "flunders in api-resources", 30*time.Second, func() bool {
		out, _, _ := l.kubectl("api-resources", "--api-group", "wardle.example.com")
		return strings.Contains(out, "flunders")
	})
	expectContains(t, "get apiservices", l.must("get", "apiservices"), "v1beta1.metrics.k8s.io", "Local", "v1alpha1.wardle.example.com", "adm/extserver")

	l.must("delete", "-n", "adm", "pod", "extserver", "--grace-period=0", "--force")
	waitUntilFor(t, "creates to fail closed", time.Minute, func() bool {
		_, errOut, err = l.kubectl("create", "-n", "adm-test", "configmap", "while-down")
		return err != nil
	})
	if !strings.Contains(errOut, `failed calling webhook "mutate.e2e.skiff.test"`) {
		t.Errorf("create with the webhook down: %s, want the webhook named", errOut)
	}
}
