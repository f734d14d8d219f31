package cri

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

type nopCloser struct{ *bytes.Buffer }

func (nopCloser) Close() error { return nil }

func TestLogFormat(t *testing.T) {
	var out bytes.Buffer
	at := time.Date(2026, 11, 22, 10, 0, 0, 123456789, time.UTC)
	l := &logFile{f: nopCloser{&out}, now: func() time.Time { return at }}
	stdout, stderr := l.stream("stdout"), l.stream("stderr")
	stdout.Write([]byte("hello\nwor"))
	stderr.Write([]byte("oops\n"))
	stdout.Write([]byte("ld\nlast"))
	stdout.Flush()
	long := strings.Repeat("x", maxLogLine+5)
	stderr.Write([]byte(long + "\n"))

	ts := "2026-11-22T10:00:00.123456789Z"
	want := ts + " stdout F hello\n" +
		ts + " stderr F oops\n" +
		ts + " stdout F world\n" +
		ts + " stdout F last\n" +
		ts + " stderr P " + long[:maxLogLine] + "\n" +
		ts + " stderr F xxxxx\n"
	if got := out.String(); got != want {
		t.Errorf("log:\n%q\nwant\n%q", got, want)
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
