// Package criserver serves the CRI API (k8s.io/cri-api's runtime and image
// services) on a node's unix socket, so that crictl and other CRI clients
// can look at the pods the agent runs, as on any Kubernetes node.
//
// It is a window on the agent's runtime, not a second way to run pods: what
// the agent decides (sandboxes and containers created, started, stopped,
// removed, resized) is refused with FailedPrecondition, because the agent
// would undo it at its next sync. Reading, exec, attach, port-forward, logs
// (crictl reads the log file itself) and images are served.
package criserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/cri-streaming/pkg/streaming"
	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/skiff-lab/skiff/cri"
)

// Runtime is what the server reads and drives: the agent's *cri.Runtime.
type Runtime interface {
	Version(ctx context.Context) (string, error)
	List(ctx context.Context, podUID string) ([]cri.Container, error)
	Images(ctx context.Context) ([]cri.Image, error)
	Image(ctx context.Context, ref string) (cri.Image, error)
	Pull(ctx context.Context, ref string, creds cri.Credentials) (cri.Image, error)
	RemoveImage(ctx context.Context, ref string) error
	ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) (stdout, stderr []byte, exitCode int, err error)
	StreamExec(ctx context.Context, id string, cmd []string, in io.Reader, out, errOut io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize) error
	StreamAttach(ctx context.Context, id string, in io.Reader, out, errOut io.WriteCloser, resize <-chan remotecommand.TerminalSize) error
}

// Config is what a Server serves.
type Config struct {
	Runtime Runtime
	// PortForward connects stream to port of the pod whose sandbox is
	// sandboxID, inside its network namespace.
	PortForward func(ctx context.Context, sandboxID string, port int32, stream io.ReadWriteCloser) error
	// Stats reads the node's stats summary now (crictl's CPU rates come
	// from two calls a second apart).
	Stats func(ctx context.Context) (*statsapi.Summary, error)
	// NetworkReady says why pods cannot get an address yet (nil when they can).
	NetworkReady func() error
	// ImageFS is a directory on the file system that holds the images.
	ImageFS string
}

// errAgentOwned answers the calls that would change what the agent runs.
var errAgentOwned = status.Error(codes.FailedPrecondition,
	"pods on a skiff node are run by its agent from the API server; change them with kubectl")

// Server implements the CRI runtime and image services over Config.
type Server struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	runtimeapi.UnimplementedImageServiceServer
	cfg       Config
	stream    streaming.Server
	streamLis net.Listener
}

// New returns a Server for cfg, with its streaming server (exec, attach,
// port-forward URLs) listening on 127.0.0.1 at a port of the kernel's
// choosing, as containerd's CRI plugin has it. The URLs carry one-use
// tokens.
func New(cfg Config) (*Server, error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("cri streaming server: %w", err)
	}
	s := &Server{cfg: cfg, streamLis: lis}
	s.stream, err = streaming.NewServer(streaming.Config{
		Addr:                            lis.Addr().String(),
		BaseURL:                         &url.URL{Scheme: "http", Host: lis.Addr().String()},
		StreamIdleTimeout:               4 * time.Hour,
		StreamCreationTimeout:           streaming.DefaultConfig.StreamCreationTimeout,
		SupportedRemoteCommandProtocols: streaming.DefaultConfig.SupportedRemoteCommandProtocols,
		SupportedPortForwardProtocols:   streaming.DefaultConfig.SupportedPortForwardProtocols,
	}, streamRuntime{s})
	if err != nil {
		lis.Close()
		return nil, fmt.Errorf("cri streaming server: %w", err)
	}
	return s, nil
}

// Start listens on the unix socket path (mode 0600, replacing a stale one)
// and answers CRI calls in the background until ctx ends.
func (s *Server) Start(ctx context.Context, path string) error {
	lis, err := listenUnix(path)
	if err != nil {
		s.streamLis.Close()
		return err
	}
	g := grpc.NewServer()
	runtimeapi.RegisterRuntimeServiceServer(g, s)
	runtimeapi.RegisterImageServiceServer(g, s)
	web := &http.Server{Handler: s.stream, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := web.Serve(s.streamLis); !errors.Is(err, http.ErrServerClosed) {
			slog.Error("CRI streaming server stopped", "err", err)
		}
	}()
	go func() {
		if err := g.Serve(lis); err != nil {
			slog.Error("CRI socket stopped", "err", err)
		}
	}()
	go func() {
		<-ctx.Done()
		g.Stop()
		web.Close()
	}()
	slog.Info("CRI socket serving", "path", path)
	return nil
}

func listenUnix(path string) (net.Listener, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	lis, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("cri socket: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		lis.Close()
		return nil, err
	}
	return lis, nil
}

// Version names skiff as the runtime.
func (s *Server) Version(ctx context.Context, _ *runtimeapi.VersionRequest) (*runtimeapi.VersionResponse, error) {
	v, err := s.cfg.Runtime.Version(ctx)
	if err != nil {
		return nil, unavailable(err)
	}
	return &runtimeapi.VersionResponse{Version: "0.1.0", RuntimeName: "skiff (containerd)",
		RuntimeVersion: v, RuntimeApiVersion: "v1"}, nil
}

// Status reports the runtime and the pod network's readiness.
func (s *Server) Status(ctx context.Context, _ *runtimeapi.StatusRequest) (*runtimeapi.StatusResponse, error) {
	rt := &runtimeapi.RuntimeCondition{Type: runtimeapi.RuntimeReady, Status: true}
	if _, err := s.cfg.Runtime.Version(ctx); err != nil {
		rt = &runtimeapi.RuntimeCondition{Type: runtimeapi.RuntimeReady, Reason: "ContainerdUnreachable", Message: err.Error()}
	}
	netCond := &runtimeapi.RuntimeCondition{Type: runtimeapi.NetworkReady, Status: true}
	if s.cfg.NetworkReady != nil {
		if err := s.cfg.NetworkReady(); err != nil {
			netCond = &runtimeapi.RuntimeCondition{Type: runtimeapi.NetworkReady, Reason: "NetworkPluginNotReady", Message: err.Error()}
		}
	}
	return &runtimeapi.StatusResponse{Status: &runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{rt, netCond}}}, nil
}

// The calls that change what runs belong to the agent.

func (s *Server) RunPodSandbox(context.Context, *runtimeapi.RunPodSandboxRequest) (*runtimeapi.RunPodSandboxResponse, error) {
	return nil, errAgentOwned
}

func (s *Server) StopPodSandbox(context.Context, *runtimeapi.StopPodSandboxRequest) (*runtimeapi.StopPodSandboxResponse, error) {
	return nil, errAgentOwned
}

func (s *Server) RemovePodSandbox(context.Context, *runtimeapi.RemovePodSandboxRequest) (*runtimeapi.RemovePodSandboxResponse, error) {
	return nil, errAgentOwned
}

func (s *Server) CreateContainer(context.Context, *runtimeapi.CreateContainerRequest) (*runtimeapi.CreateContainerResponse, error) {
	return nil, errAgentOwned
}

func (s *Server) StartContainer(context.Context, *runtimeapi.StartContainerRequest) (*runtimeapi.StartContainerResponse, error) {
	return nil, errAgentOwned
}

func (s *Server) StopContainer(context.Context, *runtimeapi.StopContainerRequest) (*runtimeapi.StopContainerResponse, error) {
	return nil, errAgentOwned
}

func (s *Server) RemoveContainer(context.Context, *runtimeapi.RemoveContainerRequest) (*runtimeapi.RemoveContainerResponse, error) {
	return nil, errAgentOwned
}

func (s *Server) UpdateContainerResources(context.Context, *runtimeapi.UpdateContainerResourcesRequest) (*runtimeapi.UpdateContainerResourcesResponse, error) {
	return nil, errAgentOwned
}

func (s *Server) UpdatePodSandboxResources(context.Context, *runtimeapi.UpdatePodSandboxResourcesRequest) (*runtimeapi.UpdatePodSandboxResourcesResponse, error) {
	return nil, errAgentOwned
}

func (s *Server) ReopenContainerLog(context.Context, *runtimeapi.ReopenContainerLogRequest) (*runtimeapi.ReopenContainerLogResponse, error) {
	return nil, errAgentOwned
}

func (s *Server) UpdateRuntimeConfig(context.Context, *runtimeapi.UpdateRuntimeConfigRequest) (*runtimeapi.UpdateRuntimeConfigResponse, error) {
	return nil, errAgentOwned
}

// sendAll answers a Stream call with its List call's answer, msg, as one
// message (or with List's error).
func sendAll[R any](out grpc.ServerStreamingServer[R], err error, msg *R) error {
	if err != nil {
		return err
	}
	return out.Send(msg)
}

// unavailable is the answer when containerd could not be asked.
func unavailable(err error) error {
	return status.Error(codes.Unavailable, err.Error())
}
