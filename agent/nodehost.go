package agent

import (
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/skiff-lab/skiff/agent/nodeapi"
	"github.com/skiff-lab/skiff/agent/stats"
	"github.com/skiff-lab/skiff/cri"
)

// streamRuntime is what the node API needs of the runtime beyond syncing
// pods (implemented by *cri.Runtime).
type streamRuntime interface {
	StreamExec(ctx context.Context, id string, cmd []string, in io.Reader, out, errOut io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize) error
	StreamAttach(ctx context.Context, id string, in io.Reader, out, errOut io.WriteCloser, resize <-chan remotecommand.TerminalSize) error
	LogWriting(id string) bool
}

// podDialer connects into a pod's network namespace (implemented by
// *cni.Network).
type podDialer interface {
	DialPod(ctx context.Context, id string, port int32) (net.Conn, error)
}

// nodeHost is the agent as the node API's Host.
type nodeHost struct {
	a     *Agent
	stats *stats.Collector
}

var _ nodeapi.Host = nodeHost{}

// ContainerLogs writes the log of the container's current attempt, or with
// opts.Previous of the one before, as the kubelet does.
func (h nodeHost) ContainerLogs(ctx context.Context, namespace, name, container string, opts *v1.PodLogOptions, w io.Writer) error {
	pod, err := h.pod(namespace+"/"+name, "")
	if err != nil {
		return err
	}
	c, err := h.logContainer(ctx, pod, container, opts.Previous)
	if err != nil {
		return err
	}
	read := cri.LogOptions{Tail: -1, Timestamps: opts.Timestamps}
	if opts.TailLines != nil {
		read.Tail = *opts.TailLines
	}
	if opts.LimitBytes != nil {
		read.LimitBytes = *opts.LimitBytes
	}
	if opts.SinceSeconds != nil {
		read.Since = h.a.clock.Now().Add(-time.Duration(*opts.SinceSeconds) * time.Second)
	} else if opts.SinceTime != nil {
		read.Since = opts.SinceTime.Time
	}
	if opts.Follow && !opts.Previous && c.State == cri.StateRunning {
		read.Follow = true
		read.Running = func() bool { return h.a.rt.LogWriting(c.ID) }
	}
	return cri.ReadLog(ctx, c.LogPath, read, w)
}

// logContainer is the attempt of container whose log is asked for.
func (h nodeHost) logContainer(ctx context.Context, pod *v1.Pod, container string, previous bool) (cri.Container, error) {
	if !hasContainer(pod, container) {
		return cri.Container{}, nodeapi.NotFound("container %q not found in pod %q", container, pod.Name)
	}
	st, err := h.state(ctx, pod)
	if err != nil {
		return cri.Container{}, err
	}
	attempts := st.containers[container]
	switch {
	case previous && len(attempts) < 2:
		return cri.Container{}, nodeapi.BadRequest("previous terminated container %q in pod %q not found", container, pod.Name)
	case previous:
		return attempts[1], nil
	case len(attempts) == 0:
		reason := "ContainerCreating"
		if w, ok := h.a.waits.get(pod.UID)[container]; ok {
			reason = w.Reason
		}
		return cri.Container{}, nodeapi.BadRequest("container %q in pod %q is waiting to start: %s", container, pod.Name, reason)
	}
	return attempts[0], nil
}

// ExecInContainer runs cmd in the container's running attempt. A non-zero
// exit is an ExitError with its code, which the stream reports.
func (h nodeHost) ExecInContainer(ctx context.Context, name, uid, container string, cmd []string, in io.Reader, out, stderr io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize, _ time.Duration) error {
	c, err := h.runningContainer(ctx, name, uid, container)
	if err != nil {
		return err
	}
	return h.a.rt.StreamExec(ctx, c.ID, cmd, in, out, stderr, tty, resize)
}

// AttachContainer connects to the container's own process until it exits.
func (h nodeHost) AttachContainer(ctx context.Context, name, uid, container string, in io.Reader, out, stderr io.WriteCloser, _ bool, resize <-chan remotecommand.TerminalSize) error {
	c, err := h.runningContainer(ctx, name, uid, container)
	if err != nil {
		return err
	}
	return h.a.rt.StreamAttach(ctx, c.ID, in, out, stderr, resize)
}

// PortForward copies between stream and port on the pod's loopback
// address, inside its network namespace.
func (h nodeHost) PortForward(ctx context.Context, name, uid string, port int32, stream io.ReadWriteCloser) error {
	defer stream.Close()
	pod, err := h.pod(name, uid)
	if err != nil {
		return err
	}
	st, err := h.state(ctx, pod)
	if err != nil {
		return err
	}
	sb := st.readySandbox()
	if sb == nil {
		return fmt.Errorf("pod %q has no running sandbox", pod.Name)
	}
	return h.a.forwardToSandbox(ctx, sb.ID, port, stream, fmt.Sprintf("pod %q", pod.Name))
}

// forwardToSandbox copies between stream and port on the loopback address
// of the sandbox's network namespace; what names the sandbox in the
// kubelet's error.
func (a *Agent) forwardToSandbox(ctx context.Context, sandboxID string, port int32, stream io.ReadWriteCloser, what string) error {
	defer stream.Close()
	conn, err := a.net.DialPod(ctx, sandboxID, port)
	if err != nil {
		return fmt.Errorf("failed to connect to localhost:%d inside the network namespace of %s: %w", port, what, err)
	}
	return splice(conn, stream)
}

// splice copies both ways until the pod's side has finished sending; the
// client's end of stream closes the write half towards the pod.
func splice(conn net.Conn, stream io.ReadWriteCloser) error {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		io.Copy(conn, stream)
		if tcp, ok := conn.(interface{ CloseWrite() error }); ok {
			tcp.CloseWrite()
		}
	}()
	_, err := io.Copy(stream, conn)
	stream.Close() // ends the copy above if the client is still sending
	conn.Close()
	wg.Wait()
	return err
}

// runningContainer is the running attempt of container in the pod named
// "<namespace>/<name>".
func (h nodeHost) runningContainer(ctx context.Context, name, uid, container string) (cri.Container, error) {
	pod, err := h.pod(name, uid)
	if err != nil {
		return cri.Container{}, err
	}
	if !hasContainer(pod, container) {
		return cri.Container{}, nodeapi.NotFound("container %q not found in pod %q", container, pod.Name)
	}
	st, err := h.state(ctx, pod)
	if err != nil {
		return cri.Container{}, err
	}
	c := st.latest(container)
	if c == nil || c.State != cri.StateRunning {
		return cri.Container{}, nodeapi.BadRequest("container %q in pod %q is not running", container, pod.Name)
	}
	return *c, nil
}

// pod finds a pod of this node by "<namespace>/<name>" and, if given, UID.
func (h nodeHost) pod(name, uid string) (*v1.Pod, error) {
	namespace, podName, _ := strings.Cut(name, "/")
	pod, ok := h.a.pods.named(namespace, podName)
	if !ok || (uid != "" && string(pod.UID) != uid) {
		return nil, nodeapi.NotFound("pod %q not found on this node", name)
	}
	return pod, nil
}

func (h nodeHost) state(ctx context.Context, pod *v1.Pod) (podState, error) {
	all, err := h.a.rt.List(ctx, string(pod.UID))
	if err != nil {
		return podState{}, err
	}
	return groupState(all), nil
}

func hasContainer(pod *v1.Pod, name string) bool {
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			if c.Name == name {
				return true
			}
		}
	}
	for _, c := range ephemeralContainers(pod) {
		if c.Name == name {
			return true
		}
	}
	return false
}

// StatsSummary is the node's, its pods' and their containers' CPU and
// memory, from the stats collector's last samples.
func (h nodeHost) StatsSummary(context.Context) (*statsapi.Summary, error) {
	return h.stats.Summary(), nil
}

// statsPods lists the running containers of the node's pods for the
// stats collector.
func (a *Agent) statsPods(ctx context.Context) ([]stats.Pod, error) {
	all, err := a.rt.List(ctx, "")
	if err != nil {
		return nil, err
	}
	byUID := map[string]*stats.Pod{}
	var pods []*stats.Pod
	for _, c := range all {
		if c.Kind != cri.KindContainer || c.State != cri.StateRunning {
			continue
		}
		p := byUID[c.Pod.UID]
		if p == nil {
			p = &stats.Pod{UID: c.Pod.UID, Namespace: c.Pod.Namespace, Name: c.Pod.Name}
			byUID[c.Pod.UID] = p
			pods = append(pods, p)
		}
		p.Containers = append(p.Containers, stats.Container{ID: c.ID, Name: c.Name, StartTime: c.StartedAt})
	}
	out := make([]stats.Pod, len(pods))
	for i, p := range pods {
		out[i] = *p
	}
	return out, nil
}
