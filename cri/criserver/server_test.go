package criserver

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/skiff-lab/skiff/cri"
)

// fakeRuntime holds a fixed node: pod "web" (running, two attempts of
// container "app", the first exited) and pod "old" (sandbox stopped).
type fakeRuntime struct {
	containers []cri.Container
	images     []cri.Image
	removed    []string
	execs      [][]string
}

var created = time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)

func newFake() *fakeRuntime {
	web := cri.PodRef{UID: "uid-web", Namespace: "default", Name: "web"}
	old := cri.PodRef{UID: "uid-old", Namespace: "kube-system", Name: "old"}
	return &fakeRuntime{
		containers: []cri.Container{
			{ID: "aaa111", Kind: cri.KindSandbox, Pod: web, State: cri.StateRunning, PodIPs: []string{"10.42.0.5", "fd00::5"}, CreatedAt: created},
			{ID: "aaa222", Kind: cri.KindContainer, Pod: web, Name: "app", SandboxID: "aaa111", State: cri.StateExited, ExitCode: 2, Reason: "Error",
				Image: "docker.io/library/busybox:1.36", LogPath: "/var/log/pods/default_web_uid-web/app/0.log", CreatedAt: created},
			{ID: "abc333", Kind: cri.KindContainer, Pod: web, Name: "app", Attempt: 1, SandboxID: "aaa111", State: cri.StateRunning,
				Image: "docker.io/library/busybox:1.36", CreatedAt: created, StartedAt: created.Add(time.Second)},
			{ID: "bbb111", Kind: cri.KindSandbox, Pod: old, State: cri.StateExited, CreatedAt: created},
		},
		images: []cri.Image{
			{Ref: "docker.io/library/busybox:1.36", ID: "docker.io/library/busybox@sha256:1234abcd", Size: 4 << 20, Pinned: true},
			{Ref: "registry.k8s.io/pause:3.10", ID: "registry.k8s.io/pause@sha256:9999ffff", Size: 1 << 20},
		},
	}
}

func (f *fakeRuntime) Version(context.Context) (string, error) { return "v1.6.20", nil }
func (f *fakeRuntime) List(context.Context, string) ([]cri.Container, error) {
	return f.containers, nil
}
func (f *fakeRuntime) Images(context.Context) ([]cri.Image, error) { return f.images, nil }
func (f *fakeRuntime) Image(_ context.Context, ref string) (cri.Image, error) {
	for _, img := range f.images {
		if img.Ref == ref {
			return img, nil
		}
	}
	return cri.Image{}, cri.ErrImageNotPresent
}
func (f *fakeRuntime) Pull(_ context.Context, ref string, creds cri.Credentials) (cri.Image, error) {
	if creds["example.test"].Password != "s3cret" {
		return cri.Image{}, errors.New("401 Unauthorized")
	}
	return cri.Image{Ref: ref, ID: "example.test/app@sha256:5555"}, nil
}
func (f *fakeRuntime) RemoveImage(_ context.Context, ref string) error {
	f.removed = append(f.removed, ref)
	return nil
}
func (f *fakeRuntime) ExecSync(_ context.Context, id string, cmd []string, _ time.Duration) ([]byte, []byte, int, error) {
	f.execs = append(f.execs, append([]string{id}, cmd...))
	return []byte("out"), []byte("err"), 3, nil
}
func (f *fakeRuntime) StreamExec(context.Context, string, []string, io.Reader, io.WriteCloser, io.WriteCloser, bool, <-chan remotecommand.TerminalSize) error {
	return nil
}
func (f *fakeRuntime) StreamAttach(context.Context, string, io.Reader, io.WriteCloser, io.WriteCloser, <-chan remotecommand.TerminalSize) error {
	return nil
}

// serve starts a Server over f on a socket in a temp dir and returns
// clients of both services.
func serve(t *testing.T, f *fakeRuntime, sum *statsapi.Summary) (runtimeapi.RuntimeServiceClient, runtimeapi.ImageServiceClient) {
	t.Helper()
	if sum == nil {
		sum = &statsapi.Summary{}
	}
	s, err := New(Config{Runtime: f, Stats: func(context.Context) (*statsapi.Summary, error) { return sum, nil }, ImageFS: t.TempDir(),
		NetworkReady: func() error { return errors.New("no pod CIDR yet") }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	sock := filepath.Join(t.TempDir(), "cri.sock")
	if err := s.Start(ctx, sock); err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return runtimeapi.NewRuntimeServiceClient(conn), runtimeapi.NewImageServiceClient(conn)
}

func code(err error) codes.Code { return status.Code(err) }

func TestListings(t *testing.T) {
	rt, _ := serve(t, newFake(), nil)
	ctx := context.Background()
	pods, err := rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil || len(pods.Items) != 2 || pods.Items[0].State != runtimeapi.PodSandboxState_SANDBOX_READY ||
		pods.Items[1].State != runtimeapi.PodSandboxState_SANDBOX_NOTREADY || pods.Items[0].Metadata.Name != "web" {
		t.Fatalf("sandboxes: %v %v", pods, err)
	}
	ready, err := rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{
		State:         &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY},
		LabelSelector: map[string]string{cri.LabelPodNamespace: "default"}}})
	if err != nil || len(ready.Items) != 1 || ready.Items[0].Id != "aaa111" {
		t.Errorf("ready sandboxes in default: %v %v", ready, err)
	}
	ctrs, err := rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{PodSandboxId: "aaa1"}})
	if err != nil || len(ctrs.Containers) != 2 || ctrs.Containers[1].Metadata.Attempt != 1 ||
		ctrs.Containers[1].Labels[cri.LabelContainerName] != "app" {
		t.Errorf("containers of sandbox aaa1…: %v %v", ctrs, err)
	}
	running, err := rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
		State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}}})
	if err != nil || len(running.Containers) != 1 || running.Containers[0].Id != "abc333" {
		t.Errorf("running containers: %v %v", running, err)
	}
}

func TestStatusByPrefix(t *testing.T) {
	rt, _ := serve(t, newFake(), nil)
	ctx := context.Background()
	st, err := rt.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: "aaa2", Verbose: true})
	if err != nil || st.Status.Id != "aaa222" || st.Status.ExitCode != 2 || st.Status.Reason != "Error" ||
		st.Status.LogPath == "" || st.Info["info"] != `{"resources":"","sandboxID":"aaa111"}` {
		t.Errorf("status of aaa2…: %v %v", st, err)
	}
	if _, err := rt.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: "a"}); code(err) != codes.InvalidArgument {
		t.Errorf("an ambiguous prefix: %v, want InvalidArgument", err)
	}
	if _, err := rt.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: "zzz"}); code(err) != codes.NotFound {
		t.Errorf("an unknown ID: %v, want NotFound", err)
	}
	sb, err := rt.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: "aaa1"})
	if err != nil || sb.Status.Network.Ip != "10.42.0.5" || len(sb.Status.Network.AdditionalIps) != 1 ||
		sb.Status.Metadata.Namespace != "default" {
		t.Errorf("sandbox status: %v %v", sb, err)
	}
}

func TestAgentOwnsLifecycle(t *testing.T) {
	rt, _ := serve(t, newFake(), nil)
	ctx := context.Background()
	_, err := rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: "aaa111"})
	if code(err) != codes.FailedPrecondition || !strings.Contains(status.Convert(err).Message(), "kubectl") {
		t.Errorf("stopping a sandbox: %v, want FailedPrecondition naming kubectl", err)
	}
	if _, err := rt.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: "abc333"}); code(err) != codes.FailedPrecondition {
		t.Errorf("removing a container: %v", err)
	}
	if _, err := rt.CheckpointContainer(ctx, &runtimeapi.CheckpointContainerRequest{}); code(err) != codes.Unimplemented {
		t.Errorf("checkpoint: %v, want Unimplemented", err)
	}
}

func TestExec(t *testing.T) {
	f := newFake()
	rt, _ := serve(t, f, nil)
	ctx := context.Background()
	out, err := rt.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: "abc", Cmd: []string{"ls", "/"}})
	if err != nil || string(out.Stdout) != "out" || string(out.Stderr) != "err" || out.ExitCode != 3 ||
		!slices.Equal(f.execs[0], []string{"abc333", "ls", "/"}) {
		t.Errorf("exec: %v %v %v", out, err, f.execs)
	}
	if _, err := rt.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: "aaa222", Cmd: []string{"ls"}}); code(err) != codes.FailedPrecondition {
		t.Errorf("exec in an exited container: %v", err)
	}
	url, err := rt.Exec(ctx, &runtimeapi.ExecRequest{ContainerId: "abc", Cmd: []string{"sh"}, Stdout: true})
	if err != nil || !strings.Contains(url.Url, "http://127.0.0.1:") {
		t.Errorf("exec URL: %v %v", url, err)
	}
	if _, err := rt.PortForward(ctx, &runtimeapi.PortForwardRequest{PodSandboxId: "aaa1"}); code(err) != codes.Unimplemented {
		t.Errorf("port-forward without a dialer: %v", err)
	}
}

func TestImages(t *testing.T) {
	f := newFake()
	rt, img := serve(t, f, nil)
	ctx := context.Background()
	list, err := img.ListImages(ctx, &runtimeapi.ListImagesRequest{})
	if err != nil || len(list.Images) != 2 || list.Images[0].Id != "sha256:1234abcd" || !list.Images[0].Pinned {
		t.Errorf("images: %v %v", list, err)
	}
	st, err := img.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: "busybox:1.36"}})
	if err != nil || st.Image.GetRepoTags()[0] != "docker.io/library/busybox:1.36" {
		t.Errorf("status of busybox:1.36: %v %v", st, err)
	}
	if st, err := img.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: "nginx"}}); err != nil || st.Image != nil {
		t.Errorf("an absent image: %v %v, want none and no error", st, err)
	}
	if _, err := img.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: "9999f"}}); err != nil ||
		!slices.Equal(f.removed, []string{"registry.k8s.io/pause:3.10"}) {
		t.Errorf("remove by ID prefix: %v %v", err, f.removed)
	}
	pulled, err := img.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: "example.test/app"},
		Auth: &runtimeapi.AuthConfig{Username: "u", Password: "s3cret"}})
	if err != nil || pulled.ImageRef != "example.test/app@sha256:5555" {
		t.Errorf("pull with a login: %v %v", pulled, err)
	}
	if fs, err := img.ImageFsInfo(ctx, &runtimeapi.ImageFsInfoRequest{}); err != nil || fs.ImageFilesystems[0].UsedBytes == nil {
		t.Errorf("image fs: %v %v", fs, err)
	}
	stat, err := rt.Status(ctx, &runtimeapi.StatusRequest{})
	if err != nil || !stat.Status.Conditions[0].Status || stat.Status.Conditions[1].Status ||
		stat.Status.Conditions[1].Message != "no pod CIDR yet" {
		t.Errorf("runtime status: %v %v", stat, err)
	}
}

func TestStats(t *testing.T) {
	cores, ws := uint64(5_000_000), uint64(3<<20)
	at := metav1.NewTime(created)
	sum := &statsapi.Summary{Pods: []statsapi.PodStats{{PodRef: statsapi.PodReference{UID: "uid-web"},
		CPU: &statsapi.CPUStats{Time: at, UsageNanoCores: &cores}, Memory: &statsapi.MemoryStats{Time: at, WorkingSetBytes: &ws},
		Containers: []statsapi.ContainerStats{{Name: "app", CPU: &statsapi.CPUStats{Time: at, UsageNanoCores: &cores},
			Memory: &statsapi.MemoryStats{Time: at, WorkingSetBytes: &ws}}}}}}
	rt, _ := serve(t, newFake(), sum)
	ctx := context.Background()
	list, err := rt.ListContainerStats(ctx, &runtimeapi.ListContainerStatsRequest{})
	if err != nil || len(list.Stats) != 1 || list.Stats[0].Attributes.Id != "abc333" ||
		list.Stats[0].Cpu.UsageNanoCores.GetValue() != cores || list.Stats[0].Memory.WorkingSetBytes.GetValue() != ws {
		t.Errorf("container stats: %v %v", list, err)
	}
	pods, err := rt.ListPodSandboxStats(ctx, &runtimeapi.ListPodSandboxStatsRequest{})
	if err != nil || len(pods.Stats) != 1 || pods.Stats[0].Linux.Memory.WorkingSetBytes.GetValue() != ws ||
		len(pods.Stats[0].Linux.Containers) != 1 {
		t.Errorf("pod stats: %v %v", pods, err)
	}
}
