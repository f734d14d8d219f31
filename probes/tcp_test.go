package probes

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"
)

func TestTCPProbe(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	dead := closedPort(t)
	for _, tc := range []struct {
		name string
		port int
		want Result
		out  string
	}{
		{name: "listening", port: l.Addr().(*net.TCPAddr).Port, want: Success},
		{name: "refused", port: dead, want: Failure, out: fmt.Sprintf("dial tcp 127.0.0.1:%d: connect: connection refused", dead)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, out, err := tcpProbe(context.Background(), "127.0.0.1", tc.port, time.Second)
			if err != nil || got != tc.want || !strings.HasPrefix(out, tc.out) {
				t.Fatalf("tcpProbe = %v, %q, %v; want %v, %q", got, out, err, tc.want, tc.out)
			}
		})
	}
}
