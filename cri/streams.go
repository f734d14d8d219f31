package cri

import (
	"io"
	"sync"
	"time"

	"github.com/containerd/containerd/v2/pkg/cio"
)

// Stdio is how a container's own process is connected, as the pod spec's
// stdin, stdinOnce and tty ask.
type Stdio struct {
	Stdin     bool // the process has a stdin that attached clients write to
	StdinOnce bool // the stdin closes when the first attached client's ends
	TTY       bool // the process runs on a terminal (stdout and stderr merged)
}

// streams is the agent's end of one container's stdio: the FIFOs the shim
// writes the output to, copied into the container's CRI log file and to
// the clients attached at the time, and the container's stdin if it has
// one.
type streams struct {
	log            *logFile
	stdout, stderr *outputStream
	stdin          *io.PipeWriter // nil without stdin
	stdinReader    *io.PipeReader
	stdio          Stdio
	io             cio.IO
	closing        sync.Once
	done           chan struct{} // closed when the streams are closed
}

// openStreams opens the log for id; the IO is set once the task exists.
func (r *Runtime) openStreams(id, logPath string, stdio Stdio) (*streams, error) {
	log, err := openLog(logPath, r.cfg.LogRotation)
	if err != nil {
		return nil, err
	}
	s := &streams{log: log, stdout: newOutputStream(log.stream("stdout")), stderr: newOutputStream(log.stream("stderr")),
		stdio: stdio, done: make(chan struct{})}
	if stdio.Stdin {
		s.stdinReader, s.stdin = io.Pipe()
	}
	r.streamsMu.Lock()
	r.streams[id] = s
	r.streamsMu.Unlock()
	return s, nil
}

// cioOpts connect the shim's FIFOs to the streams.
func (s *streams) cioOpts() []cio.Opt {
	var stdin io.Reader
	if s.stdinReader != nil {
		stdin = s.stdinReader
	}
	if s.stdio.TTY {
		return []cio.Opt{cio.WithTerminal, cio.WithStreams(stdin, s.stdout, nil)}
	}
	return []cio.Opt{cio.WithStreams(stdin, s.stdout, s.stderr)}
}

// capture returns a cio.Creator or cio.Attach result hook that remembers the
// IO it made, so closing the streams can wait for the copying to finish.
func (s *streams) capture(io cio.IO, err error) (cio.IO, error) {
	s.io = io
	return io, err
}

func (r *Runtime) hasStreams(id string) bool {
	_, ok := r.lookupStreams(id)
	return ok
}

func (r *Runtime) lookupStreams(id string) (*streams, bool) {
	r.streamsMu.Lock()
	defer r.streamsMu.Unlock()
	s, ok := r.streams[id]
	return s, ok
}

// closeStreams closes the stdin, waits (briefly) for the output copying to
// drain, then flushes and closes the log and ends attached sessions. The
// streams stay listed until then, so the log counts as written (LogWriting)
// until its last line is in. Closing unknown streams is a no-op; a second
// close waits for the first.
func (r *Runtime) closeStreams(id string) {
	s, ok := r.lookupStreams(id)
	if !ok {
		return
	}
	s.closing.Do(s.close)
	r.streamsMu.Lock()
	if r.streams[id] == s {
		delete(r.streams, id)
	}
	r.streamsMu.Unlock()
}

func (s *streams) close() {
	if s.stdin != nil {
		s.stdin.Close()
	}
	if s.io != nil {
		drained := make(chan struct{})
		go func() { s.io.Wait(); close(drained) }()
		select {
		case <-drained:
		case <-time.After(2 * time.Second):
			s.io.Cancel()
		}
		_ = s.io.Close()
	}
	s.stdout.log.Flush()
	s.stderr.log.Flush()
	_ = s.log.Close()
	close(s.done)
}

type streamTable struct {
	streamsMu sync.Mutex
	streams   map[string]*streams
}

// LogWriting says whether container id's output is still being copied to
// its log: from its start until its exit has been reaped.
func (r *Runtime) LogWriting(id string) bool { return r.hasStreams(id) }

// outputStream is one output stream of a container: every write goes to
// the log and to each attached client; a client whose write fails is
// dropped. A slow client slows the container's output, as with a terminal.
type outputStream struct {
	log      *lineWriter
	mu       sync.Mutex
	attached map[*io.Writer]struct{}
}

func newOutputStream(log *lineWriter) *outputStream {
	return &outputStream{log: log, attached: map[*io.Writer]struct{}{}}
}

func (o *outputStream) Write(p []byte) (int, error) {
	o.log.Write(p)
	o.mu.Lock()
	defer o.mu.Unlock()
	for w := range o.attached {
		if _, err := (*w).Write(p); err != nil {
			delete(o.attached, w)
		}
	}
	return len(p), nil
}

// attach adds w until the returned func is called; a nil w adds nothing.
func (o *outputStream) attach(w io.Writer) (detach func()) {
	if w == nil {
		return func() {}
	}
	key := &w
	o.mu.Lock()
	o.attached[key] = struct{}{}
	o.mu.Unlock()
	return func() {
		o.mu.Lock()
		delete(o.attached, key)
		o.mu.Unlock()
	}
}
