package probes

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Execer runs a command in a running container. The agent implements it on
// its container runtime; probes only consumes it.
//
// Exec runs cmd in containerID and returns its combined stdout and stderr and
// its exit code. err is nil whenever the command ran to its end, whatever its
// exit code. A command still running after timeout must be killed and
// reported with an error wrapping ErrExecTimeout or
// context.DeadlineExceeded; any other error means the command could not be
// run. Exec must be safe for concurrent use and return once ctx is done.
type Execer interface {
	Exec(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (output []byte, exitCode int, err error)
}

// ErrExecTimeout is what an Execer wraps when a command ran past its timeout.
var ErrExecTimeout = errors.New("exec timed out")

// execProbe runs cmd in the container: exit code 0 is Success, any other is
// Failure, both with the output cut at 10 KiB. A timeout is Failure
// (`command "sh -c sleep 9" timed out`). Any other Execer error is returned,
// and the run counts for nothing.
func execProbe(ctx context.Context, e Execer, containerID string, cmd []string, timeout time.Duration) (Result, string, error) {
	if e == nil {
		return Unknown, "", errors.New("exec probe: no Execer configured")
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	out, code, err := e.Exec(ctx, containerID, cmd, timeout)
	if len(out) > maxBody {
		out = out[:maxBody]
	}
	switch {
	case err == nil && code == 0:
		return Success, string(out), nil
	case err == nil:
		return Failure, string(out), nil
	case errors.Is(err, ErrExecTimeout) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(ctx.Err(), context.DeadlineExceeded):
		return Failure, fmt.Sprintf("command %q timed out", strings.Join(cmd, " ")), nil
	}
	return Unknown, "", fmt.Errorf("exec probe in %s: %w", containerID, err)
}
