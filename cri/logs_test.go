package cri

import (
	"bytes"
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
