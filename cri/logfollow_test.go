package cri

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var logT0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

// logRecords is a CRI log: line i written at logT0 + i seconds; "two" is
// split into two partial records, and "err" is on stderr.
func logRecords() string {
	at := func(i int) string { return logT0.Add(time.Duration(i) * time.Second).Format(time.RFC3339Nano) }
	return at(0) + " stdout F one\n" +
		at(1) + " stdout P tw\n" +
		at(1) + " stdout F o\n" +
		at(2) + " stderr F err\n" +
		at(3) + " stdout F four\n"
}

func TestReadLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	if err := os.WriteFile(path, []byte(logRecords()), 0o644); err != nil {
		t.Fatal(err)
	}
	stamp := func(i int) string { return logT0.Add(time.Duration(i)*time.Second).Format(rfc3339NanoFixed) + " " }
	tests := []struct {
		name string
		opts LogOptions
		want string
	}{
		{"all", LogOptions{Tail: -1}, "one\ntwo\nerr\nfour\n"},
		{"tail 2", LogOptions{Tail: 2}, "err\nfour\n"},
		{"tail joins partial records", LogOptions{Tail: 3}, "two\nerr\nfour\n"},
		{"tail more than there is", LogOptions{Tail: 10}, "one\ntwo\nerr\nfour\n"},
		{"tail 0", LogOptions{Tail: 0}, ""},
		{"since", LogOptions{Tail: -1, Since: logT0.Add(2 * time.Second)}, "err\nfour\n"},
		{"timestamps once per line", LogOptions{Tail: 2, Timestamps: true}, stamp(2) + "err\n" + stamp(3) + "four\n"},
		{"partial line stamped by its first record", LogOptions{Tail: 3, Timestamps: true, LimitBytes: int64(len(stamp(1)) + 4)}, stamp(1) + "two\n"},
		{"limit bytes", LogOptions{Tail: -1, LimitBytes: 6}, "one\ntw"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := ReadLog(context.Background(), path, tt.opts, &out); err != nil {
				t.Fatal(err)
			}
			if out.String() != tt.want {
				t.Errorf("got %q, want %q", out.String(), tt.want)
			}
		})
	}
	var out bytes.Buffer
	if err := ReadLog(context.Background(), path+".absent", LogOptions{Tail: -1}, &out); err != nil || out.Len() != 0 {
		t.Errorf("absent log: %q, %v; want nothing", out.String(), err)
	}
}

// A followed log is read as it is written, across a rotation, until the
// container stops.
func TestReadLogFollows(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	log, err := openLog(path, LogRotation{})
	if err != nil {
		t.Fatal(err)
	}
	w := log.stream("stdout")
	w.Write([]byte("before\n"))
	var running atomic.Bool
	running.Store(true)
	out := &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- ReadLog(context.Background(), path, LogOptions{Tail: -1, Follow: true, Running: running.Load}, out)
	}()
	waitFor(t, out, "before\n")
	w.Write([]byte("par"))
	w.Write([]byte("ts\n"))
	waitFor(t, out, "before\nparts\n")
	// Rotate as the writer does: rename, then a new file.
	log.Close()
	if err := os.Rename(path, path+".20261122-100000"); err != nil {
		t.Fatal(err)
	}
	if log, err = openLog(path, LogRotation{}); err != nil {
		t.Fatal(err)
	}
	log.stream("stdout").Write([]byte("after\n"))
	waitFor(t, out, "before\nparts\nafter\n")
	running.Store(false)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("follow did not end when the container stopped")
	}
	log.Close()
}

// With --timestamps every line starts with a time of one width, as the
// kubelet prints it, whatever the file's records hold.
func TestReadLogTimestampsFixedWidth(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	log := "2026-11-22T10:00:00.1Z stdout F a\n2026-11-22T10:00:00.12Z stdout F b\n"
	if err := os.WriteFile(path, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := ReadLog(context.Background(), path, LogOptions{Tail: -1, Timestamps: true}, &out); err != nil {
		t.Fatal(err)
	}
	if want := "2026-11-22T10:00:00.100000000Z a\n2026-11-22T10:00:00.120000000Z b\n"; out.String() != want {
		t.Errorf("got %q, want %q", out.String(), want)
	}
}

// The tail of a log longer than a read block is found the same as by
// reading the whole log: lines of partial records, full records with text
// that looks like a record header, and a first block cut mid-record.
func TestReadLogTailAcrossBlocks(t *testing.T) {
	var log strings.Builder
	var lines []string
	for i := range 3000 {
		ts := logT0.Add(time.Duration(i) * time.Millisecond).Format(time.RFC3339Nano)
		switch i % 3 {
		case 0:
			fmt.Fprintf(&log, "%s stdout F line %d x stdout F y\n", ts, i)
			lines = append(lines, fmt.Sprintf("line %d x stdout F y\n", i))
		case 1:
			fmt.Fprintf(&log, "%s stdout P %s\n%s stdout F %d\n", ts, strings.Repeat("p", 100), ts, i)
			lines = append(lines, strings.Repeat("p", 100)+fmt.Sprint(i)+"\n")
		case 2:
			fmt.Fprintf(&log, "%s stderr F %d\n", ts, i)
			lines = append(lines, fmt.Sprintf("%d\n", i))
		}
	}
	path := filepath.Join(t.TempDir(), "0.log")
	if err := os.WriteFile(path, []byte(log.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{1, 2, 3, 500, 1234, 2999, 3000, 5000} {
		var out bytes.Buffer
		if err := ReadLog(context.Background(), path, LogOptions{Tail: int64(n)}, &out); err != nil {
			t.Fatal(err)
		}
		if want := strings.Join(lines[max(0, len(lines)-n):], ""); out.String() != want {
			t.Errorf("tail %d: %d bytes, want %d", n, out.Len(), len(want))
		}
	}
}

// A follower at the end of the file still reads a file that replaced it
// (a rotation) when it next finds the container stopped.
func TestReadLogFollowReadsPastARotationAtTheStop(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	record := func(text string) []byte { return []byte(logT0.Format(time.RFC3339Nano) + " stdout F " + text + "\n") }
	if err := os.WriteFile(path, record("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := &syncBuffer{}
	stopped := false
	// The container writes a last line into a new file and stops, all
	// between two looks of the follower: the next look sees it stopped.
	running := func() bool {
		if !stopped && out.String() == "old\n" {
			stopped = true
			if err := os.Rename(path, path+".20261122-100000"); err != nil {
				t.Error(err)
			}
			if err := os.WriteFile(path, record("new"), 0o644); err != nil {
				t.Error(err)
			}
		}
		return !stopped
	}
	if err := ReadLog(context.Background(), path, LogOptions{Tail: -1, Follow: true, Running: running}, out); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != "old\nnew\n" {
		t.Errorf("followed %q, want the new file's line too", got)
	}
}

func TestReadLogFollowEndsWithContext(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ReadLog(ctx, path, LogOptions{Tail: -1, Follow: true}, &syncBuffer{}) }()
	time.Sleep(2 * followPoll)
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("follow did not end with its context")
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func waitFor(t *testing.T, out *syncBuffer, want string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for out.String() != want {
		if time.Now().After(deadline) {
			t.Fatalf("read %q, want %q", out.String(), want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
