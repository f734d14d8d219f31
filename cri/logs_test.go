package cri

import (
	"fmt"
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
// started, and only MaxFiles files kept; no line is lost or split.
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
	for _, f := range append(files[1:], files[0]) { // rotated (oldest first), then current
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if len(data) > 200+38 {
			t.Errorf("%s has %d bytes, over the limit by more than a record", f, len(data))
		}
		text += string(logText(data))
	}
	if want := "line 06\nline 07\nline 08\nline 09\nline 10\nline 11\nline 12\nline 13\nline 14\nline 15\nline 16\nline 17\nline 18\nline 19\n"; text != want {
		t.Errorf("kept text %q, want the newest lines whole: %q", text, want)
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
