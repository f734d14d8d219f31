package cri

import (
	"context"
	"fmt"
	"io"

	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
	utilexec "k8s.io/utils/exec"
)

// StreamExec is Exec for a streaming server (k8s.io/cri-streaming, as the
// node API and the CRI socket serve it): a non-zero exit is a CodeExitError
// with the code, which the stream reports to the client.
func (r *Runtime) StreamExec(ctx context.Context, id string, cmd []string, in io.Reader, out, errOut io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize) error {
	sizes, stop := termSizes(resize)
	defer stop()
	code, err := r.Exec(ctx, id, ExecOptions{Cmd: cmd, Stdin: in, Stdout: out, Stderr: errOut, TTY: tty, Resize: sizes})
	if err == nil && code != 0 {
		err = utilexec.CodeExitError{Err: fmt.Errorf("command terminated with exit code %d", code), Code: code}
	}
	return err
}

// StreamAttach is Attach for a streaming server.
func (r *Runtime) StreamAttach(ctx context.Context, id string, in io.Reader, out, errOut io.WriteCloser, resize <-chan remotecommand.TerminalSize) error {
	sizes, stop := termSizes(resize)
	defer stop()
	return r.Attach(ctx, id, AttachOptions{Stdin: in, Stdout: out, Stderr: errOut, Resize: sizes})
}

// termSizes passes terminal sizes on as the runtime's type until stop.
func termSizes(in <-chan remotecommand.TerminalSize) (<-chan TermSize, func()) {
	if in == nil {
		return nil, func() {}
	}
	out, done := make(chan TermSize), make(chan struct{})
	go func() {
		defer close(out)
		for {
			select {
			case size, ok := <-in:
				if !ok {
					return
				}
				select {
				case out <- TermSize{Width: size.Width, Height: size.Height}:
				case <-done:
					return
				}
			case <-done:
				return
			}
		}
	}()
	return out, func() { close(done) }
}
