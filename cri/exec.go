package cri

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/containerd/containerd/api/services/tasks/v1"
	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/errdefs"
	"github.com/containerd/errdefs/pkg/errgrpc"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// Bounds on running a command in a container.
const (
	// maxExecOutput caps each of ExecSync's output streams, as containerd's
	// CRI plugin does. Output beyond it is read and dropped, so a chatty
	// command is neither blocked nor broken.
	maxExecOutput = 16 << 20
	// execDrainTimeout bounds the wait for an exited command's output to be
	// copied out: a process it left in the background can hold it open.
	execDrainTimeout = 2 * time.Second
	// execCleanupTimeout bounds killing and deleting an exec process, which
	// is done even when the caller's ctx has ended.
	execCleanupTimeout = 10 * time.Second
)

// TermSize is a terminal's size in character cells.
type TermSize struct{ Width, Height uint16 }

// ExecOptions describe one command for Exec.
type ExecOptions struct {
	Cmd []string // required; run as is, without a shell
	// Stdin feeds the command's stdin; nil gives it none. When a Read of it
	// fails (io.EOF included) the command's stdin is closed.
	Stdin io.Reader
	// Stdout and Stderr receive the command's output; nil discards it. With
	// TTY the terminal merges stderr into stdout and Stderr is not used.
	Stdout, Stderr io.Writer
	TTY            bool
	// Resize sets the terminal's size, once per value received. Exec reads
	// it while the command runs (dropping the sizes without TTY), and not
	// after it returns.
	Resize <-chan TermSize
}

// errExecTimeout is the cause of ExecSync's own deadline.
var errExecTimeout = errors.New("exec timed out")

// ExecSync runs cmd in the running container containerID (as Exec does,
// without stdin or terminal) and returns its output, each stream capped at
// 16 MiB, and its exit code. A command that exits non-zero is not an error;
// the output read so far is returned with errors too.
// timeout 0 means none; when it passes, the command is killed and removed
// and the error wraps context.DeadlineExceeded. The error kinds and cleanup
// are Exec's. Safe for concurrent use.
func (r *Runtime) ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (stdout, stderr []byte, exitCode int, err error) {
	runCtx, cancel := ctx, context.CancelFunc(func() {})
	if timeout > 0 {
		runCtx, cancel = context.WithTimeoutCause(ctx, timeout, errExecTimeout)
	}
	defer cancel()
	out, errOut := &cappedBuffer{max: maxExecOutput}, &cappedBuffer{max: maxExecOutput}
	exitCode, err = r.Exec(runCtx, containerID, ExecOptions{Cmd: cmd, Stdout: out, Stderr: errOut})
	if errors.Is(err, context.DeadlineExceeded) && errors.Is(context.Cause(runCtx), errExecTimeout) {
		err = fmt.Errorf("exec in %s: command %q timed out after %s: %w",
			containerID, strings.Join(cmd, " "), timeout, context.DeadlineExceeded)
	}
	return out.Bytes(), errOut.Bytes(), exitCode, err
}

// Exec runs opts.Cmd in the running container containerID as the container's
// own process runs (user, groups, environment, working directory,
// capabilities, rlimits, AppArmor profile, SELinux label), connected to opts'
// streams, and returns its exit code once it has exited and its output has
// been written out.
//
// The exec process and its FIFOs (under the runtime's state dir) are removed
// on every path; when ctx ends first, the process is killed (SIGKILL) and the
// error wraps ctx.Err(). On return no goroutine writes to Stdout or Stderr
// any more. Exec does not wait for Stdin to end: the goroutine copying it
// stops at the first Read that returns after the command has gone, so a
// caller whose Stdin can block forever should close it after Exec returns.
//
// exitCode is -1 unless the command's exit was seen; err can be set with a
// valid exitCode when the output could not be drained or the exec process
// not removed. Errors wrap errdefs.ErrInvalidArgument (no command),
// ErrNotFound (no such container) or ErrFailedPrecondition (the container is
// not running). Safe for concurrent use, also for one container.
func (r *Runtime) Exec(ctx context.Context, containerID string, opts ExecOptions) (exitCode int, err error) {
	if len(opts.Cmd) == 0 {
		return -1, fmt.Errorf("exec in %s: no command: %w", containerID, errdefs.ErrInvalidArgument)
	}
	ctx = r.ctx(ctx)
	task, spec, err := r.execTarget(ctx, containerID, opts.Cmd, opts.TTY)
	if err != nil {
		return -1, fmt.Errorf("exec in %s: %w", containerID, err)
	}
	stdin, stdinClosed := watchEOF(opts.Stdin)
	proc, err := task.Exec(ctx, newExecID(), spec, r.execIO(opts, stdin))
	if err != nil {
		// The remembered task may have ended: looking again says why.
		r.execTargets.Delete(containerID)
		if _, lerr := r.loadExecTarget(ctx, containerID); lerr != nil {
			err = lerr
		}
		return -1, fmt.Errorf("exec in %s: %w", containerID, err)
	}
	x := execution{proc: proc, tty: opts.TTY, stdinClosed: stdinClosed, resize: opts.Resize}
	exitCode, err = x.follow(ctx)
	if rerr := r.removeExec(ctx, containerID, proc, exitCode < 0); rerr != nil {
		err = errors.Join(err, fmt.Errorf("remove exec process: %w", rerr))
	}
	if err != nil {
		return exitCode, fmt.Errorf("exec in %s: %w", containerID, err)
	}
	return exitCode, nil
}

// execTarget finds the running task of container id and the process spec
// for cmd in it. The task and the container's process spec are remembered
// (a container's spec never changes), so a probe that execs every second
// costs one round trip to containerd less than four; a task that has ended
// fails the Exec call itself, and is forgotten when reaped or removed.
func (r *Runtime) execTarget(ctx context.Context, id string, cmd []string, tty bool) (containerd.Task, *specs.Process, error) {
	t, ok := r.execTargets.Load(id)
	if !ok {
		var err error
		if t, err = r.loadExecTarget(ctx, id); err != nil {
			return nil, nil, err
		}
		r.execTargets.Store(id, t)
	}
	target := t.(execTarget)
	proc, err := execProcessSpec(target.spec, cmd, tty)
	return target.task, proc, err
}

type execTarget struct {
	task containerd.Task
	spec *specs.Spec
}

func (r *Runtime) loadExecTarget(ctx context.Context, id string) (execTarget, error) {
	c, err := r.client.LoadContainer(ctx, id)
	if err != nil {
		return execTarget{}, err
	}
	task, err := c.Task(ctx, nil)
	if errdefs.IsNotFound(err) {
		return execTarget{}, fmt.Errorf("container is not running: %w", errdefs.ErrFailedPrecondition)
	}
	if err != nil {
		return execTarget{}, err
	}
	status, err := task.Status(ctx)
	if err != nil {
		return execTarget{}, err
	}
	if status.Status != containerd.Running {
		return execTarget{}, fmt.Errorf("container is %s, not running: %w", status.Status, errdefs.ErrFailedPrecondition)
	}
	spec, err := c.Spec(ctx)
	if err != nil {
		return execTarget{}, err
	}
	return execTarget{task: task, spec: spec}, nil
}

// execProcessSpec is the container's own process with cmd as its args, and a
// terminal if tty (with TERM=xterm unless the container sets TERM). spec is
// not modified.
func execProcessSpec(spec *specs.Spec, cmd []string, tty bool) (*specs.Process, error) {
	if spec.Process == nil {
		return nil, fmt.Errorf("container spec has no process: %w", errdefs.ErrFailedPrecondition)
	}
	p := *spec.Process
	p.Args = slices.Clone(cmd)
	p.Terminal = tty
	p.ConsoleSize = nil
	p.Env = slices.Clone(p.Env)
	setsTerm := slices.ContainsFunc(p.Env, func(e string) bool { return strings.HasPrefix(e, "TERM=") })
	if tty && !setsTerm {
		p.Env = append(p.Env, "TERM=xterm")
	}
	return &p, nil
}

// newExecID is unique among a task's exec processes and short, as containerd
// limits IDs (76 characters) and puts them in FIFO paths.
func newExecID() string { return "exec-" + NewID()[:16] }

// execIO copies between opts' streams and FIFOs in the runtime's FIFO
// directory; closing the IO removes them.
func (r *Runtime) execIO(opts ExecOptions, stdin io.Reader) cio.Creator {
	stdout, stderr := opts.Stdout, opts.Stderr
	if stdout == nil {
		stdout = io.Discard
	}
	if stderr == nil {
		stderr = io.Discard
	}
	streams := []cio.Opt{cio.WithFIFODir(fifoDir(r.cfg))}
	if opts.TTY {
		streams = append(streams, cio.WithTerminal, cio.WithStreams(stdin, stdout, nil))
	} else {
		streams = append(streams, cio.WithStreams(stdin, stdout, stderr))
	}
	return cio.NewCreator(streams...)
}

// execution is one exec process that Exec follows.
type execution struct {
	proc        containerd.Process
	tty         bool
	stdinClosed <-chan struct{} // closed when the caller's stdin ends; nil without stdin
	resize      <-chan TermSize
}

// follow starts the process and waits for it to exit, meanwhile closing its
// stdin when the caller's ends and passing on terminal sizes, then waits
// for its output to drain. It returns the exit code, or -1 and an error
// wrapping ctx.Err() when ctx ends first. It does not remove the process.
func (x execution) follow(ctx context.Context) (int, error) {
	waitCtx, stopWait := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWait()
	exited, err := x.proc.Wait(waitCtx)
	if err != nil {
		return -1, fmt.Errorf("wait: %w", err)
	}
	if err := x.proc.Start(ctx); err != nil {
		return -1, fmt.Errorf("start: %w", err)
	}
	stdinClosed, resize := x.stdinClosed, x.resize
	for {
		select {
		case status := <-exited:
			code, _, err := status.Result()
			if err != nil {
				return -1, fmt.Errorf("wait: %w", err)
			}
			return int(code), drain(ctx, x.proc.IO())
		case <-ctx.Done():
			return -1, ctx.Err()
		case <-stdinClosed:
			stdinClosed = nil
			if err := x.proc.CloseIO(ctx, containerd.WithStdinCloser); err != nil {
				return -1, fmt.Errorf("close stdin: %w", err)
			}
		case size, ok := <-resize:
			if !ok {
				resize = nil
			} else if x.tty {
				// Best effort, as for any terminal: the command may have just exited.
				_ = x.proc.Resize(ctx, uint32(size.Width), uint32(size.Height))
			}
		}
	}
}

// drain waits for an exited process's output to be copied out, for at most
// execDrainTimeout or until ctx ends; removing the process then cuts it off.
func drain(ctx context.Context, streams cio.IO) error {
	drained := make(chan struct{})
	go func() { streams.Wait(); close(drained) }() // ends at the latest when the IO is cancelled
	timer := time.NewTimer(execDrainTimeout)
	defer timer.Stop()
	select {
	case <-drained:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("drain output: %w", ctx.Err())
	case <-timer.C:
		return fmt.Errorf("output still open %s after the command exited (held by a process it started?)", execDrainTimeout)
	}
}

// removeExec deletes proc from the task of container id, killing it first
// if kill is set and it still runs, and closes its IO, which stops the
// copying and removes its FIFOs. It has its own deadline, so it also cleans
// up after ctx has ended. A process already gone is done.
//
// An exited process is deleted with one call to the task service, not
// through Process.Delete, which asks for its status first: an exec probe
// runs every period, and every round trip to containerd counts.
func (r *Runtime) removeExec(ctx context.Context, id string, proc containerd.Process, kill bool) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), execCleanupTimeout)
	defer cancel()
	var err error
	if kill {
		if _, err = proc.Delete(ctx, containerd.WithProcessKill); err == nil {
			return nil // Delete closed the IO
		}
	} else {
		_, err = r.client.TaskService().DeleteProcess(ctx, &tasks.DeleteProcessRequest{ContainerID: id, ExecID: proc.ID()})
		err = errgrpc.ToNative(err)
	}
	if streams := proc.IO(); streams != nil {
		streams.Cancel()
		streams.Wait()
		_ = streams.Close()
	}
	if errdefs.IsNotFound(err) {
		return nil
	}
	return err
}

// watchEOF wraps stdin so that the returned channel is closed once a Read of
// it fails (io.EOF included). For a nil stdin both results are nil.
func watchEOF(stdin io.Reader) (io.Reader, <-chan struct{}) {
	if stdin == nil {
		return nil, nil
	}
	r := &eofReader{r: stdin, closed: make(chan struct{})}
	return r, r.closed
}

type eofReader struct {
	r      io.Reader
	once   sync.Once
	closed chan struct{}
}

func (e *eofReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil {
		e.once.Do(func() { close(e.closed) })
	}
	return n, err
}

// cappedBuffer keeps the first max bytes written to it and drops the rest
// without failing the write. It is not safe for concurrent writes.
type cappedBuffer struct {
	buf bytes.Buffer
	max int
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (b *cappedBuffer) Bytes() []byte { return b.buf.Bytes() }
