package cri

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

func TestExecProcessSpec(t *testing.T) {
	container := func() *specs.Spec {
		return &specs.Spec{Process: &specs.Process{
			Args:            []string{"sleep", "3600"},
			Env:             []string{"PATH=/bin", "FOO=bar"},
			Cwd:             "/work",
			User:            specs.User{UID: 65534, GID: 65534, AdditionalGids: []uint32{10}},
			Capabilities:    &specs.LinuxCapabilities{Bounding: []string{"CAP_CHOWN"}},
			ApparmorProfile: "skiff-default",
			NoNewPrivileges: true,
			ConsoleSize:     &specs.Box{Height: 1, Width: 1},
		}}
	}
	tests := []struct {
		name    string
		spec    *specs.Spec
		tty     bool
		wantEnv []string
	}{
		{name: "no terminal", spec: container(), wantEnv: []string{"PATH=/bin", "FOO=bar"}},
		{name: "terminal adds TERM", spec: container(), tty: true, wantEnv: []string{"PATH=/bin", "FOO=bar", "TERM=xterm"}},
		{name: "terminal keeps the container's TERM", tty: true,
			spec:    func() *specs.Spec { s := container(); s.Process.Env = append(s.Process.Env, "TERM=vt100"); return s }(),
			wantEnv: []string{"PATH=/bin", "FOO=bar", "TERM=vt100"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := *tt.spec.Process
			before.Env = slices.Clone(before.Env)
			p, err := execProcessSpec(tt.spec, []string{"sh", "-c", "id"}, tt.tty)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(p.Args, []string{"sh", "-c", "id"}) || p.Terminal != tt.tty || p.ConsoleSize != nil {
				t.Errorf("args %q terminal %v console %v", p.Args, p.Terminal, p.ConsoleSize)
			}
			if !slices.Equal(p.Env, tt.wantEnv) {
				t.Errorf("env %q, want %q", p.Env, tt.wantEnv)
			}
			if p.Cwd != "/work" || p.User.UID != 65534 || !slices.Equal(p.User.AdditionalGids, []uint32{10}) ||
				p.Capabilities != tt.spec.Process.Capabilities || p.ApparmorProfile != "skiff-default" || !p.NoNewPrivileges {
				t.Errorf("the container's identity is not kept: %+v", p)
			}
			if !slices.Equal(tt.spec.Process.Args, before.Args) || !slices.Equal(tt.spec.Process.Env, before.Env) || tt.spec.Process.Terminal {
				t.Errorf("the container's spec was modified: %+v", tt.spec.Process)
			}
		})
	}
	if _, err := execProcessSpec(&specs.Spec{}, []string{"id"}, false); !errdefs.IsFailedPrecondition(err) {
		t.Errorf("spec without process: %v, want a failed precondition", err)
	}
}

func TestCappedBuffer(t *testing.T) {
	tests := []struct {
		name   string
		max    int
		writes []string
		want   string
	}{
		{name: "under the cap", max: 10, writes: []string{"abc", "def"}, want: "abcdef"},
		{name: "exactly the cap", max: 6, writes: []string{"abc", "def"}, want: "abcdef"},
		{name: "cut within a write", max: 4, writes: []string{"abc", "def"}, want: "abcd"},
		{name: "dropped after the cap", max: 3, writes: []string{"abc", "def", "ghi"}, want: "abc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := &cappedBuffer{max: tt.max}
			for _, w := range tt.writes {
				if n, err := b.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write(%q) = %d, %v; want the whole write accepted", w, n, err)
				}
			}
			if got := string(b.Bytes()); got != tt.want {
				t.Errorf("kept %q, want %q", got, tt.want)
			}
		})
	}
}

func TestWatchEOF(t *testing.T) {
	if r, closed := watchEOF(nil); r != nil || closed != nil {
		t.Fatalf("nil stdin: got %v, %v; want nil reader and channel", r, closed)
	}
	tests := []struct {
		name string
		in   io.Reader
	}{
		{name: "end of input", in: strings.NewReader("hello")},
		{name: "read error", in: io.MultiReader(strings.NewReader("hello"), errReader{})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, closed := watchEOF(tt.in)
			buf := make([]byte, 5)
			if n, err := r.Read(buf); n != 5 || err != nil {
				t.Fatalf("first read: %d, %v", n, err)
			}
			select {
			case <-closed:
				t.Fatal("closed before the input ended")
			default:
			}
			var out bytes.Buffer
			_, _ = io.Copy(&out, r) // reads to the end; a second end must not panic
			_, _ = r.Read(buf)
			select {
			case <-closed:
			default:
				t.Fatal("not closed after the input ended")
			}
		})
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("broken") }

func TestNewExecID(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := newExecID()
		if len(id) > 32 || seen[id] {
			t.Fatalf("exec ID %q: too long or repeated", id)
		}
		seen[id] = true
	}
}
