package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"k8s.io/cri-streaming/pkg/streaming/remotecommand"

	"github.com/skiff-lab/skiff/cni"
	"github.com/skiff-lab/skiff/cri"
)

// fakeRuntime is a recording runtimeService for unit tests: it keeps
// sandboxes and containers in memory and logs every call that changes
// them, in order ("run sandbox", "create app", "start app", …).
type fakeRuntime struct {
	dir string // pod files go here

	callLog
	mu         sync.Mutex
	containers map[string]*cri.Container
	images     map[string]cri.Image
	nextID     int
	// exitOnStart makes the named containers exit with the code at once
	// when started (an init container that ran to completion).
	exitOnStart map[string]int
	// failStart makes starting the named containers fail.
	failStart map[string]error
}

var _ runtimeService = (*fakeRuntime)(nil)

func newFakeRuntime(dir string, images ...string) *fakeRuntime {
	f := &fakeRuntime{dir: dir, containers: map[string]*cri.Container{}, images: map[string]cri.Image{},
		exitOnStart: map[string]int{}, failStart: map[string]error{}}
	for _, ref := range images {
		f.images[ref] = cri.Image{Ref: ref, ID: ref + "@sha256:fake"}
	}
	return f
}

// callLog is a fake's record of the calls made to it, in order.
type callLog struct {
	mu    sync.Mutex
	calls []string
}

func (l *callLog) record(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, fmt.Sprintf(format, args...))
}

// Calls returns the calls made so far and forgets them.
func (l *callLog) Calls() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	calls := l.calls
	l.calls = nil
	return calls
}

func (f *fakeRuntime) RunSandbox(_ context.Context, spec cri.SandboxSpec) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("run sandbox")
	f.containers[spec.ID] = &cri.Container{ID: spec.ID, Kind: cri.KindSandbox, Pod: spec.Pod, Image: spec.Image,
		NetNS: spec.NetNS, State: cri.StateRunning, CreatedAt: time.Now(), StartedAt: time.Now()}
	return nil
}

func (f *fakeRuntime) SetSandboxIPs(_ context.Context, id string, ips []string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.containers[id]
	if !ok {
		return fmt.Errorf("sandbox %s: not found", id)
	}
	c.PodIPs = ips
	return nil
}

func (f *fakeRuntime) StopContainer(_ context.Context, id string, _ time.Duration) (cri.Stop, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.containers[id]
	if !ok {
		return cri.NotRunning, nil
	}
	f.record("stop %s", describe(c))
	if c.State != cri.StateRunning {
		return cri.NotRunning, nil
	}
	c.State, c.ExitCode, c.Reason, c.FinishedAt = cri.StateExited, 137, "Error", time.Now()
	return cri.Killed, nil
}

func (f *fakeRuntime) RemoveContainer(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := f.containers[id]; ok {
		f.record("remove %s", describe(c))
		delete(f.containers, id)
	}
	return nil
}

func (f *fakeRuntime) CreateContainer(_ context.Context, spec cri.ContainerSpec) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextID++
	id := fmt.Sprintf("c%d", f.nextID)
	f.record("create %s", spec.Name)
	f.containers[id] = &cri.Container{ID: id, Kind: cri.KindContainer, Pod: spec.Pod, Name: spec.Name,
		Attempt: spec.Attempt, SandboxID: spec.SandboxID, Image: spec.Image, ImageID: spec.Image + "@sha256:fake",
		State: cri.StateCreated, CreatedAt: time.Now(), Resources: spec.Resources.Source}
	return id, nil
}

func (f *fakeRuntime) UpdateResources(_ context.Context, id string, res cri.Resources) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.containers[id]
	if !ok || c.State != cri.StateRunning {
		return fmt.Errorf("container %s: not running", id)
	}
	f.record("update %s %s", c.Name, res.Source)
	c.Resources = res.Source
	return nil
}

func (f *fakeRuntime) StartContainer(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.containers[id]
	if !ok {
		return fmt.Errorf("container %s: not found", id)
	}
	f.record("start %s", c.Name)
	if err := f.failStart[c.Name]; err != nil {
		return err
	}
	c.State, c.StartedAt = cri.StateRunning, time.Now()
	if code, ok := f.exitOnStart[c.Name]; ok {
		c.State, c.ExitCode, c.FinishedAt, c.Reason = cri.StateExited, code, time.Now(), "Completed"
	}
	return nil
}

func (f *fakeRuntime) List(_ context.Context, podUID string) ([]cri.Container, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []cri.Container
	for _, c := range f.containers {
		if podUID == "" || c.Pod.UID == podUID {
			cc := *c
			cc.PodIPs = slices.Clone(c.PodIPs)
			out = append(out, cc)
		}
	}
	slices.SortFunc(out, func(a, b cri.Container) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return out, nil
}

func (f *fakeRuntime) Version(context.Context) (string, error) { return "fake://1", nil }

func (f *fakeRuntime) StreamExec(context.Context, string, []string, io.Reader, io.WriteCloser, io.WriteCloser, bool, <-chan remotecommand.TerminalSize) error {
	return errors.New("the fake runtime cannot stream")
}

func (f *fakeRuntime) StreamAttach(context.Context, string, io.Reader, io.WriteCloser, io.WriteCloser, <-chan remotecommand.TerminalSize) error {
	return errors.New("the fake runtime cannot stream")
}

func (f *fakeRuntime) LogWriting(string) bool { return false }

func (f *fakeRuntime) ExecSync(context.Context, string, []string, time.Duration) ([]byte, []byte, int, error) {
	return nil, nil, 0, nil
}

func (f *fakeRuntime) Image(_ context.Context, ref string) (cri.Image, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	img, ok := f.images[ref]
	if !ok {
		return cri.Image{}, cri.ErrImageNotPresent
	}
	return img, nil
}

func (f *fakeRuntime) Pull(_ context.Context, ref string, _ cri.Credentials) (cri.Image, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("pull %s", ref)
	img := cri.Image{Ref: ref, ID: ref + "@sha256:fake"}
	f.images[ref] = img
	return img, nil
}

func (f *fakeRuntime) Images(context.Context) ([]cri.Image, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []cri.Image
	for _, img := range f.images {
		out = append(out, img)
	}
	return out, nil
}

func (f *fakeRuntime) RemoveImage(_ context.Context, ref string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("remove image %s", ref)
	delete(f.images, ref)
	return nil
}

func (f *fakeRuntime) WatchExits(ctx context.Context, _ func(cri.PodRef)) error {
	<-ctx.Done()
	return ctx.Err()
}

func (f *fakeRuntime) PodDir(uid string) string { return filepath.Join(f.dir, "pods", uid) }

func (f *fakeRuntime) WritePodFile(uid, name string, data []byte) (string, error) {
	path := filepath.Join(f.PodDir(uid), name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	return path, os.WriteFile(path, data, 0o644)
}

func (f *fakeRuntime) MountImage(context.Context, string, string, string, string) error {
	return errors.New("the fake runtime mounts no image")
}

func (f *fakeRuntime) VolumeDir(uid, plugin, name string) (string, error) {
	path := filepath.Join(f.PodDir(uid), "volumes", plugin, name)
	return path, os.MkdirAll(path, 0o755)
}

func (f *fakeRuntime) EmptyDir(uid, volume string) (string, error) {
	return f.VolumeDir(uid, "empty-dir", volume)
}

func (f *fakeRuntime) EmptyDirPath(uid, volume string) string {
	return filepath.Join(f.PodDir(uid), "volumes", "empty-dir", volume)
}

func (f *fakeRuntime) SetPodResources(string, *specs.LinuxResources) error { return nil }

func (f *fakeRuntime) RemovePod(_ context.Context, pod cri.PodRef) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("remove pod %s", pod.Name)
	return os.RemoveAll(f.PodDir(pod.UID))
}

// describe names a container in the call log: "sandbox" or its name.
func describe(c *cri.Container) string {
	if c.Kind == cri.KindSandbox {
		return "sandbox"
	}
	return c.Name
}

// fakeNetwork is a recording network: it hands out 10.244.0.<n> and logs
// CNI ADD and DEL.
type fakeNetwork struct {
	dir string
	callLog

	mu     sync.Mutex
	next   int
	netnss map[string]bool
}

var _ network = (*fakeNetwork)(nil)

func newFakeNetwork(dir string) *fakeNetwork {
	return &fakeNetwork{dir: dir, netnss: map[string]bool{}}
}

func (n *fakeNetwork) CreateNetNS(id string) (string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.netnss[id] = true
	return n.NetNSPath(id), nil
}

func (n *fakeNetwork) Setup(_ context.Context, pod cni.Pod) (cni.Result, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.next++
	n.record("add %s", pod.Name)
	return cni.Result{IPs: []net.IP{net.IPv4(10, 244, 0, byte(n.next+1))}}, nil
}

func (n *fakeNetwork) Teardown(_ context.Context, id string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.record("del")
	delete(n.netnss, id)
	return nil
}

func (n *fakeNetwork) List() ([]string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	var ids []string
	for id := range n.netnss {
		ids = append(ids, id)
	}
	return ids, nil
}

func (n *fakeNetwork) NetNSPath(id string) string { return filepath.Join(n.dir, "netns", id) }

func (n *fakeNetwork) Configure(string) error                { return nil }
func (n *fakeNetwork) EnsureMasquerade(string, string) error { return nil }

func (n *fakeNetwork) DialPod(context.Context, string, int32) (net.Conn, error) {
	return nil, errors.New("the fake network has no pods to dial")
}
