package cri

import (
	"sync"
	"time"

	"github.com/containerd/containerd/v2/pkg/cio"
)

// streams is the agent's end of one container's stdout and stderr: the
// FIFOs the shim writes to, copied into the container's CRI log file.
type streams struct {
	log            *logFile
	stdout, stderr *lineWriter
	io             cio.IO
}

// openStreams opens the log for id; the IO is set once the task exists.
func (r *Runtime) openStreams(id, logPath string) (*streams, error) {
	log, err := openLog(logPath, r.cfg.LogRotation)
	if err != nil {
		return nil, err
	}
	s := &streams{log: log, stdout: log.stream("stdout"), stderr: log.stream("stderr")}
	r.streamsMu.Lock()
	r.streams[id] = s
	r.streamsMu.Unlock()
	return s, nil
}

// capture returns a cio.Creator or cio.Attach result hook that remembers the
// IO it made, so closing the streams can wait for the copying to finish.
func (s *streams) capture(io cio.IO, err error) (cio.IO, error) {
	s.io = io
	return io, err
}

func (r *Runtime) hasStreams(id string) bool {
	r.streamsMu.Lock()
	defer r.streamsMu.Unlock()
	_, ok := r.streams[id]
	return ok
}

// closeStreams waits (briefly) for the copying to drain, then flushes and
// closes the log. Closing unknown streams is a no-op.
func (r *Runtime) closeStreams(id string) {
	r.streamsMu.Lock()
	s, ok := r.streams[id]
	delete(r.streams, id)
	r.streamsMu.Unlock()
	if !ok {
		return
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
	s.stdout.Flush()
	s.stderr.Flush()
	_ = s.log.Close()
}

type streamTable struct {
	streamsMu sync.Mutex
	streams   map[string]*streams
}

// LogWriting says whether container id's output is still being copied to
// its log: from its start until its exit has been reaped.
func (r *Runtime) LogWriting(id string) bool { return r.hasStreams(id) }
