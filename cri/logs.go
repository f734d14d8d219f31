package cri

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// maxLogLine is the longest line written as one record; longer lines are split
// into partial ("P") records, as the CRI log format does.
const maxLogLine = 16 * 1024

// logFile writes a container's stdout and stderr to one file in the CRI log
// format: "<RFC3339Nano time> <stream> <F|P> <content>\n". Both streams may
// write concurrently.
type logFile struct {
	mu  sync.Mutex
	f   io.WriteCloser
	now func() time.Time
}

func openLog(path string) (*logFile, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("create log dir: %w", err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o640)
	if err != nil {
		return nil, fmt.Errorf("open log: %w", err)
	}
	return &logFile{f: f, now: time.Now}, nil
}

func (l *logFile) record(stream, tag string, content []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.f, "%s %s %s %s\n", l.now().UTC().Format(time.RFC3339Nano), stream, tag, content)
}

// stream returns the writer for one stream ("stdout" or "stderr").
func (l *logFile) stream(name string) *lineWriter { return &lineWriter{log: l, name: name} }

func (l *logFile) Close() error { return l.f.Close() }

// lineWriter cuts what one stream writes into records.
type lineWriter struct {
	log  *logFile
	name string
	buf  []byte
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		switch {
		case i >= 0 && i <= maxLogLine:
			w.log.record(w.name, "F", w.buf[:i])
			w.buf = w.buf[i+1:]
		case len(w.buf) > maxLogLine:
			w.log.record(w.name, "P", w.buf[:maxLogLine])
			w.buf = w.buf[maxLogLine:]
		default:
			w.buf = compact(w.buf)
			return len(p), nil
		}
	}
}

// Flush writes what is left of an unterminated last line.
func (w *lineWriter) Flush() {
	if len(w.buf) > 0 {
		w.log.record(w.name, "F", w.buf)
		w.buf = nil
	}
}

// compact returns b in a fresh array when most of its backing array is spent,
// so a long-lived writer does not pin old output.
func compact(b []byte) []byte {
	if cap(b) > 4*maxLogLine && len(b) < cap(b)/4 {
		return append([]byte(nil), b...)
	}
	return b
}
