package cri

import (
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestLogFormat(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	l, err := openLog(path, LogRotation{})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 22, 10, 0, 0, 123456789, time.UTC)
	l.now = func() time.Time { return at }
	stdout, stderr := l.stream("stdout"), l.stream("stderr")
	stdout.Write([]byte("hello\nwor"))
	stderr.Write([]byte("oops\n"))
	stdout.Write([]byte("ld\nlast"))
	stdout.Flush()
	long := strings.Repeat("x", maxLogLine+5)
	stderr.Write([]byte(long + "\n"))
	l.Close()
	out, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}

	ts := "2026-11-22T10:00:00.123456789Z"
	want := ts + " stdout F hello\n" +
		ts + " stderr F oops\n" +
		ts + " stdout F world\n" +
		ts + " stdout F last\n" +
		ts + " stderr P " + long[:maxLogLine] + "\n" +
		ts + " stderr F xxxxx\n"
	if got := string(out); got != want {
		t.Errorf("log:\n%q\nwant\n%q", got, want)
	}
}

// A log that reaches its size is renamed aside with the time, a new file
// started, and only MaxFiles files kept, all rotated ones but the newest
// gzipped; no line is lost or split.
func TestLogRotation(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "0.log")
	l, err := openLog(path, LogRotation{MaxSize: 200, MaxFiles: 3})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	l.now = func() time.Time { at = at.Add(time.Second); return at }
	w := l.stream("stdout")
	for i := range 20 {
		fmt.Fprintf(w, "line %02d\n", i) // 38-byte records: a file rotates after 6
	}
	l.Close()
	files, _ := filepath.Glob(path + "*")
	if len(files) != 3 {
		t.Fatalf("files %v, want the current one and 2 rotated", files)
	}
	var text string
	if !strings.HasSuffix(files[1], ".gz") || strings.HasSuffix(files[2], ".gz") {
		t.Errorf("files %v, want the older rotated one gzipped and the newer not", files)
	}
	for _, f := range append(files[1:], files[0]) { // rotated (oldest first), then current
		data := readMaybeGzipped(t, f)
		if len(data) > 200+38 {
			t.Errorf("%s has %d bytes, over the limit by more than a record", f, len(data))
		}
		text += string(logText(data))
	}
	if want := "line 06\nline 07\nline 08\nline 09\nline 10\nline 11\nline 12\nline 13\nline 14\nline 15\nline 16\nline 17\nline 18\nline 19\n"; text != want {
		t.Errorf("kept text %q, want the newest lines whole: %q", text, want)
	}
}

func readMaybeGzipped(t *testing.T, path string) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		if r, err = gzip.NewReader(f); err != nil {
			t.Fatal(err)
		}
	}
	data, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// What a compression cut short by a crash left is removed at the next
// rotation: a temporary file, and an uncompressed file beside its .gz.
func TestRotationRemovesCompressionLeftovers(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "0.log")
	for _, name := range []string{".20261122-100000.000000000", ".20261122-100000.000000000.gz", ".20261122-100001.000000000.gz.tmp"} {
		if err := os.WriteFile(path+name, nil, 0o640); err != nil {
			t.Fatal(err)
		}
	}
	l, err := openLog(path, LogRotation{MaxSize: 10, MaxFiles: 5})
	if err != nil {
		t.Fatal(err)
	}
	l.now = func() time.Time { return time.Date(2026, 11, 22, 11, 0, 0, 0, time.UTC) }
	fmt.Fprintf(l.stream("stdout"), "rotate now\n")
	l.Close()
	files, _ := filepath.Glob(path + ".*")
	if len(files) != 2 || !strings.HasSuffix(files[0], "100000.000000000.gz") {
		t.Errorf("rotated files %v, want the old .gz and the new one", files)
	}
}

// A removed container's log goes with its rotated files, and nothing else.
func TestRemoveLog(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "0.log")
	for _, name := range []string{"0.log", "0.log.20261122-100000.000000000.gz", "0.log.20261122-100001.000000000", "1.log"} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o640); err != nil {
			t.Fatal(err)
		}
	}
	if err := removeLog(path); err != nil {
		t.Fatal(err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) != 1 || filepath.Base(left[0]) != "1.log" {
		t.Errorf("left %v, want only 1.log", left)
	}
}

func TestTailLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	log := "2026-01-01T00:00:00Z stdout F one\n" +
		"2026-01-01T00:00:01Z stderr F two\n" +
		"2026-01-01T00:00:02Z stdout P thr\n" +
		"2026-01-01T00:00:03Z stdout F ee\n"
	if err := os.WriteFile(path, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		lines, bytes int
		want         string
	}{
		{80, 2048, "one\ntwo\nthree\n"},
		{2, 2048, "two\nthree\n"},
		{80, 4, "ree\n"},
	}
	for _, tt := range tests {
		got, err := TailLog(path, tt.lines, tt.bytes)
		if err != nil || got != tt.want {
			t.Errorf("TailLog(%d, %d) = %q, %v; want %q", tt.lines, tt.bytes, got, err, tt.want)
		}
	}
}
