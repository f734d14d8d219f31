package cri

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"syscall"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/errdefs"
)

// NewID returns a fresh container or sandbox ID.
func NewID() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// CreateContainer creates one container attempt in its pod's sandbox, with its
// output going to its CRI log file, and returns its ID. It is not started. On
// failure nothing is left behind; a container whose runAsNonRoot its image
// breaks is refused with an error matching ErrRunAsNonRoot.
func (r *Runtime) CreateContainer(ctx context.Context, spec ContainerSpec) (id string, err error) {
	ctx = r.ctx(ctx)
	img, err := r.client.GetImage(ctx, spec.Image)
	if err != nil {
		return "", fmt.Errorf("image %s: %w", spec.Image, err)
	}
	sandbox, err := r.client.LoadContainer(ctx, spec.SandboxID)
	if err != nil {
		return "", fmt.Errorf("sandbox %s: %w", spec.SandboxID, err)
	}
	sandboxTask, err := sandbox.Task(ctx, nil)
	if err != nil {
		return "", fmt.Errorf("sandbox %s is not running: %w", spec.SandboxID, err)
	}
	sandboxLabels, err := sandbox.Labels(ctx)
	if err != nil {
		return "", fmt.Errorf("sandbox %s: %w", spec.SandboxID, err)
	}
	if spec.Security, err = r.checkSecurity(ctx, img, spec); err != nil {
		return "", err
	}
	id = NewID()
	logPath := r.LogPath(spec.Pod, spec.Name, spec.Attempt)
	labels := spec.Pod.labels(KindContainer)
	labels[LabelContainerName] = spec.Name
	labels[LabelAttempt] = strconv.Itoa(spec.Attempt)
	labels[LabelSandbox] = spec.SandboxID
	labels[LabelImageRef] = spec.Image
	labels[LabelImageID] = repoDigest(img.Name(), img.Target().Digest.String())
	labels[LabelLogPath] = logPath
	if stdio := stdioLabel(spec.Stdio); stdio != "" {
		labels[LabelStdio] = stdio
	}
	if spec.Resources.Source != "" {
		labels[LabelResources] = spec.Resources.Source
	}
	opts := containerOpts(img, spec, sandboxLabels[LabelNetNS], sandboxTask.Pid(), r.cgroup(spec.Pod.UID, id))
	c, err := r.client.NewContainer(ctx, id, containerd.WithImage(img),
		containerd.WithNewSnapshot(id, img), containerd.WithContainerLabels(labels),
		containerd.WithNewSpec(opts...), r.runtimeOpt())
	if err != nil {
		return "", fmt.Errorf("create container %s: %w", spec.Name, err)
	}
	if err := r.newTask(ctx, c, logPath, spec.Stdio); err != nil {
		_ = r.remove(ctx, c)
		return "", fmt.Errorf("create container %s: %w", spec.Name, err)
	}
	return id, nil
}

func (r *Runtime) newTask(ctx context.Context, c containerd.Container, logPath string, stdio Stdio) error {
	streams, err := r.openStreams(c.ID(), logPath, stdio)
	if err != nil {
		return err
	}
	base := cio.NewCreator(append(streams.cioOpts(), cio.WithFIFODir(fifoDir(r.cfg)))...)
	creator := func(id string) (cio.IO, error) { return streams.capture(base(id)) }
	if _, err := c.NewTask(ctx, creator); err != nil {
		r.closeStreams(c.ID())
		return err
	}
	return nil
}

// StartContainer starts a created container.
func (r *Runtime) StartContainer(ctx context.Context, id string) error {
	ctx = r.ctx(ctx)
	c, task, err := r.loadTask(ctx, id, "start")
	if err != nil {
		return err
	}
	if err := task.Start(ctx); err != nil {
		return fmt.Errorf("start %s: %w", id, err)
	}
	return r.markStarted(ctx, c)
}

// loadTask loads a container and its task, errors naming what was being
// done (verb).
func (r *Runtime) loadTask(ctx context.Context, id, verb string) (containerd.Container, containerd.Task, error) {
	c, err := r.client.LoadContainer(ctx, id)
	if err != nil {
		return nil, nil, fmt.Errorf("%s %s: %w", verb, id, err)
	}
	task, err := c.Task(ctx, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("%s %s: %w", verb, id, err)
	}
	return c, task, nil
}

func (r *Runtime) markStarted(ctx context.Context, c containerd.Container) error {
	if _, err := c.SetLabels(ctx, map[string]string{LabelStartedAt: formatTime(time.Now())}); err != nil {
		return fmt.Errorf("record start of %s: %w", c.ID(), err)
	}
	return nil
}

// UpdateResources changes a running container's cgroup settings in place
// (runc update, through its task) and records res.Source with it.
func (r *Runtime) UpdateResources(ctx context.Context, id string, res Resources) error {
	ctx = r.ctx(ctx)
	c, task, err := r.loadTask(ctx, id, "update")
	if err != nil {
		return err
	}
	if err := task.Update(ctx, containerd.WithResources(res.linux())); err != nil {
		return fmt.Errorf("update resources of %s: %w", id, err)
	}
	if _, err := c.SetLabels(ctx, map[string]string{LabelResources: res.Source}); err != nil {
		return fmt.Errorf("record resources of %s: %w", id, err)
	}
	return nil
}

// Stop says how StopContainer ended a container.
type Stop int

const (
	// NotRunning: the container had exited (or was gone).
	NotRunning Stop = iota
	// Terminated: it exited on SIGTERM within its grace.
	Terminated
	// Killed: it outlived its grace and was sent SIGKILL.
	Killed
)

func (s Stop) String() string {
	switch s {
	case Terminated:
		return "terminated"
	case Killed:
		return "killed"
	}
	return "not running"
}

// StopContainer sends SIGTERM, waits up to grace, then SIGKILL, and records
// how the container ended. Stopping a stopped or missing container is done.
func (r *Runtime) StopContainer(ctx context.Context, id string, grace time.Duration) (Stop, error) {
	ctx = r.ctx(ctx)
	c, err := r.client.LoadContainer(ctx, id)
	if errdefs.IsNotFound(err) {
		return NotRunning, nil
	}
	if err != nil {
		return NotRunning, fmt.Errorf("stop %s: %w", id, err)
	}
	task, err := c.Task(ctx, nil)
	if errdefs.IsNotFound(err) {
		return NotRunning, nil
	}
	if err != nil {
		return NotRunning, fmt.Errorf("stop %s: %w", id, err)
	}
	how, err := signalAndWait(ctx, task, grace)
	if err != nil {
		return how, fmt.Errorf("stop %s: %w", id, err)
	}
	return how, r.reap(ctx, c, task)
}

// signalAndWait sends SIGTERM and, if the task outlives grace, SIGKILL.
func signalAndWait(ctx context.Context, task containerd.Task, grace time.Duration) (Stop, error) {
	exited, err := task.Wait(ctx)
	if err != nil {
		return NotRunning, err
	}
	if st, err := task.Status(ctx); err == nil && st.Status == containerd.Stopped {
		return NotRunning, nil
	}
	if err := task.Kill(ctx, syscall.SIGTERM); err != nil && !errdefs.IsNotFound(err) {
		return Terminated, err
	}
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-exited:
		return Terminated, nil
	case <-timer.C:
	case <-ctx.Done():
		return Terminated, ctx.Err()
	}
	if err := task.Kill(ctx, syscall.SIGKILL); err != nil && !errdefs.IsNotFound(err) {
		return Killed, err
	}
	select {
	case <-exited:
		return Killed, nil
	case <-ctx.Done():
		return Killed, ctx.Err()
	}
}

// RemoveContainer deletes a container (or sandbox), its snapshot and its log
// file, killing it first if it still runs. Removing a missing container is done.
func (r *Runtime) RemoveContainer(ctx context.Context, id string) error {
	ctx = r.ctx(ctx)
	c, err := r.client.LoadContainer(ctx, id)
	if errdefs.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("remove %s: %w", id, err)
	}
	return r.remove(ctx, c)
}

func (r *Runtime) remove(ctx context.Context, c containerd.Container) error {
	labels, err := c.Labels(ctx)
	if err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("remove %s: %w", c.ID(), err)
	}
	if task, err := c.Task(ctx, nil); err == nil {
		if _, err := task.Delete(ctx, containerd.WithProcessKill); err != nil && !errdefs.IsNotFound(err) {
			return fmt.Errorf("remove %s: delete task: %w", c.ID(), err)
		}
	}
	r.closeStreams(c.ID())
	r.execTargets.Delete(c.ID())
	err = c.Delete(ctx, containerd.WithSnapshotCleanup)
	if err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("remove %s: %w", c.ID(), err)
	}
	if path := labels[LabelLogPath]; path != "" {
		if err := removeLog(path); err != nil {
			return fmt.Errorf("remove log of %s: %w", c.ID(), err)
		}
	}
	return nil
}

// reap records a stopped task's exit in the container's labels and deletes
// the task, which ends its shim. Reaping twice is harmless.
func (r *Runtime) reap(ctx context.Context, c containerd.Container, task containerd.Task) error {
	status, err := task.Status(ctx)
	if err != nil {
		return fmt.Errorf("status of %s: %w", c.ID(), err)
	}
	if status.Status != containerd.Stopped {
		return errors.New("task still running")
	}
	code := int(status.ExitStatus)
	reason := "Completed"
	if code != 0 {
		reason = r.failureReason(ctx, c)
	}
	finished := status.ExitTime
	if finished.IsZero() {
		finished = time.Now()
	}
	labels := map[string]string{LabelExitCode: strconv.Itoa(code), LabelFinishedAt: formatTime(finished), LabelReason: reason}
	if _, err := c.SetLabels(ctx, labels); err != nil {
		return fmt.Errorf("record exit of %s: %w", c.ID(), err)
	}
	if _, err := task.Delete(ctx); err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("delete task %s: %w", c.ID(), err)
	}
	r.closeStreams(c.ID())
	r.execTargets.Delete(c.ID())
	return nil
}

// failureReason is why a container ended with a non-zero exit code:
// OOMKilled if the OOM killer struck in its cgroup (read before the task is
// deleted, which removes the cgroup), else Error.
func (r *Runtime) failureReason(ctx context.Context, c containerd.Container) string {
	labels, err := c.Labels(ctx)
	if err == nil && labels[LabelKind] == KindContainer && oomKilled(r.cgroup(labels[LabelPodUID], c.ID())) {
		return "OOMKilled"
	}
	return "Error"
}
