package cri

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// LogOptions select what ReadLog writes of a container's log, as a pod's
// PodLogOptions do.
type LogOptions struct {
	Tail       int64     // only the last Tail lines; negative: all
	Since      time.Time // only records written at or after Since; zero: all
	Timestamps bool      // start each line with its record's time (rfc3339NanoFixed) and a space
	LimitBytes int64     // stop after writing this many bytes; 0: no limit
	// Follow keeps writing records as they are written, across rotations,
	// until ctx ends or, at the end of the file, Running says the
	// container has stopped (nil: until ctx ends).
	Follow  bool
	Running func() bool
}

// rfc3339NanoFixed is the kubelet's format for the times --timestamps
// prints: always nine fractional digits, so that the lines sort and align.
const rfc3339NanoFixed = "2006-01-02T15:04:05.000000000Z07:00"

// followPoll is how often a followed log is checked for new records.
const followPoll = 100 * time.Millisecond

// errLimitReached ends a read at LimitBytes.
var errLimitReached = errors.New("log limit reached")

// ReadLog writes the text of the CRI log file at path to w as opts select:
// records' contents with partial records joined, a line per full record.
// Only the current file is read (as the kubelet does, rotated files are
// not); a file that does not exist (yet) is empty. If w has a Flush() error
// method, it is called whenever a followed read waits for more. ReadLog
// returns nil when ctx ends or the limit is reached.
func ReadLog(ctx context.Context, path string, opts LogOptions, w io.Writer) error {
	f, err := openLogForRead(ctx, path, opts)
	if f == nil {
		return err
	}
	defer func() { f.Close() }()
	if opts.Tail >= 0 {
		off, err := tailOffset(f, opts.Tail)
		if err != nil {
			return err
		}
		if _, err := f.Seek(off, io.SeekStart); err != nil {
			return err
		}
	}
	err = follow(ctx, &f, path, opts, &logWriter{w: w, opts: opts, lineStart: true})
	if errors.Is(err, errLimitReached) {
		return nil
	}
	return err
}

// openLogForRead opens the log, waiting for it to appear when following.
// A nil file without error means there is nothing to read.
func openLogForRead(ctx context.Context, path string, opts LogOptions) (*os.File, error) {
	for {
		f, err := os.Open(path)
		if !errors.Is(err, os.ErrNotExist) {
			return f, err
		}
		if !opts.Follow || (opts.Running != nil && !opts.Running()) {
			return nil, nil
		}
		select {
		case <-ctx.Done():
			return nil, nil
		case <-time.After(followPoll):
		}
	}
}

// follow copies records from *f to out until the end of the file, or with
// opts.Follow until ctx ends or the container stops; a rotated file is
// read to its end, then the new one from its start. A record still being
// written at the end of the file is read once it is whole.
func follow(ctx context.Context, f **os.File, path string, opts LogOptions, out *logWriter) error {
	r := bufio.NewReaderSize(*f, 64<<10)
	var rec []byte
	for {
		chunk, err := r.ReadSlice('\n')
		rec = append(rec, chunk...) // ReadSlice's buffer is reused
		switch {
		case err == nil:
			if err := out.record(rec); err != nil {
				return err
			}
			rec = rec[:0]
		case errors.Is(err, bufio.ErrBufferFull): // a long record: read on
		case errors.Is(err, io.EOF):
			if !opts.Follow {
				return nil
			}
			if err := out.flush(); err != nil {
				return err
			}
			rotated, done, err := awaitMore(ctx, f, path, opts.Running)
			if err != nil || done {
				return err
			}
			if rotated {
				r.Reset(*f)
				rec = rec[:0]
			} // else rec keeps a partial record; the reader reads on from the file
		default:
			return err
		}
	}
}

// awaitMore waits at the end of *f for more to read. When path names a
// new file (the log was rotated) and *f has been read to its end, *f is
// switched to the new file (rotated). done means the read is over: ctx
// ended, or the container has stopped and everything is read, the file
// that replaced *f included.
func awaitMore(ctx context.Context, f **os.File, path string, running func() bool) (rotated, done bool, err error) {
	stopped := running != nil && !running()
	if !stopped {
		select {
		case <-ctx.Done():
			return false, true, nil
		case <-time.After(followPoll):
		}
	}
	if more, err := hasMore(*f); more || err != nil {
		return false, false, err // read on; a rotated file is finished first
	}
	cur, err := (*f).Stat()
	if err != nil {
		return false, false, err
	}
	now, err := os.Stat(path)
	if err != nil || os.SameFile(cur, now) {
		return false, stopped, nil // not rotated (or the new file not there yet)
	}
	next, err := os.Open(path)
	if err != nil {
		return false, stopped, nil
	}
	(*f).Close()
	*f = next
	return true, false, nil
}

// hasMore says whether f has bytes past its read offset.
func hasMore(f *os.File) (bool, error) {
	off, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		return false, err
	}
	info, err := f.Stat()
	if err != nil {
		return false, err
	}
	return info.Size() > off, nil
}

// tailOffset is where the last n lines of the log f start: after the
// (n+1)-th last full ("F") record. It reads the file backwards in blocks,
// judging each record by its header, so each byte is read once.
func tailOffset(f *os.File, n int64) (int64, error) {
	info, err := f.Stat()
	if err != nil {
		return 0, err
	}
	size := info.Size()
	if n == 0 {
		return size, nil
	}
	const block = 32 << 10
	recEnd, ends := size, int64(0) // recEnd: the end of the record after the newline at hand
	var next []byte                // the first bytes after the block at hand: a record's header
	for end := size; end > 0; {
		start := max(0, end-block)
		buf := make([]byte, end-start, end-start+int64(len(next)))
		if _, err := f.ReadAt(buf, start); err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		buf = append(buf, next...)
		for i := int(end-start) - 1; i >= -1; i-- {
			if i >= 0 && (buf[i] != '\n' || start+int64(i) == size-1) {
				continue // not a record's end, or the file's last newline
			}
			if i < 0 && start > 0 {
				break // the record is cut: judged with the block before
			}
			if fullRecord(buf[i+1 : min(len(buf), i+1+recordHeader)]) {
				if ends++; ends == n+1 {
					return recEnd, nil
				}
			}
			recEnd = start + int64(i) + 1
		}
		next, end = buf[:min(int64(len(buf)), recordHeader)], start
	}
	return 0, nil
}

// recordHeader is a length that holds a record's time, stream and tag.
const recordHeader = 64

// fullRecord says whether the record at the start of b is a full one (F).
func fullRecord(b []byte) bool {
	fields := bytes.SplitN(b[:recordLen(b)], []byte(" "), 4)
	return len(fields) == 4 && string(fields[2]) == "F"
}

// recordLen is the length of the first record of b, its newline included.
func recordLen(b []byte) int {
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		return i + 1
	}
	return len(b)
}

// logWriter writes parsed records to w with opts' since, timestamps and
// limit applied.
type logWriter struct {
	w         io.Writer
	opts      LogOptions
	written   int64
	lineStart bool // the next record begins a line
}

func (l *logWriter) record(rec []byte) error {
	fields := bytes.SplitN(bytes.TrimSuffix(rec, []byte("\n")), []byte(" "), 4)
	if len(fields) < 4 {
		return nil // not a record: skipped, as the kubelet does
	}
	ts, err := time.Parse(time.RFC3339Nano, string(fields[0]))
	if err != nil {
		return nil
	}
	full := string(fields[2]) == "F"
	if !l.opts.Since.IsZero() && ts.Before(l.opts.Since) {
		l.lineStart = full
		return nil
	}
	var line []byte
	if l.opts.Timestamps && l.lineStart {
		line = ts.AppendFormat(line, rfc3339NanoFixed)
		line = append(line, ' ')
	}
	line = append(line, fields[3]...)
	if full {
		line = append(line, '\n')
	}
	l.lineStart = full
	return l.write(line)
}

// flush sends what was written on, if the writer buffers (it has a Flush
// method), before a followed read waits.
func (l *logWriter) flush() error {
	if f, ok := l.w.(interface{ Flush() error }); ok {
		return f.Flush()
	}
	return nil
}

func (l *logWriter) write(p []byte) error {
	limited := l.opts.LimitBytes > 0
	if limited {
		if room := l.opts.LimitBytes - l.written; int64(len(p)) > room {
			p = p[:room]
		}
	}
	n, err := l.w.Write(p)
	l.written += int64(n)
	if err != nil {
		return fmt.Errorf("write log: %w", err)
	}
	if limited && l.written >= l.opts.LimitBytes {
		return errLimitReached
	}
	return nil
}
