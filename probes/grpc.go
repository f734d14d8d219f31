package probes

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// grpcProbe calls grpc.health.v1.Health/Check for service on host:port over
// plain text. SERVING is Success; every other answer, an unreachable server or
// a timeout is Failure with kubelet's wording. It never returns an error.
func grpcProbe(ctx context.Context, host string, port int, service string, timeout time.Duration) (Result, string, error) {
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	conn, err := grpc.NewClient("passthrough:///"+addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithUserAgent(userAgent),
		grpc.WithContextDialer(func(ctx context.Context, a string) (net.Conn, error) {
			return probeDialer().DialContext(ctx, "tcp", a)
		}))
	if err != nil {
		return Failure, fmt.Sprintf("error: failed to connect service at %q: %+v", addr, err), nil
	}
	defer conn.Close()

	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		return Failure, grpcFailure(addr, timeout, err), nil
	}
	if s := resp.GetStatus(); s != healthpb.HealthCheckResponse_SERVING {
		return Failure, fmt.Sprintf("service unhealthy (responded with %q)", s.String()), nil
	}
	return Success, "service healthy", nil
}

func grpcFailure(addr string, timeout time.Duration, err error) string {
	s, _ := status.FromError(err)
	switch s.Code() {
	case codes.Unimplemented:
		return "error: this server does not implement the grpc health protocol (grpc.health.v1.Health): " + s.Message()
	case codes.DeadlineExceeded:
		return fmt.Sprintf("timeout: health rpc did not complete within %v", timeout)
	case codes.Unavailable:
		return fmt.Sprintf("error: failed to connect service at %q: %s", addr, s.Message())
	}
	return fmt.Sprintf("error: health rpc probe failed: %+v", err)
}
