package probes

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// grpcServer serves s on 127.0.0.1 and returns its port.
func grpcServer(t *testing.T, s *grpc.Server) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.Serve(l) }()
	t.Cleanup(s.Stop)
	return l.Addr().(*net.TCPAddr).Port
}

func TestGRPCProbe(t *testing.T) {
	hs := health.NewServer()
	hs.SetServingStatus("up", healthpb.HealthCheckResponse_SERVING)
	hs.SetServingStatus("down", healthpb.HealthCheckResponse_NOT_SERVING)
	withHealth := grpc.NewServer()
	healthpb.RegisterHealthServer(withHealth, hs)
	port, bare, dead := grpcServer(t, withHealth), grpcServer(t, grpc.NewServer()), closedPort(t)
	for _, tc := range []struct {
		name    string
		port    int
		service string
		want    Result
		out     string // prefix
	}{
		{name: "server overall", port: port, want: Success, out: "service healthy"},
		{name: "serving", port: port, service: "up", want: Success, out: "service healthy"},
		{name: "not serving", port: port, service: "down", want: Failure, out: `service unhealthy (responded with "NOT_SERVING")`},
		{name: "unknown service", port: port, service: "nope", want: Failure, out: "error: health rpc probe failed: rpc error: code = NotFound"},
		{name: "no health service", port: bare, want: Failure, out: "error: this server does not implement the grpc health protocol (grpc.health.v1.Health)"},
		{name: "refused", port: dead, want: Failure, out: fmt.Sprintf(`error: failed to connect service at "127.0.0.1:%d": `, dead)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, out, err := grpcProbe(context.Background(), "127.0.0.1", tc.port, tc.service, 2*time.Second)
			if err != nil || got != tc.want || !strings.HasPrefix(out, tc.out) {
				t.Fatalf("grpcProbe = %v, %q, %v; want %v, output starting %q", got, out, err, tc.want, tc.out)
			}
		})
	}
}
