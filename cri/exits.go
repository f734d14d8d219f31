package cri

import (
	"context"
	"fmt"
	"strconv"

	apievents "github.com/containerd/containerd/api/events"
	"github.com/containerd/typeurl/v2"
)

// WatchExits calls fn with the pod of every container or sandbox whose task
// exits, until ctx ends or the event stream breaks (then it returns the error;
// callers re-subscribe and relist, since exits may have been missed).
func (r *Runtime) WatchExits(ctx context.Context, fn func(PodRef)) error {
	ctx = r.ctx(ctx)
	filter := "namespace==" + strconv.Quote(r.cfg.Namespace) + ",topic==\"/tasks/exit\""
	events, errs := r.client.Subscribe(ctx, filter)
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-errs:
			return fmt.Errorf("containerd events: %w", err)
		case env := <-events:
			r.notifyExit(ctx, env.Event, fn)
		}
	}
}

func (r *Runtime) notifyExit(ctx context.Context, event typeurl.Any, fn func(PodRef)) {
	v, err := typeurl.UnmarshalAny(event)
	if err != nil {
		return
	}
	exit, ok := v.(*apievents.TaskExit)
	if !ok || exit.ID != exit.ContainerID {
		return // not a task: an exec'd process (probe, hook) ended
	}
	c, err := r.client.LoadContainer(ctx, exit.ContainerID)
	if err != nil {
		return
	}
	labels, err := c.Labels(ctx)
	if err != nil || labels[LabelPodUID] == "" {
		return
	}
	fn(podRefFrom(labels))
}
