package store

import (
	"errors"
	"fmt"
	"testing"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
)

// Reads are tried again on the errors of an etcd cluster that is electing
// a leader, whether they come as gRPC statuses or as the client's errors;
// on no other.
func TestLeaderLost(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{rpctypes.ErrGRPCLeaderChanged, true},
		{rpctypes.ErrLeaderChanged, true},
		{rpctypes.ErrGRPCNoLeader, true},
		{fmt.Errorf("get: %w", rpctypes.ErrTimeoutDueToLeaderFail), true},
		{rpctypes.ErrGRPCKeyNotFound, false},
		{rpctypes.ErrTimeout, false},
		{errors.New("etcdserver: leader changed, maybe"), false},
	} {
		if got := leaderLost(c.err); got != c.want {
			t.Errorf("leaderLost(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
