package probes

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// execFunc is an Execer made of a function.
type execFunc func(ctx context.Context, id string, cmd []string, timeout time.Duration) ([]byte, int, error)

func (f execFunc) Exec(ctx context.Context, id string, cmd []string, timeout time.Duration) ([]byte, int, error) {
	return f(ctx, id, cmd, timeout)
}

func exits(out string, code int, err error) Execer {
	return execFunc(func(context.Context, string, []string, time.Duration) ([]byte, int, error) {
		return []byte(out), code, err
	})
}

func TestExecProbe(t *testing.T) {
	hang := execFunc(func(ctx context.Context, _ string, _ []string, _ time.Duration) ([]byte, int, error) {
		<-ctx.Done()
		return nil, -1, ctx.Err()
	})
	broken := errors.New("no such container")
	for _, tc := range []struct {
		name    string
		execer  Execer
		want    Result
		out     string
		wantErr error
	}{
		{name: "exit 0", execer: exits("fine\n", 0, nil), want: Success, out: "fine\n"},
		{name: "exit 1", execer: exits("sad\n", 1, nil), want: Failure, out: "sad\n"},
		{name: "output cut at 10 KiB", execer: exits(strings.Repeat("x", 2*maxBody), 0, nil), want: Success, out: strings.Repeat("x", maxBody)},
		{name: "runtime says timed out", execer: exits("", -1, fmt.Errorf("exec: %w", ErrExecTimeout)), want: Failure, out: `command "sleep 9" timed out`},
		{name: "deadline passes", execer: hang, want: Failure, out: `command "sleep 9" timed out`},
		{name: "exec error", execer: exits("", -1, broken), want: Unknown, wantErr: broken},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, out, err := execProbe(context.Background(), tc.execer, "c1", []string{"sleep", "9"}, 20*time.Millisecond)
			if got != tc.want || out != tc.out || !errors.Is(err, tc.wantErr) {
				t.Fatalf("execProbe = %v, %.40q, %v; want %v, %.40q, %v", got, out, err, tc.want, tc.out, tc.wantErr)
			}
		})
	}
}
