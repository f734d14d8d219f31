package criserver

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/containerd/errdefs"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/cri-streaming/pkg/streaming/remotecommand"

	"github.com/skiff-lab/skiff/cri"
)

// running resolves id (or its prefix) to a running container.
func (s *Server) running(ctx context.Context, id string) (cri.Container, error) {
	n, err := s.read(ctx)
	if err != nil {
		return cri.Container{}, err
	}
	c, err := find(n.containers, id)
	if err == nil && c.State != cri.StateRunning {
		err = status.Errorf(codes.FailedPrecondition, "container %s is not running (%s)", c.ID, c.State)
	}
	return c, err
}

// ExecSync runs a command in a running container and returns its output.
func (s *Server) ExecSync(ctx context.Context, r *runtimeapi.ExecSyncRequest) (*runtimeapi.ExecSyncResponse, error) {
	c, err := s.running(ctx, r.ContainerId)
	if err != nil {
		return nil, err
	}
	stdout, stderr, code, err := s.cfg.Runtime.ExecSync(ctx, c.ID, r.Cmd, time.Duration(r.Timeout)*time.Second)
	if errors.Is(err, context.DeadlineExceeded) {
		return nil, status.Error(codes.DeadlineExceeded, err.Error())
	}
	if err != nil {
		return nil, runtimeError(err)
	}
	return &runtimeapi.ExecSyncResponse{Stdout: stdout, Stderr: stderr, ExitCode: int32(code)}, nil
}

// Exec returns the URL where the streaming server runs the command.
func (s *Server) Exec(ctx context.Context, r *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error) {
	c, err := s.running(ctx, r.ContainerId)
	if err != nil {
		return nil, err
	}
	r.ContainerId = c.ID
	return s.stream.GetExec(r)
}

// Attach returns the URL where the streaming server attaches to the
// container's process.
func (s *Server) Attach(ctx context.Context, r *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error) {
	c, err := s.running(ctx, r.ContainerId)
	if err != nil {
		return nil, err
	}
	r.ContainerId = c.ID
	return s.stream.GetAttach(r)
}

// PortForward returns the URL where the streaming server forwards to the
// sandbox's pod.
func (s *Server) PortForward(ctx context.Context, r *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error) {
	if s.cfg.PortForward == nil {
		return nil, status.Error(codes.Unimplemented, "port forwarding is not served on this node")
	}
	_, c, err := s.sandbox(ctx, r.PodSandboxId)
	if err != nil {
		return nil, err
	}
	r.PodSandboxId = c.ID
	return s.stream.GetPortForward(r)
}

// runtimeError maps the runtime's error kinds to gRPC codes.
func runtimeError(err error) error {
	switch {
	case errdefs.IsNotFound(err):
		return status.Error(codes.NotFound, err.Error())
	case errdefs.IsFailedPrecondition(err):
		return status.Error(codes.FailedPrecondition, err.Error())
	}
	return status.Error(codes.Unknown, err.Error())
}

// streamRuntime is the streaming server's view of the runtime.
type streamRuntime struct{ s *Server }

func (r streamRuntime) Exec(ctx context.Context, id string, cmd []string, in io.Reader, out, errOut io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize) error {
	return r.s.cfg.Runtime.StreamExec(ctx, id, cmd, in, out, errOut, tty, resize)
}

func (r streamRuntime) Attach(ctx context.Context, id string, in io.Reader, out, errOut io.WriteCloser, _ bool, resize <-chan remotecommand.TerminalSize) error {
	return r.s.cfg.Runtime.StreamAttach(ctx, id, in, out, errOut, resize)
}

func (r streamRuntime) PortForward(ctx context.Context, sandboxID string, port int32, stream io.ReadWriteCloser) error {
	return r.s.cfg.PortForward(ctx, sandboxID, port, stream)
}
