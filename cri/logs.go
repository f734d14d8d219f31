package cri

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// maxLogLine is the longest line written as one record; longer lines are split
// into partial ("P") records, as the CRI log format does.
const maxLogLine = 16 * 1024

// LogRotation bounds a container's log files: once the current file
// reaches MaxSize it is renamed to <file>.<time> and a new one started,
// and only the newest MaxFiles files (the current one included) are kept.
// As the kubelet does, every rotated file but the newest is gzipped
// (<file>.<time>.gz). A zero MaxSize never rotates.
type LogRotation struct {
	MaxSize  int64
	MaxFiles int
}

// rotatedSuffix names a rotated file by the time it was rotated; it sorts
// by time.
const rotatedSuffix = "20060102-150405.000000000"

// logFile writes a container's stdout and stderr to one file in the CRI log
// format: "<RFC3339Nano time> <stream> <F|P> <content>\n", rotating it as
// its LogRotation says. Both streams may write concurrently.
type logFile struct {
	mu       sync.Mutex
	path     string
	f        *os.File
	size     int64
	rotation LogRotation
	now      func() time.Time
	// The rotated files are pruned and compressed by one goroutine at a
	// time beside the writer (tidyLoop): tidying says it runs, tidyAgain
	// that a rotation came since its last pass (both guarded by mu).
	tidying, tidyAgain bool
	tidied             sync.WaitGroup // Close waits for the tidying
}

func openLog(path string, rotation LogRotation) (*logFile, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("create log dir: %w", err)
	}
	l := &logFile{path: path, rotation: rotation, now: time.Now}
	return l, l.open()
}

func (l *logFile) open() error {
	f, err := os.OpenFile(l.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o640)
	if err != nil {
		return fmt.Errorf("open log: %w", err)
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("open log: %w", err)
	}
	l.f, l.size = f, info.Size()
	return nil
}

func (l *logFile) record(stream, tag string, content []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return // closed, or a rotation failed to reopen: output is dropped
	}
	n, _ := fmt.Fprintf(l.f, "%s %s %s %s\n", l.now().UTC().Format(time.RFC3339Nano), stream, tag, content)
	l.size += int64(n)
	if l.rotation.MaxSize > 0 && l.size >= l.rotation.MaxSize {
		if err := l.rotate(); err != nil {
			slog.Warn("rotate container log", "path", l.path, "err", err)
		}
	}
}

// rotate renames the full file aside and starts a new one; the rotated
// files are tidied in the background. A reader following the log reads
// the renamed file to its end, then the new one.
func (l *logFile) rotate() error {
	l.f.Close()
	l.f = nil
	rotated := l.path + "." + l.now().UTC().Format(rotatedSuffix)
	if err := os.Rename(l.path, rotated); err != nil {
		return errors.Join(err, l.open())
	}
	if l.tidying {
		l.tidyAgain = true
	} else {
		l.tidying = true
		l.tidied.Go(l.tidyLoop)
	}
	return l.open()
}

// tidyLoop tidies the rotated files until no rotation came meanwhile.
func (l *logFile) tidyLoop() {
	for again := true; again; {
		if err := l.tidy(); err != nil {
			slog.Warn("tidy rotated container logs", "path", l.path, "err", err)
		}
		l.mu.Lock()
		again = l.tidyAgain
		l.tidyAgain, l.tidying = false, again
		l.mu.Unlock()
	}
}

// tidy removes the oldest rotated files beyond MaxFiles and gzips the
// rest but the newest: that one a reader may still follow.
func (l *logFile) tidy() error {
	old, err := rotatedLogs(l.path)
	if err != nil {
		return err
	}
	cut := max(len(old)-max(l.rotation.MaxFiles-1, 0), 0)
	for _, path := range old[:cut] {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	kept := old[cut:]
	for _, path := range kept[:max(len(kept)-1, 0)] {
		if !strings.HasSuffix(path, gzSuffix) {
			if err := gzipFile(path); err != nil {
				return err
			}
		}
	}
	return nil
}

// rotatedLogs lists the rotated files of the log at path, oldest first,
// and removes what an interrupted compression left: a temporary file, or
// the uncompressed file beside a finished .gz.
func rotatedLogs(path string) ([]string, error) {
	all, err := filepath.Glob(globEscape(path) + ".*")
	if err != nil {
		return nil, err
	}
	slices.Sort(all) // by time: the suffix starts with it
	var rotated []string
	for _, p := range all {
		if strings.HasSuffix(p, tmpSuffix) || slices.Contains(all, p+gzSuffix) {
			os.Remove(p)
			continue
		}
		rotated = append(rotated, p)
	}
	return rotated, nil
}

const (
	gzSuffix  = ".gz"
	tmpSuffix = ".tmp"
)

// gzipFile replaces the file at path with path.gz, written whole under a
// temporary name first so that a crash leaves either file, never half of one.
func gzipFile(path string) error {
	src, err := os.Open(path)
	if err != nil {
		return err
	}
	defer src.Close()
	tmp := path + gzSuffix + tmpSuffix
	dst, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o640)
	if err != nil {
		return err
	}
	zw := gzip.NewWriter(dst)
	_, err = io.Copy(zw, src)
	err = errors.Join(err, zw.Close(), dst.Close())
	if err == nil {
		err = os.Rename(tmp, path+gzSuffix)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Remove(path)
}

// removeLog removes a container's log file and its rotated files.
func removeLog(path string) error {
	rotated, err := rotatedLogs(path)
	if err != nil {
		return err
	}
	for _, p := range append(rotated, path) {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

// globEscape quotes the glob metacharacters in path.
func globEscape(path string) string {
	var b strings.Builder
	for _, r := range path {
		if strings.ContainsRune(`*?[\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// stream returns the writer for one stream ("stdout" or "stderr").
func (l *logFile) stream(name string) *lineWriter { return &lineWriter{log: l, name: name} }

// Close closes the file once the writers are done, and waits for the
// rotated files to be tidied.
func (l *logFile) Close() error {
	l.mu.Lock()
	var err error
	if l.f != nil {
		err = l.f.Close()
		l.f = nil
	}
	l.mu.Unlock()
	l.tidied.Wait()
	return err
}

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
