package criserver

import (
	"context"
	"encoding/json"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/skiff-lab/skiff/cri"
)

// node is one reading of everything the runtime runs, split by kind.
type node struct {
	sandboxes, containers []cri.Container
}

func (s *Server) read(ctx context.Context) (node, error) {
	all, err := s.cfg.Runtime.List(ctx, "")
	if err != nil {
		return node{}, unavailable(err)
	}
	var n node
	for _, c := range all {
		if c.Kind == cri.KindSandbox {
			n.sandboxes = append(n.sandboxes, c)
		} else {
			n.containers = append(n.containers, c)
		}
	}
	return n, nil
}

// find is the one item whose ID is id or starts with it, as containerd's
// CRI plugin resolves the short IDs crictl prints.
func find(items []cri.Container, id string) (cri.Container, error) {
	var found []cri.Container
	for _, c := range items {
		if c.ID == id {
			return c, nil
		}
		if id != "" && strings.HasPrefix(c.ID, id) {
			found = append(found, c)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return cri.Container{}, status.Errorf(codes.NotFound, "%q: no such sandbox or container on this node", id)
	}
	return cri.Container{}, status.Errorf(codes.InvalidArgument, "%q names %d sandboxes or containers; give more of the ID", id, len(found))
}

// labels are the kubelet's labels of a sandbox or container: what crictl's
// listings and label filters read.
func labels(c cri.Container) map[string]string {
	l := map[string]string{
		cri.LabelPodUID: c.Pod.UID, cri.LabelPodNamespace: c.Pod.Namespace, cri.LabelPodName: c.Pod.Name,
	}
	if c.Kind == cri.KindContainer {
		l[cri.LabelContainerName] = c.Name
	}
	return l
}

func matchLabels(c cri.Container, selector map[string]string) bool {
	l := labels(c)
	for k, v := range selector {
		if l[k] != v {
			return false
		}
	}
	return true
}

func sandboxState(c cri.Container) runtimeapi.PodSandboxState {
	if c.State == cri.StateRunning {
		return runtimeapi.PodSandboxState_SANDBOX_READY
	}
	return runtimeapi.PodSandboxState_SANDBOX_NOTREADY
}

func containerState(c cri.Container) runtimeapi.ContainerState {
	switch c.State {
	case cri.StateCreated:
		return runtimeapi.ContainerState_CONTAINER_CREATED
	case cri.StateRunning:
		return runtimeapi.ContainerState_CONTAINER_RUNNING
	case cri.StateExited:
		return runtimeapi.ContainerState_CONTAINER_EXITED
	}
	return runtimeapi.ContainerState_CONTAINER_UNKNOWN
}

func sandboxMeta(c cri.Container) *runtimeapi.PodSandboxMetadata {
	return &runtimeapi.PodSandboxMetadata{Name: c.Pod.Name, Uid: c.Pod.UID, Namespace: c.Pod.Namespace, Attempt: uint32(c.Attempt)}
}

func containerMeta(c cri.Container) *runtimeapi.ContainerMetadata {
	return &runtimeapi.ContainerMetadata{Name: c.Name, Attempt: uint32(c.Attempt)}
}

func unixNano(c cri.Container) int64 { return c.CreatedAt.UnixNano() }

func (s *Server) sandboxes(ctx context.Context, f *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	n, err := s.read(ctx)
	if err != nil {
		return nil, err
	}
	out := []*runtimeapi.PodSandbox{}
	for _, c := range n.sandboxes {
		if f != nil && (!strings.HasPrefix(c.ID, f.Id) || !matchLabels(c, f.LabelSelector) ||
			f.State != nil && f.State.State != sandboxState(c)) {
			continue
		}
		out = append(out, &runtimeapi.PodSandbox{Id: c.ID, Metadata: sandboxMeta(c), State: sandboxState(c),
			CreatedAt: unixNano(c), Labels: labels(c), Annotations: map[string]string{}})
	}
	return out, nil
}

// ListPodSandbox lists the node's pod sandboxes.
func (s *Server) ListPodSandbox(ctx context.Context, r *runtimeapi.ListPodSandboxRequest) (*runtimeapi.ListPodSandboxResponse, error) {
	items, err := s.sandboxes(ctx, r.Filter)
	return &runtimeapi.ListPodSandboxResponse{Items: items}, err
}

// StreamPodSandboxes sends ListPodSandbox's answer as one message.
func (s *Server) StreamPodSandboxes(r *runtimeapi.StreamPodSandboxesRequest, out grpc.ServerStreamingServer[runtimeapi.StreamPodSandboxesResponse]) error {
	items, err := s.sandboxes(out.Context(), r.Filter)
	return sendAll(out, err, &runtimeapi.StreamPodSandboxesResponse{PodSandboxes: items})
}

// sandbox reads the node and finds the sandbox id (or its prefix) names.
func (s *Server) sandbox(ctx context.Context, id string) (node, cri.Container, error) {
	n, err := s.read(ctx)
	if err != nil {
		return n, cri.Container{}, err
	}
	c, err := find(n.sandboxes, id)
	return n, c, err
}

// PodSandboxStatus describes one sandbox, with its pod's addresses.
func (s *Server) PodSandboxStatus(ctx context.Context, r *runtimeapi.PodSandboxStatusRequest) (*runtimeapi.PodSandboxStatusResponse, error) {
	n, c, err := s.sandbox(ctx, r.PodSandboxId)
	if err != nil {
		return nil, err
	}
	st := &runtimeapi.PodSandboxStatus{Id: c.ID, Metadata: sandboxMeta(c), State: sandboxState(c), CreatedAt: unixNano(c),
		Network: &runtimeapi.PodSandboxNetworkStatus{}, Labels: labels(c), Annotations: map[string]string{},
		Linux: &runtimeapi.LinuxPodSandboxStatus{Namespaces: &runtimeapi.Namespace{Options: &runtimeapi.NamespaceOption{}}}}
	for i, ip := range c.PodIPs {
		if i == 0 {
			st.Network.Ip = ip
		} else {
			st.Network.AdditionalIps = append(st.Network.AdditionalIps, &runtimeapi.PodIP{Ip: ip})
		}
	}
	resp := &runtimeapi.PodSandboxStatusResponse{Status: st}
	if r.Verbose {
		resp.Info = verboseInfo(map[string]any{"netns": c.NetNS, "containers": containersOf(n.containers, c.ID)})
	}
	return resp, nil
}

func containersOf(containers []cri.Container, sandboxID string) []string {
	ids := []string{}
	for _, c := range containers {
		if c.SandboxID == sandboxID {
			ids = append(ids, c.ID)
		}
	}
	return ids
}

func verboseInfo(v any) map[string]string {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return map[string]string{"info": string(b)}
}

func (s *Server) containers(ctx context.Context, f *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	n, err := s.read(ctx)
	if err != nil {
		return nil, err
	}
	out := []*runtimeapi.Container{}
	for _, c := range n.containers {
		if f != nil && (!strings.HasPrefix(c.ID, f.Id) || !strings.HasPrefix(c.SandboxID, f.PodSandboxId) ||
			!matchLabels(c, f.LabelSelector) || f.State != nil && f.State.State != containerState(c)) {
			continue
		}
		out = append(out, &runtimeapi.Container{Id: c.ID, PodSandboxId: c.SandboxID, Metadata: containerMeta(c),
			Image: &runtimeapi.ImageSpec{Image: c.Image}, ImageRef: c.ImageID, ImageId: c.ImageID, State: containerState(c),
			CreatedAt: unixNano(c), Labels: labels(c), Annotations: map[string]string{}})
	}
	return out, nil
}

// ListContainers lists the node's containers (sandboxes left out).
func (s *Server) ListContainers(ctx context.Context, r *runtimeapi.ListContainersRequest) (*runtimeapi.ListContainersResponse, error) {
	items, err := s.containers(ctx, r.Filter)
	return &runtimeapi.ListContainersResponse{Containers: items}, err
}

// StreamContainers sends ListContainers' answer as one message.
func (s *Server) StreamContainers(r *runtimeapi.StreamContainersRequest, out grpc.ServerStreamingServer[runtimeapi.StreamContainersResponse]) error {
	items, err := s.containers(out.Context(), r.Filter)
	return sendAll(out, err, &runtimeapi.StreamContainersResponse{Containers: items})
}

// ContainerStatus describes one container, with its log file.
func (s *Server) ContainerStatus(ctx context.Context, r *runtimeapi.ContainerStatusRequest) (*runtimeapi.ContainerStatusResponse, error) {
	n, err := s.read(ctx)
	if err != nil {
		return nil, err
	}
	c, err := find(n.containers, r.ContainerId)
	if err != nil {
		return nil, err
	}
	st := &runtimeapi.ContainerStatus{Id: c.ID, Metadata: containerMeta(c), State: containerState(c),
		CreatedAt: unixNano(c), StartedAt: nanos(c.StartedAt.UnixNano(), c.StartedAt.IsZero()),
		FinishedAt: nanos(c.FinishedAt.UnixNano(), c.FinishedAt.IsZero()), ExitCode: int32(c.ExitCode),
		Image: &runtimeapi.ImageSpec{Image: c.Image}, ImageRef: c.ImageID, ImageId: c.ImageID, Reason: c.Reason,
		Labels: labels(c), Annotations: map[string]string{}, LogPath: c.LogPath}
	resp := &runtimeapi.ContainerStatusResponse{Status: st}
	if r.Verbose {
		resp.Info = verboseInfo(map[string]any{"sandboxID": c.SandboxID, "resources": c.Resources})
	}
	return resp, nil
}

func nanos(v int64, zero bool) int64 {
	if zero {
		return 0
	}
	return v
}
