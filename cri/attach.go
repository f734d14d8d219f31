package cri

import (
	"context"
	"fmt"
	"io"

	"github.com/containerd/errdefs"
)

// AttachOptions connect a caller to a running container's own process.
type AttachOptions struct {
	// Stdin is copied to the process's stdin if the container has one
	// (Stdio.Stdin); with Stdio.StdinOnce the stdin closes when Stdin ends.
	Stdin io.Reader
	// Stdout and Stderr receive the process's output from now on; nil
	// leaves it out. With a terminal everything is on Stdout.
	Stdout, Stderr io.Writer
	// Resize sets the terminal's size, once per value received (ignored
	// without a terminal).
	Resize <-chan TermSize
}

// Attach connects opts to the running container id until the container
// exits or ctx ends, as `kubectl attach` does. Output already written is
// not replayed (it is in the log). Like Exec, Attach does not wait for
// Stdin to end: the copy stops at the first Read after Attach returns.
// Errors wrap errdefs.ErrFailedPrecondition when the container is not
// running.
func (r *Runtime) Attach(ctx context.Context, id string, opts AttachOptions) error {
	s, ok := r.lookupStreams(id)
	if !ok {
		return fmt.Errorf("attach to %s: container is not running: %w", id, errdefs.ErrFailedPrecondition)
	}
	defer s.stdout.attach(opts.Stdout)()
	if !s.stdio.TTY {
		defer s.stderr.attach(opts.Stderr)()
	}
	if opts.Stdin != nil && s.stdin != nil {
		go func() {
			_, _ = io.Copy(s.stdin, opts.Stdin)
			if s.stdio.StdinOnce {
				s.stdin.Close()
			}
		}()
	}
	resize := opts.Resize
	for {
		select {
		case <-s.done:
			return nil
		case <-ctx.Done():
			return nil
		case size, ok := <-resize:
			if !ok {
				resize = nil
			} else if s.stdio.TTY {
				// Best effort, as for any terminal: the process may have just exited.
				_ = r.resizeTerminal(ctx, id, size)
			}
		}
	}
}

// resizeTerminal sets the size of the terminal of container id's process.
func (r *Runtime) resizeTerminal(ctx context.Context, id string, size TermSize) error {
	ctx = r.ctx(ctx)
	c, err := r.client.LoadContainer(ctx, id)
	if err != nil {
		return err
	}
	task, err := c.Task(ctx, nil)
	if err != nil {
		return err
	}
	return task.Resize(ctx, uint32(size.Width), uint32(size.Height))
}
