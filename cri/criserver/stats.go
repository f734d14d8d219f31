package criserver

import (
	"context"
	"strings"
	"time"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/skiff-lab/skiff/cri"
)

func now() int64 { return time.Now().UnixNano() }

// podStats reads the stats summary now and indexes it by pod UID.
func (s *Server) podStats(ctx context.Context) (map[string]statsapi.PodStats, error) {
	out := map[string]statsapi.PodStats{}
	if s.cfg.Stats == nil {
		return out, nil
	}
	sum, err := s.cfg.Stats(ctx)
	if err != nil {
		return nil, unavailable(err)
	}
	for _, p := range sum.Pods {
		out[p.PodRef.UID] = p
	}
	return out, nil
}

func cpuUsage(c *statsapi.CPUStats) *runtimeapi.CpuUsage {
	if c == nil {
		return nil
	}
	u := &runtimeapi.CpuUsage{Timestamp: c.Time.UnixNano()}
	if c.UsageCoreNanoSeconds != nil {
		u.UsageCoreNanoSeconds = &runtimeapi.UInt64Value{Value: *c.UsageCoreNanoSeconds}
	}
	if c.UsageNanoCores != nil {
		u.UsageNanoCores = &runtimeapi.UInt64Value{Value: *c.UsageNanoCores}
	}
	return u
}

func memoryUsage(m *statsapi.MemoryStats) *runtimeapi.MemoryUsage {
	if m == nil {
		return nil
	}
	u := &runtimeapi.MemoryUsage{Timestamp: m.Time.UnixNano()}
	for dst, src := range map[**runtimeapi.UInt64Value]*uint64{
		&u.WorkingSetBytes: m.WorkingSetBytes, &u.UsageBytes: m.UsageBytes, &u.RssBytes: m.RSSBytes,
		&u.AvailableBytes: m.AvailableBytes, &u.PageFaults: m.PageFaults, &u.MajorPageFaults: m.MajorPageFaults,
	} {
		if src != nil {
			*dst = &runtimeapi.UInt64Value{Value: *src}
		}
	}
	return u
}

// containerStats is one running container's usage from the summary; a
// container the summary has not sampled yet has only its attributes.
func containerStats(c cri.Container, pods map[string]statsapi.PodStats) *runtimeapi.ContainerStats {
	st := &runtimeapi.ContainerStats{Attributes: &runtimeapi.ContainerAttributes{Id: c.ID, Metadata: containerMeta(c),
		Labels: labels(c), Annotations: map[string]string{}}}
	for _, cs := range pods[c.Pod.UID].Containers {
		if cs.Name == c.Name {
			st.Cpu, st.Memory = cpuUsage(cs.CPU), memoryUsage(cs.Memory)
		}
	}
	return st
}

// readStats reads the node and its stats summary.
func (s *Server) readStats(ctx context.Context) (node, map[string]statsapi.PodStats, error) {
	n, err := s.read(ctx)
	if err != nil {
		return n, nil, err
	}
	pods, err := s.podStats(ctx)
	return n, pods, err
}

func (s *Server) containerStats(ctx context.Context, f *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error) {
	n, pods, err := s.readStats(ctx)
	if err != nil {
		return nil, err
	}
	out := []*runtimeapi.ContainerStats{}
	for _, c := range n.containers {
		if c.State != cri.StateRunning || f != nil && (!strings.HasPrefix(c.ID, f.Id) ||
			!strings.HasPrefix(c.SandboxID, f.PodSandboxId) || !matchLabels(c, f.LabelSelector)) {
			continue
		}
		out = append(out, containerStats(c, pods))
	}
	return out, nil
}

// ContainerStats is one running container's CPU and memory.
func (s *Server) ContainerStats(ctx context.Context, r *runtimeapi.ContainerStatsRequest) (*runtimeapi.ContainerStatsResponse, error) {
	c, err := s.running(ctx, r.ContainerId)
	if err != nil {
		return nil, err
	}
	pods, err := s.podStats(ctx)
	if err != nil {
		return nil, err
	}
	return &runtimeapi.ContainerStatsResponse{Stats: containerStats(c, pods)}, nil
}

// ListContainerStats lists the running containers' CPU and memory.
func (s *Server) ListContainerStats(ctx context.Context, r *runtimeapi.ListContainerStatsRequest) (*runtimeapi.ListContainerStatsResponse, error) {
	st, err := s.containerStats(ctx, r.Filter)
	return &runtimeapi.ListContainerStatsResponse{Stats: st}, err
}

// StreamContainerStats sends ListContainerStats' answer as one message.
func (s *Server) StreamContainerStats(r *runtimeapi.StreamContainerStatsRequest, out grpc.ServerStreamingServer[runtimeapi.StreamContainerStatsResponse]) error {
	st, err := s.containerStats(out.Context(), r.Filter)
	return sendAll(out, err, &runtimeapi.StreamContainerStatsResponse{ContainerStats: st})
}

func (s *Server) sandboxStats(ctx context.Context, f *runtimeapi.PodSandboxStatsFilter) ([]*runtimeapi.PodSandboxStats, error) {
	n, pods, err := s.readStats(ctx)
	if err != nil {
		return nil, err
	}
	out := []*runtimeapi.PodSandboxStats{}
	for _, sb := range n.sandboxes {
		if sb.State != cri.StateRunning || f != nil && (!strings.HasPrefix(sb.ID, f.Id) || !matchLabels(sb, f.LabelSelector)) {
			continue
		}
		p := pods[sb.Pod.UID]
		linux := &runtimeapi.LinuxPodSandboxStats{Cpu: cpuUsage(p.CPU), Memory: memoryUsage(p.Memory)}
		for _, c := range n.containers {
			if c.SandboxID == sb.ID && c.State == cri.StateRunning {
				linux.Containers = append(linux.Containers, containerStats(c, pods))
			}
		}
		out = append(out, &runtimeapi.PodSandboxStats{Linux: linux, Attributes: &runtimeapi.PodSandboxAttributes{
			Id: sb.ID, Metadata: sandboxMeta(sb), Labels: labels(sb), Annotations: map[string]string{}}})
	}
	return out, nil
}

// PodSandboxStats is one pod's CPU and memory, with its containers'.
func (s *Server) PodSandboxStats(ctx context.Context, r *runtimeapi.PodSandboxStatsRequest) (*runtimeapi.PodSandboxStatsResponse, error) {
	_, sb, err := s.sandbox(ctx, r.PodSandboxId)
	if err != nil {
		return nil, err
	}
	st, err := s.sandboxStats(ctx, &runtimeapi.PodSandboxStatsFilter{Id: sb.ID})
	if err != nil || len(st) == 0 {
		return &runtimeapi.PodSandboxStatsResponse{}, err
	}
	return &runtimeapi.PodSandboxStatsResponse{Stats: st[0]}, nil
}

// ListPodSandboxStats lists the running pods' CPU and memory.
func (s *Server) ListPodSandboxStats(ctx context.Context, r *runtimeapi.ListPodSandboxStatsRequest) (*runtimeapi.ListPodSandboxStatsResponse, error) {
	st, err := s.sandboxStats(ctx, r.Filter)
	return &runtimeapi.ListPodSandboxStatsResponse{Stats: st}, err
}

// StreamPodSandboxStats sends ListPodSandboxStats' answer as one message.
func (s *Server) StreamPodSandboxStats(r *runtimeapi.StreamPodSandboxStatsRequest, out grpc.ServerStreamingServer[runtimeapi.StreamPodSandboxStatsResponse]) error {
	st, err := s.sandboxStats(out.Context(), r.Filter)
	return sendAll(out, err, &runtimeapi.StreamPodSandboxStatsResponse{PodSandboxStats: st})
}
