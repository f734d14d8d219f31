package probes

import (
	"context"
	"errors"

	v1 "k8s.io/api/core/v1"
)

// Target is what a probe runs against: the pod's IP (the default host of
// httpGet and tcpSocket, the host of grpc), the container spec (its named
// ports) and the runtime ID of the container instance (for exec).
type Target struct {
	PodIP       string
	Container   *v1.Container
	ContainerID string
}

// Prober runs any of the four probe handlers once. It holds no per-pod state
// and is safe for concurrent use. Build it with NewProber.
type Prober struct {
	http   *httpProber
	execer Execer
}

// NewProber returns a Prober whose exec probes run through execer. execer
// may be nil; exec probes then return an error (and count for nothing).
func NewProber(execer Execer) *Prober {
	return &Prober{http: newHTTPProber(), execer: execer}
}

// errNoHandler is returned for a probe with none of exec, httpGet, tcpSocket
// and grpc set (validation forbids it).
var errNoHandler = errors.New("probe has no handler")

// Probe runs spec once against t, bounded by spec.timeoutSeconds (1s when
// unset). Failure and Warning come with kubelet's output text. A non-nil
// error means the probe could not be run (e.g. an unknown named port, an
// Execer error) and says nothing about the container's health.
func (p *Prober) Probe(ctx context.Context, spec *v1.Probe, t Target) (Result, string, error) {
	timeout := seconds(spec.TimeoutSeconds, defaultTimeout)
	switch h := spec.ProbeHandler; {
	case h.Exec != nil:
		return execProbe(ctx, p.execer, t.ContainerID, h.Exec.Command, timeout)
	case h.HTTPGet != nil:
		return p.http.probe(ctx, h.HTTPGet, t, timeout)
	case h.TCPSocket != nil:
		port, err := resolvePort(h.TCPSocket.Port, t.Container)
		if err != nil {
			return Unknown, "", err
		}
		host := h.TCPSocket.Host
		if host == "" {
			host = t.PodIP
		}
		return tcpProbe(ctx, host, port, timeout)
	case h.GRPC != nil:
		service := ""
		if h.GRPC.Service != nil {
			service = *h.GRPC.Service
		}
		return grpcProbe(ctx, t.PodIP, int(h.GRPC.Port), service, timeout)
	}
	return Unknown, "", errNoHandler
}
