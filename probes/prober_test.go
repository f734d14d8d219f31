package probes

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestProberDispatch(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := int32(l.Addr().(*net.TCPAddr).Port)
	var gotID string
	var gotTimeout time.Duration
	execer := execFunc(func(_ context.Context, id string, _ []string, timeout time.Duration) ([]byte, int, error) {
		gotID, gotTimeout = id, timeout
		return nil, 0, nil
	})
	target := Target{PodIP: "127.0.0.1", ContainerID: "c1", Container: &v1.Container{Ports: []v1.ContainerPort{{Name: "svc", ContainerPort: port}}}}
	for _, tc := range []struct {
		name    string
		prober  *Prober
		handler v1.ProbeHandler
		want    Result
		wantErr error
	}{
		{name: "exec", prober: NewProber(execer), handler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}, want: Success},
		{name: "exec without execer", prober: NewProber(nil), handler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}, want: Unknown},
		{name: "tcp named port", prober: NewProber(nil), handler: v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromString("svc")}}, want: Success},
		{name: "tcp bad name", prober: NewProber(nil), handler: v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromString("x")}}, want: Unknown, wantErr: ErrPortNotFound},
		{name: "no handler", prober: NewProber(nil), want: Unknown, wantErr: errNoHandler},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _, err := tc.prober.Probe(context.Background(), &v1.Probe{ProbeHandler: tc.handler}, target)
			if got != tc.want || (tc.wantErr != nil && !errors.Is(err, tc.wantErr)) || (got == Unknown) != (err != nil) {
				t.Fatalf("Probe = %v, %v; want %v, %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
	if gotID != "c1" || gotTimeout != time.Second {
		t.Fatalf("exec got container %q timeout %v, want c1 and the 1s default", gotID, gotTimeout)
	}
}
