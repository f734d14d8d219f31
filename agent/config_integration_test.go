package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/skiff-lab/skiff/controlplane/servertest"
)

// TestEnvironment: a container's env comes from plain values with $(VAR)
// expansion, ConfigMap and Secret keys, envFrom with a prefix, the Downward
// API and service links; a missing ConfigMap keeps it waiting with
// CreateContainerConfigError until the ConfigMap appears.
func TestEnvironment(t *testing.T) {
	n := startTestNode(t)
	n.createConfigMap("settings", map[string]string{"color": "blue", "size": "L"})
	n.createSecret("creds", map[string]string{"password": "s3cret"})
	n.createService("backend", 8080)
	c := busybox("show", "sh", "-c", "env | sort; echo 'args $(GREETING) $$HOME'")
	c.Env = []v1.EnvVar{
		{Name: "WHO", Value: "world"},
		{Name: "GREETING", Value: "hello-$(WHO)"},
		{Name: "COLOR", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: ref("settings"), Key: "color"}}},
		{Name: "PASSWORD", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: ref("creds"), Key: "password"}}},
		{Name: "POD_NAME", ValueFrom: fieldRef("metadata.name")},
		{Name: "POD_IP", ValueFrom: fieldRef("status.podIP")},
		{Name: "NODE", ValueFrom: fieldRef("spec.nodeName")},
		{Name: "APP", ValueFrom: fieldRef("metadata.labels['app']")},
		{Name: "MEM_LIMIT_MI", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}}},
		{Name: "LATE", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: ref("late"), Key: "k"}}},
	}
	c.EnvFrom = []v1.EnvFromSource{{Prefix: "CFG_", ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: ref("settings")}}}
	c.Resources.Limits = v1.ResourceList{v1.ResourceMemory: resource.MustParse("64Mi")}
	pod := n.createPod(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "env", Labels: map[string]string{"app": "shop"}},
		Spec: v1.PodSpec{Containers: []v1.Container{c}, RestartPolicy: v1.RestartPolicyNever}})

	n.waitPod("default", "env", "waits for ConfigMap late", 60*time.Second, func(p *v1.Pod) bool {
		w := waitingOf(p, "show")
		return w != nil && w.Reason == "CreateContainerConfigError" && strings.Contains(w.Message, `configmap "late" not found`)
	})
	n.createConfigMap("late", map[string]string{"k": "arrived"})
	done := n.waitPod("default", "env", "env printed", 60*time.Second, func(p *v1.Pod) bool { return p.Status.Phase == v1.PodSucceeded })

	out := n.containerLog(pod, "show")
	want := []string{
		"WHO=world", "GREETING=hello-world", "COLOR=blue", "PASSWORD=s3cret", "POD_NAME=env",
		"POD_IP=" + done.Status.PodIP, "NODE=" + n.cfg.NodeName, "APP=shop", "MEM_LIMIT_MI=64", "LATE=arrived",
		"CFG_color=blue", "CFG_size=L", "BACKEND_SERVICE_PORT=8080", "BACKEND_PORT=tcp://",
		"KUBERNETES_SERVICE_HOST=", "args hello-world $HOME",
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
}

// TestVolumes: configMap, secret, downwardAPI and projected volumes show
// their data (read-only, modes kept) and follow changes; an emptyDir is
// shared between containers, a memory-backed one is a tmpfs; hostPath and
// subPath mount what they name.
func TestVolumes(t *testing.T) {
	n := startTestNode(t)
	n.createConfigMap("site", map[string]string{"index.html": "v1", "other": "x"})
	n.createSecret("keys", map[string]string{"token": "abc"})
	host := t.TempDir()
	if err := os.MkdirAll(filepath.Join(host, "nested"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{"from-host": "host data", "nested/inner": "inner data"} {
		if err := os.WriteFile(filepath.Join(host, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writer := busybox("writer", "sh", "-c", "echo shared > /shared/file; sleep 3600")
	reader := busybox("reader", "sh", "-c", strings.Join([]string{
		"while [ ! -f /shared/file ]; do sleep 0.1; done", "cat /shared/file",
		"cat /config/index.html; echo", "stat -c %a /secret/..data/token", "cat /secret/token; echo",
		"cat /info/labels; echo", "cat /all/index.html /all/token; echo",
		"grep ' /mem ' /proc/mounts", "cat /host/from-host; echo", "cat /sub/inner; echo",
		"touch /config/x 2>/dev/null || echo config read-only",
		"while true; do echo page=$(cat /config/index.html) token=$(cat /secret/token); sleep 0.5; done",
	}, "; "))
	writer.VolumeMounts = []v1.VolumeMount{{Name: "shared", MountPath: "/shared"}}
	reader.VolumeMounts = []v1.VolumeMount{
		{Name: "shared", MountPath: "/shared"}, {Name: "config", MountPath: "/config"},
		{Name: "secret", MountPath: "/secret"}, {Name: "info", MountPath: "/info"}, {Name: "all", MountPath: "/all"},
		{Name: "mem", MountPath: "/mem"}, {Name: "host", MountPath: "/host"}, {Name: "host", MountPath: "/sub", SubPath: "nested"},
	}
	pod := n.createPod(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "vols", Labels: map[string]string{"tier": "web"}},
		Spec: v1.PodSpec{Containers: []v1.Container{writer, reader}, Volumes: []v1.Volume{
			{Name: "shared", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
			{Name: "mem", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory, SizeLimit: ptr.To(resource.MustParse("8Mi"))}}},
			{Name: "config", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: ref("site")}}},
			{Name: "secret", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "keys", DefaultMode: ptr.To[int32](0o400)}}},
			{Name: "info", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{Items: []v1.DownwardAPIVolumeFile{
				{Path: "labels", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels"}}}}}},
			{Name: "all", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
				{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: ref("site"), Items: []v1.KeyToPath{{Key: "index.html", Path: "index.html"}}}},
				{Secret: &v1.SecretProjection{LocalObjectReference: ref("keys")}}}}}},
			{Name: "host", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: host, Type: ptr.To(v1.HostPathDirectory)}}},
		}}})
	up := n.waitPod("default", "vols", "vols running", 90*time.Second, running)
	n.waitLog(pod, "reader", "page=v1")
	out := n.containerLog(pod, "reader")
	for _, w := range []string{"shared\n", "v1\n", "400\n", "abc\n", `tier="web"`, "v1abc\n", "tmpfs /mem tmpfs", "size=8192k",
		"host data\n", "inner data\n", "config read-only"} {
		if !strings.Contains(out, w) {
			t.Errorf("reader output lacks %q:\n%s", w, out)
		}
	}

	// The ConfigMap and the Secret change: the running container sees the
	// new files.
	cm, err := n.client.CoreV1().ConfigMaps("default").Get(context.Background(), "site", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["index.html"] = "v2"
	if _, err := n.client.CoreV1().ConfigMaps("default").Update(context.Background(), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	n.waitLog(pod, "reader", "page=v2")
	secret, err := n.client.CoreV1().Secrets("default").Get(context.Background(), "keys", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	secret.Data["token"] = []byte("xyz")
	if _, err := n.client.CoreV1().Secrets("default").Update(context.Background(), secret, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	n.waitLog(pod, "reader", "token=xyz")

	// Deleting the pod unmounts the tmpfs and removes the volumes.
	podDir := filepath.Join(n.cfg.dir("pods"), string(pod.UID))
	n.deleteAndCheckClean(up.Status.PodIP, "vols")
	if mounts, _ := os.ReadFile("/proc/self/mountinfo"); strings.Contains(string(mounts), podDir) {
		t.Errorf("a mount under %s is left", podDir)
	}
	if _, err := os.Stat(podDir); !os.IsNotExist(err) {
		t.Errorf("pod dir %s is left: %v", podDir, err)
	}
}

// TestMissingVolumeSource: a configMap volume whose ConfigMap does not exist
// holds the pod in ContainerCreating with a FailedMount event; it starts
// once the ConfigMap is created.
func TestMissingVolumeSource(t *testing.T) {
	n := startTestNode(t)
	c := busybox("c", "sleep", "3600")
	c.VolumeMounts = []v1.VolumeMount{{Name: "cfg", MountPath: "/cfg"}}
	pod := n.createPod(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "nocm"}, Spec: v1.PodSpec{Containers: []v1.Container{c},
		Volumes: []v1.Volume{{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: ref("absent")}}}}}})
	n.waitEventMatching(pod, "FailedMount", func(m string) bool { return strings.Contains(m, `configmap "absent" not found`) })
	p := n.waitPod("default", "nocm", "container creating", 10*time.Second, func(p *v1.Pod) bool {
		w := waitingOf(p, "c")
		return w != nil && w.Reason == "ContainerCreating"
	})
	if p.Status.PodIP != "" {
		t.Errorf("a sandbox was made (pod IP %s) before the volume was ready", p.Status.PodIP)
	}
	n.createConfigMap("absent", map[string]string{"k": "v"})
	n.waitPod("default", "nocm", "running once the ConfigMap exists", 60*time.Second, running)
}

// A disk emptyDir that outgrows its sizeLimit gets its pod evicted, as the
// kubelet's eviction manager does: Failed, reason Evicted, the kubelet's
// message, a DisruptionTarget condition and an event; the containers are
// stopped and not restarted. A volume within its limit evicts nothing.
func TestEmptyDirSizeLimit(t *testing.T) {
	n := startTestNode(t)
	c := busybox("c", "sh", "-c", "dd if=/dev/urandom of=/roomy/f bs=1024 count=100 && "+
		"dd if=/dev/urandom of=/scratch/f bs=1024 count=2048 && sleep 3600")
	c.VolumeMounts = []v1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}, {Name: "roomy", MountPath: "/roomy"}}
	sized := func(limit string) v1.VolumeSource {
		q := resource.MustParse(limit)
		return v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{SizeLimit: &q}}
	}
	pod := n.createPod(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "hog"}, Spec: v1.PodSpec{Containers: []v1.Container{c},
		Volumes: []v1.Volume{{Name: "scratch", VolumeSource: sized("1Mi")}, {Name: "roomy", VolumeSource: sized("10Mi")}}}})
	const want = `Usage of EmptyDir volume "scratch" exceeds the limit "1Mi". `
	p := n.waitPod("default", "hog", "evicted", time.Minute, func(p *v1.Pod) bool {
		return p.Status.Phase == v1.PodFailed && p.Status.Reason == "Evicted"
	})
	if p.Status.Message != want {
		t.Errorf("message %q, want %q", p.Status.Message, want)
	}
	if !hasCondition(p, v1.DisruptionTarget, "TerminationByKubelet") {
		t.Errorf("no DisruptionTarget condition: %+v", p.Status.Conditions)
	}
	n.waitEventMatching(pod, "Evicted", func(m string) bool { return m == want })
	p = n.waitPod("default", "hog", "container stopped", 30*time.Second, func(p *v1.Pod) bool {
		return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Terminated != nil
	})
	time.Sleep(3 * time.Second) // a sync or two: the eviction is final
	p = n.waitPod("default", "hog", "still stopped", time.Second, func(p *v1.Pod) bool {
		cs := p.Status.ContainerStatuses
		return p.Status.Phase == v1.PodFailed && len(cs) == 1 && cs[0].State.Terminated != nil && cs[0].RestartCount == 0
	})
}

func hasCondition(p *v1.Pod, t v1.PodConditionType, reason string) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == t && c.Status == v1.ConditionTrue && c.Reason == reason {
			return true
		}
	}
	return false
}

func ref(name string) v1.LocalObjectReference { return v1.LocalObjectReference{Name: name} }

func fieldRef(path string) *v1.EnvVarSource {
	return &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: path}}
}

func waitingOf(p *v1.Pod, container string) *v1.ContainerStateWaiting {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == container {
			return cs.State.Waiting
		}
	}
	return nil
}

func (n *testNode) createConfigMap(name string, data map[string]string) {
	n.t.Helper()
	cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: data}
	if _, err := n.client.CoreV1().ConfigMaps("default").Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
		n.t.Fatal(err)
	}
}

func (n *testNode) createSecret(name string, data map[string]string) {
	n.t.Helper()
	s := &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, StringData: data}
	if _, err := n.client.CoreV1().Secrets("default").Create(context.Background(), s, metav1.CreateOptions{}); err != nil {
		n.t.Fatal(err)
	}
}

func (n *testNode) createService(name string, port int32) {
	n.t.Helper()
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.ServiceSpec{
		Selector: map[string]string{"app": name},
		Ports:    []v1.ServicePort{{Port: port, TargetPort: intstr.FromInt32(port)}},
	}}
	if _, err := n.client.CoreV1().Services("default").Create(context.Background(), svc, metav1.CreateOptions{}); err != nil {
		n.t.Fatal(err)
	}
}

// containerLog is the text a container wrote (attempt 0), without the CRI
// log prefixes.
func (n *testNode) containerLog(pod *v1.Pod, container string) string {
	path := filepath.Join(n.cfg.PodLogDir, fmt.Sprintf("%s_%s_%s", pod.Namespace, pod.Name, pod.UID), container, "0.log")
	data, _ := os.ReadFile(path)
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		// <time> <stream> <F|P> <text>
		if f := strings.SplitN(line, " ", 4); len(f) == 4 {
			b.WriteString(f[3])
			if f[2] == "F" {
				b.WriteString("\n")
			}
		}
	}
	return b.String()
}

func (n *testNode) waitLog(pod *v1.Pod, container, text string) {
	n.t.Helper()
	servertest.Eventually(n.t, container+" logs "+text, 60*time.Second, func(context.Context) (bool, string) {
		out := n.containerLog(pod, container)
		return strings.Contains(out, text), out
	})
}
