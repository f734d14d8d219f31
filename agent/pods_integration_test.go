package agent

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tasks "github.com/containerd/containerd/api/services/tasks/v1"
	containerd "github.com/containerd/containerd/v2/client"

	"github.com/skiff-lab/skiff/controlplane/servertest"
	"github.com/skiff-lab/skiff/cri"
	"github.com/skiff-lab/skiff/cri/supervisor"
)

func running(p *v1.Pod) bool {
	if p.Status.Phase != v1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// webPod serves "hello from <name>" on :8080, written by an init container
// into an emptyDir, and a second container fetches it over 127.0.0.1.
func webPod(name string) *v1.Pod {
	web := busybox("web", "httpd", "-f", "-p", "8080", "-h", "/www")
	web.VolumeMounts = []v1.VolumeMount{{Name: "www", MountPath: "/www"}}
	init := busybox("init", "sh", "-c", "echo hello from $POD > /www/index.html")
	init.Env = []v1.EnvVar{{Name: "POD", Value: name}}
	init.VolumeMounts = web.VolumeMounts
	fetch := busybox("fetch", "sh", "-c", "until wget -q -O - http://127.0.0.1:8080/index.html; do sleep 0.2; done; exec sleep 3600")
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.PodSpec{
			InitContainers: []v1.Container{init},
			Containers:     []v1.Container{web, fetch},
			Volumes:        []v1.Volume{{Name: "www", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}},
		},
	}
}

func TestPodsRunAndTalk(t *testing.T) {
	n := startTestNode(t)
	n.createPod(webPod("web-a"))
	a := n.waitPod("default", "web-a", "web-a running", 90*time.Second, running)
	if a.Status.PodIP == "" || len(a.Status.ContainerStatuses) != 2 {
		t.Fatalf("status: %+v", a.Status)
	}
	for _, cs := range a.Status.ContainerStatuses {
		if !strings.HasPrefix(cs.ContainerID, "containerd://") || cs.ImageID == "" || cs.State.Running == nil {
			t.Errorf("container status %+v", cs)
		}
	}

	n.checkOneShim(a)

	// The second container reached the first over the pod's loopback: its
	// log (CRI format) holds the page.
	logPath := filepath.Join(n.cfg.PodLogDir, fmt.Sprintf("default_web-a_%s", a.UID), "fetch", "0.log")
	servertest.Eventually(t, "fetch log", 20*time.Second, func(context.Context) (bool, string) {
		b, _ := os.ReadFile(logPath)
		return strings.Contains(string(b), " stdout F hello from web-a"), string(b)
	})

	// The host reaches the pod's IP over the bridge.
	if body := httpGet(t, "http://"+a.Status.PodIP+":8080/index.html"); body != "hello from web-a\n" {
		t.Errorf("host got %q", body)
	}

	// Another pod reaches the first pod's IP.
	b := busybox("client", "sh", "-c", "wget -q -O - http://"+a.Status.PodIP+":8080/index.html")
	n.createPod(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "client"}, Spec: v1.PodSpec{Containers: []v1.Container{b}, RestartPolicy: v1.RestartPolicyNever}})
	done := n.waitPod("default", "client", "client succeeded", 60*time.Second, func(p *v1.Pod) bool { return p.Status.Phase == v1.PodSucceeded })
	clientLog := filepath.Join(n.cfg.PodLogDir, fmt.Sprintf("default_client_%s", done.UID), "client", "0.log")
	if got, _ := os.ReadFile(clientLog); !strings.Contains(string(got), "hello from web-a") {
		t.Errorf("client log: %q", got)
	}

	n.deleteAndCheckClean(a.Status.PodIP, "web-a", "client")
}

func httpGet(t *testing.T, url string) string {
	t.Helper()
	c := http.Client{Timeout: 3 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// deleteAndCheckClean deletes pods and checks the node is left with no
// container, netns, veth, IP allocation or iptables rule of theirs.
func (n *testNode) deleteAndCheckClean(ip string, names ...string) {
	n.t.Helper()
	ctx := context.Background()
	for _, name := range names {
		if err := n.client.CoreV1().Pods("default").Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			n.t.Fatal(err)
		}
	}
	servertest.Eventually(n.t, "pods gone", 60*time.Second, func(ctx context.Context) (bool, string) {
		l, err := n.client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		return err == nil && len(l.Items) == 0, fmt.Sprint(err)
	})
	rt := n.runtime()
	if left, err := rt.List(ctx, ""); err != nil || len(left) > 0 {
		n.t.Errorf("containers left: %v %v", left, err)
	}
	if entries, _ := os.ReadDir(n.cfg.NetNSDir); len(entries) > 0 {
		n.t.Errorf("netns left: %v", entries)
	}
	if out, _ := exec.Command("ip", "-o", "link", "show", "master", n.cfg.Bridge).CombinedOutput(); strings.TrimSpace(string(out)) != "" {
		n.t.Errorf("veths left on %s: %s", n.cfg.Bridge, out)
	}
	if ipam, _ := filepath.Glob(filepath.Join(n.cfg.dir("cni", "ipam"), "*", ip)); len(ipam) > 0 {
		n.t.Errorf("IP allocation left: %v", ipam)
	}
	if out, _ := exec.Command("iptables-save").CombinedOutput(); strings.Contains(string(out), ip+"/") || strings.Contains(string(out), ip+" ") {
		n.t.Errorf("iptables rules left for %s", ip)
	}
}

// checkOneShim checks that every running process of the pod (the sandbox
// and its containers) is a child of the same runc shim.
func (n *testNode) checkOneShim(pod *v1.Pod) {
	n.t.Helper()
	ctx := context.Background()
	d, err := supervisor.Start(ctx, supervisor.Config{Dir: n.cfg.dir("containerd")})
	if err != nil {
		n.t.Fatal(err)
	}
	client, err := containerd.New(d.Address(), containerd.WithDefaultNamespace(n.cfg.Namespace))
	if err != nil {
		n.t.Fatal(err)
	}
	defer client.Close()
	all, err := n.runtime().List(ctx, string(pod.UID))
	if err != nil {
		n.t.Fatal(err)
	}
	shims := map[string]bool{}
	for _, c := range all {
		if c.State != cri.StateRunning {
			continue
		}
		task, err := client.TaskService().Get(ctx, &tasks.GetRequest{ContainerID: c.ID})
		if err != nil {
			n.t.Fatal(err)
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", task.Process.Pid))
		if err != nil {
			n.t.Fatal(err)
		}
		// pid (comm) state ppid …: comm may hold spaces, so split after ')'.
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		shims[fields[1]] = true
	}
	if len(shims) != 1 {
		n.t.Errorf("pod %s runs under shims %v, want one", pod.Name, shims)
	}
}
