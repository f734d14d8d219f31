package cri

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	tasks "github.com/containerd/containerd/api/services/tasks/v1"
	"github.com/containerd/containerd/api/types/task"
	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/errdefs"
	"github.com/containerd/errdefs/pkg/errgrpc"
)

// State is where a container is in its life.
type State string

// The states List reports.
const (
	StateCreated State = "created" // task exists, not started
	StateRunning State = "running"
	StateExited  State = "exited"  // ended; ExitCode, Reason and FinishedAt are set
	StateUnknown State = "unknown" // no task and no recorded exit (a create that died half-way)
)

// Container is what List reports of one sandbox or container.
type Container struct {
	ID         string
	Kind       string // KindSandbox or KindContainer
	Pod        PodRef
	Name       string // container name; empty for sandboxes
	Attempt    int
	SandboxID  string
	Image      string
	ImageID    string
	NetNS      string
	PodIPs     []string // sandboxes only
	LogPath    string
	State      State
	CreatedAt  time.Time
	StartedAt  time.Time
	FinishedAt time.Time
	ExitCode   int
	Reason     string
	// Resources is the Source of the Resources the container runs with:
	// as created, or as last updated by UpdateResources.
	Resources string
}

// List reports the sandboxes and containers skiff made, of one pod (podUID)
// or of all pods (""). Containers whose task has exited are finalized on the
// way (exit recorded in labels, task deleted) and running containers whose
// output nobody reads are re-attached to their logs, so exits and output
// during an agent restart are not lost.
func (r *Runtime) List(ctx context.Context, podUID string) ([]Container, error) {
	ctx = r.ctx(ctx)
	filter := "labels." + strconv.Quote(LabelKind)
	if podUID != "" {
		filter = "labels." + strconv.Quote(LabelPodUID) + "==" + strconv.Quote(podUID)
	}
	infos, err := r.client.ContainerService().List(ctx, filter)
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	procs, err := r.tasks(ctx, infos, podUID == "")
	if err != nil {
		return nil, err
	}
	out := make([]Container, 0, len(infos))
	for _, info := range infos {
		c, err := r.observe(ctx, info, procs[info.ID])
		if errdefs.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// tasks reads the tasks of the given containers: all tasks in one call when
// listing the whole node, one call per container for a single pod.
func (r *Runtime) tasks(ctx context.Context, infos []containers.Container, all bool) (map[string]*task.Process, error) {
	procs := map[string]*task.Process{}
	if all {
		resp, err := r.client.TaskService().List(ctx, &tasks.ListTasksRequest{})
		if err != nil {
			return nil, fmt.Errorf("list tasks: %w", err)
		}
		for _, p := range resp.Tasks {
			procs[p.ID] = p
		}
		return procs, nil
	}
	for _, info := range infos {
		resp, err := r.client.TaskService().Get(ctx, &tasks.GetRequest{ContainerID: info.ID})
		if errdefs.IsNotFound(errgrpc.ToNative(err)) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("task of %s: %w", info.ID, err)
		}
		procs[info.ID] = resp.Process
	}
	return procs, nil
}

// observe describes one container, reaping an exited task and re-attaching
// the logs of a live one.
func (r *Runtime) observe(ctx context.Context, info containers.Container, proc *task.Process) (Container, error) {
	state := StateUnknown
	switch {
	case proc == nil && info.Labels[LabelExitCode] != "":
		state = StateExited
	case proc == nil:
	case proc.Status == task.Status_STOPPED:
		labels, err := r.reapID(ctx, info.ID)
		if err != nil {
			return Container{}, err
		}
		info.Labels, state = labels, StateExited
	case proc.Status == task.Status_CREATED:
		state = StateCreated
	default:
		state = StateRunning
	}
	if state == StateRunning || state == StateCreated {
		if err := r.attach(ctx, info.ID, info.Labels); err != nil {
			return Container{}, err
		}
	}
	return describeContainer(info.ID, info.CreatedAt, info.Labels, state), nil
}

func (r *Runtime) reapID(ctx context.Context, id string) (map[string]string, error) {
	c, err := r.client.LoadContainer(ctx, id)
	if err != nil {
		return nil, err
	}
	t, err := c.Task(ctx, nil)
	if err != nil && !errdefs.IsNotFound(err) {
		return nil, fmt.Errorf("task of %s: %w", id, err)
	}
	if err == nil {
		if err := r.reap(ctx, c, t); err != nil {
			return nil, err
		}
	}
	return c.Labels(ctx)
}

func describeContainer(id string, created time.Time, labels map[string]string, state State) Container {
	return Container{
		ID: id, Kind: labels[LabelKind], Pod: podRefFrom(labels),
		Name: labels[LabelContainerName], Attempt: parseInt(labels[LabelAttempt]),
		SandboxID: labels[LabelSandbox], Image: labels[LabelImageRef], ImageID: labels[LabelImageID], NetNS: labels[LabelNetNS], PodIPs: splitList(labels[LabelPodIPs]),
		LogPath: labels[LabelLogPath], State: state, CreatedAt: created,
		StartedAt: parseTime(labels[LabelStartedAt]), FinishedAt: parseTime(labels[LabelFinishedAt]),
		ExitCode: parseInt(labels[LabelExitCode]), Reason: labels[LabelReason], Resources: labels[LabelResources],
	}
}

// attach reconnects a container's output to its log after an agent restart.
func (r *Runtime) attach(ctx context.Context, id string, labels map[string]string) error {
	path := labels[LabelLogPath]
	if path == "" || r.hasStreams(id) {
		return nil
	}
	c, err := r.client.LoadContainer(ctx, id)
	if err != nil {
		return err
	}
	s, err := r.openStreams(id, path, parseStdio(labels[LabelStdio]))
	if err != nil {
		return err
	}
	base := cio.NewAttach(s.cioOpts()...)
	if _, err := c.Task(ctx, func(f *cio.FIFOSet) (cio.IO, error) { return s.capture(base(f)) }); err != nil {
		r.closeStreams(c.ID())
		return fmt.Errorf("attach to %s: %w", c.ID(), err)
	}
	return nil
}

func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}
