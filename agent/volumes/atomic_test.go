package volumes

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
)

// payloadOf builds a payload from path, content pairs, each file 0644.
func payloadOf(kv ...string) map[string]File {
	p := map[string]File{}
	for i := 0; i < len(kv); i += 2 {
		p[kv[i]] = File{Data: []byte(kv[i+1]), Mode: 0o644}
	}
	return p
}

// visible reads the volume the way a container does: through the
// top-level names, following symlinks, keyed by slash path.
func visible(t *testing.T, dir string) map[string]string {
	t.Helper()
	got := map[string]string{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "..") {
			continue
		}
		root, err := filepath.EvalSymlinks(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatalf("visible name %s: %v", e.Name(), err)
		}
		err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(root, p)
			data, err := os.ReadFile(p)
			got[path.Join(e.Name(), filepath.ToSlash(rel))] = string(data)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return got
}

// entries lists the names in dir, sorted.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	list, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range list {
		names = append(names, e.Name())
	}
	return names
}

// version is the hidden directory ..data points at.
func version(t *testing.T, dir string) string {
	t.Helper()
	v, err := os.Readlink(filepath.Join(dir, dataLink))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func mustWrite(t *testing.T, dir string, p map[string]File, opts ...WriteOption) bool {
	t.Helper()
	changed, err := WriteAtomic(dir, p, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return changed
}

func TestWriteAtomicLayout(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "vol") // created by WriteAtomic
	if !mustWrite(t, dir, payloadOf("a", "1", "sub/deep/b", "2")) {
		t.Fatal("first write reported no change")
	}
	v := version(t, dir)
	if !regexp.MustCompile(`^\.\.\d{4}_\d\d_\d\d_\d\d_\d\d_\d\d\.\d+$`).MatchString(v) {
		t.Errorf("..data -> %q, want ..<timestamp>.<n>", v)
	}
	for name, want := range map[string]string{"a": "..data/a", "sub": "..data/sub"} {
		if got, err := os.Readlink(filepath.Join(dir, name)); err != nil || got != want {
			t.Errorf("%s -> %q (%v), want %q", name, got, err, want)
		}
	}
	if got, want := entries(t, dir), []string{v, dataLink, "a", "sub"}; !slices.Equal(got, want) {
		t.Errorf("entries %v, want %v", got, want)
	}
	info, err := os.Stat(filepath.Join(dir, v))
	if err != nil || info.Mode().Perm() != 0o755 {
		t.Errorf("version dir mode %v (%v), want 0755 so that any container user can read it", info.Mode(), err)
	}
}

func TestWriteAtomicSequence(t *testing.T) {
	dir := t.TempDir()
	steps := []struct {
		name        string
		payload     map[string]File
		wantChanged bool
	}{
		{"first write", payloadOf("a", "1", "sub/b", "2", "sub/deep/c", "3"), true},
		{"unchanged", payloadOf("a", "1", "sub/b", "2", "sub/deep/c", "3"), false},
		{"content changes", payloadOf("a", "1x", "sub/b", "2", "sub/deep/c", "3"), true},
		{"mode changes", map[string]File{"a": {Data: []byte("1x"), Mode: 0o600}, "sub/b": {Data: []byte("2"), Mode: 0o644}, "sub/deep/c": {Data: []byte("3"), Mode: 0o644}}, true},
		{"nested key removed", payloadOf("a", "1x", "sub/b", "2"), true},
		{"top key removed", payloadOf("a", "1x"), true},
		{"key added", payloadOf("a", "1x", "new", "n"), true},
		{"key renamed with same content", payloadOf("a", "1x", "renamed", "n"), true},
		{"all keys removed", payloadOf(), true},
		{"still empty", payloadOf(), false},
	}
	prev := ""
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			if changed := mustWrite(t, dir, st.payload); changed != st.wantChanged {
				t.Errorf("changed = %v, want %v", changed, st.wantChanged)
			}
			want := map[string]string{}
			tops := []string{}
			for p, f := range st.payload {
				want[p] = string(f.Data)
				top, _, _ := strings.Cut(p, "/")
				tops = append(tops, top)
				info, err := os.Stat(filepath.Join(dir, p))
				if err != nil || info.Mode().Perm() != f.Mode {
					t.Errorf("%s mode %v (%v), want %v", p, info.Mode(), err, f.Mode)
				}
			}
			if got := visible(t, dir); !maps.Equal(got, want) {
				t.Errorf("volume holds %v, want %v", got, want)
			}
			v := version(t, dir)
			if (v != prev) != st.wantChanged {
				t.Errorf("version %s after %s: rewritten = %v, want %v", v, prev, v != prev, st.wantChanged)
			}
			prev = v
			wantEntries := append([]string{v, dataLink}, tops...)
			slices.Sort(wantEntries)
			if got := entries(t, dir); !slices.Equal(got, slices.Compact(wantEntries)) {
				t.Errorf("entries %v, want %v (old versions and stale links removed)", got, wantEntries)
			}
		})
	}
}

func TestWriteAtomicModeIgnoresUmask(t *testing.T) {
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	dir := t.TempDir()
	mustWrite(t, dir, map[string]File{"open": {Data: []byte("x"), Mode: 0o666}, "d/f": {Data: []byte("y"), Mode: 0o644}})
	for p, want := range map[string]fs.FileMode{"open": 0o666, "d/f": 0o644, "d": 0o755} {
		info, err := os.Stat(filepath.Join(dir, p))
		if err != nil || info.Mode().Perm() != want {
			t.Errorf("%s mode %v (%v), want %v", p, info.Mode().Perm(), err, want)
		}
	}
}

func TestWriteAtomicRepairs(t *testing.T) {
	payload := payloadOf("a", "1", "b", "2")
	tests := []struct {
		name        string
		damage      func(t *testing.T, dir string)
		next        map[string]File // written after the damage; nil: the same payload
		wantChanged bool
		wantExtra   map[string]string // foreign entries and what reads through them
	}{
		{"missing link", func(t *testing.T, dir string) {
			mustRemove(t, filepath.Join(dir, "a"))
		}, nil, false, nil},
		{"link pointing elsewhere", func(t *testing.T, dir string) {
			mustRemove(t, filepath.Join(dir, "a"))
			mustSymlink(t, "..data/b", filepath.Join(dir, "a"))
		}, nil, false, nil},
		{"stale link of a dropped key", func(t *testing.T, dir string) {
			mustSymlink(t, "..data/gone", filepath.Join(dir, "gone"))
		}, nil, false, nil},
		{"leftovers of an interrupted write", func(t *testing.T, dir string) {
			mustMkdir(t, filepath.Join(dir, "..2020_01_01_00_00_00.1"))
			mustSymlink(t, "..2020_01_01_00_00_00.1", filepath.Join(dir, dataLinkTmp))
		}, nil, false, nil},
		{"leftover ..data_tmp before a change", func(t *testing.T, dir string) {
			mustSymlink(t, "..2020_01_01_00_00_00.1", filepath.Join(dir, dataLinkTmp))
		}, payloadOf("a", "changed", "b", "2"), true, nil},
		{"foreign entries kept", func(t *testing.T, dir string) {
			if err := os.WriteFile(filepath.Join(dir, "notes"), []byte("keep"), 0o644); err != nil {
				t.Fatal(err)
			}
			mustSymlink(t, "notes", filepath.Join(dir, "other-link"))
		}, nil, false, map[string]string{"notes": "keep", "other-link": "keep"}},
		{"current version lost", func(t *testing.T, dir string) {
			if err := os.RemoveAll(filepath.Join(dir, version(t, dir))); err != nil {
				t.Fatal(err)
			}
		}, nil, true, nil},
		{"current version tampered", func(t *testing.T, dir string) {
			if err := os.WriteFile(filepath.Join(dir, "..data", "extra"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}, nil, true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			mustWrite(t, dir, payload)
			tt.damage(t, dir)
			next := tt.next
			if next == nil {
				next = payload
			}
			if changed := mustWrite(t, dir, next); changed != tt.wantChanged {
				t.Errorf("changed = %v, want %v", changed, tt.wantChanged)
			}
			wantFiles := map[string]string{}
			for p, f := range next {
				wantFiles[p] = string(f.Data)
			}
			maps.Copy(wantFiles, tt.wantExtra)
			if got := visible(t, dir); !maps.Equal(got, wantFiles) {
				t.Errorf("volume holds %v, want %v", got, wantFiles)
			}
			want := append([]string{version(t, dir), dataLink}, slices.Collect(maps.Keys(wantFiles))...)
			slices.Sort(want)
			if got := entries(t, dir); !slices.Equal(got, want) {
				t.Errorf("entries %v, want %v", got, want)
			}
		})
	}
}

func TestWriteAtomicRefuses(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(t *testing.T, dir string)
		payload map[string]File
		want    error
	}{
		{"absolute path", nil, payloadOf("/etc/passwd", "x"), ErrInvalidPath},
		{"backstep", nil, payloadOf("a/../../x", "x"), ErrInvalidPath},
		{"reserved name", nil, payloadOf("..data", "x"), ErrInvalidPath},
		{"file in the way of a name", func(t *testing.T, dir string) {
			if err := os.WriteFile(filepath.Join(dir, "a"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}, payloadOf("a", "x"), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if tt.setup != nil {
				tt.setup(t, dir)
			}
			_, err := WriteAtomic(dir, tt.payload)
			if err == nil || tt.want != nil && !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want an error matching %v", err, tt.want)
			}
		})
	}
	t.Run("invalid payload leaves the volume as it was", func(t *testing.T) {
		dir := t.TempDir()
		mustWrite(t, dir, payloadOf("a", "1"))
		before := version(t, dir)
		if _, err := WriteAtomic(dir, payloadOf("a", "2", "../x", "x")); !errors.Is(err, ErrInvalidPath) {
			t.Fatalf("got %v, want ErrInvalidPath", err)
		}
		if version(t, dir) != before || visible(t, dir)["a"] != "1" {
			t.Error("a refused payload changed the volume")
		}
	})
}

// generationSize is the length of the filler in each generated file, large
// enough that writing one takes a while.
const generationSize = 64 << 10

// generation builds version n of a payload; each file names its generation.
func generation(n int) map[string]File {
	body := func(name string) []byte {
		return fmt.Appendf(nil, "%s %06d %s", name, n, strings.Repeat("x", generationSize))
	}
	return map[string]File{"a": {Data: body("a"), Mode: 0o644}, "sub/b": {Data: body("sub/b"), Mode: 0o644}}
}

// generationOf checks that data is a whole file of some generation for
// name and returns that generation.
func generationOf(name string, data []byte) (int, error) {
	var n int
	if _, err := fmt.Sscanf(string(data), name+" %06d ", &n); err != nil {
		return 0, fmt.Errorf("%s unreadable (%d bytes): %v", name, len(data), err)
	}
	head := len(name) + 8
	if len(data) != head+generationSize || strings.TrimRight(string(data[head:]), "x") != "" {
		return 0, fmt.Errorf("%s torn: %d bytes, want %d", name, len(data), head+generationSize)
	}
	return n, nil
}

func TestWriteAtomicReadersSeeWholeVersions(t *testing.T) {
	const writes = 200
	dir := t.TempDir()
	mustWrite(t, dir, generation(0))
	var stop atomic.Bool
	var reads, raced atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			r, err := readOnce(dir)
			if err != nil {
				t.Error(err)
				return
			}
			reads.Add(1)
			raced.Add(int64(r))
		}
	}()
	for n := 1; n <= writes; n++ {
		if _, err := WriteAtomic(dir, generation(n)); err != nil {
			t.Error(err)
			break
		}
	}
	stop.Store(true)
	wg.Wait()
	if reads.Load() == 0 {
		t.Fatal("the reader never ran")
	}
	t.Logf("%d reads raced %d writes; %d opens met a version pruned under them", reads.Load(), writes, raced.Load())
}

// readOnce reads the volume as a container would and returns how many
// opens failed because a swap pruned the version they were resolving.
//
// Every visible file must open and be whole. An open may fail with ENOENT
// only when ..data moved during it: the path walk had resolved the old
// version, which the writer removed right after the swap, as the kubelet
// does. The files of the version ..data points at must be of one
// generation.
func readOnce(dir string) (raced int, err error) {
	for _, name := range []string{"a", "sub/b"} {
		before, _ := os.Readlink(filepath.Join(dir, dataLink))
		data, err := os.ReadFile(filepath.Join(dir, name))
		if errors.Is(err, fs.ErrNotExist) {
			if after, _ := os.Readlink(filepath.Join(dir, dataLink)); after != before {
				raced++
				continue
			}
		}
		if err != nil {
			return raced, fmt.Errorf("visible file %s missing: %v", name, err)
		}
		if _, err := generationOf(name, data); err != nil {
			return raced, err
		}
	}
	return raced, sameGeneration(dir)
}

// sameGeneration reads the files of the version ..data points at and
// checks they are all of one generation.
func sameGeneration(dir string) error {
	v, err := os.Readlink(filepath.Join(dir, dataLink))
	if err != nil {
		return fmt.Errorf("..data missing: %v", err)
	}
	var gens []int
	for _, name := range []string{"a", "sub/b"} {
		data, err := os.ReadFile(filepath.Join(dir, v, name))
		if errors.Is(err, fs.ErrNotExist) {
			if now, _ := os.Readlink(filepath.Join(dir, dataLink)); now == v {
				return fmt.Errorf("current version %s lacks %s", v, name)
			}
			return nil // an older version, pruned after the swap
		}
		n, err := generationOf(name, data)
		if err != nil {
			return err
		}
		gens = append(gens, n)
	}
	if gens[0] != gens[1] {
		return fmt.Errorf("version %s mixes generations %v", v, gens)
	}
	return nil
}

func TestWriteConfigFileMode(t *testing.T) {
	gid := writeConfig{}
	WithFSGroup(7)(&gid)
	tests := []struct {
		cfg  writeConfig
		in   fs.FileMode
		want fs.FileMode
	}{
		{writeConfig{}, 0o644, 0o644},
		{writeConfig{}, 0o400, 0o400},
		{writeConfig{}, fs.ModeSetuid | 0o755, 0o755},
		{gid, 0o600, 0o640},
		{gid, 0o400, 0o440},
		{gid, 0o644, 0o644},
	}
	for _, tt := range tests {
		if got := tt.cfg.fileMode(tt.in); got != tt.want {
			t.Errorf("fsGroup %v: fileMode(%v) = %v, want %v", tt.cfg.fsGroup != nil, tt.in, got, tt.want)
		}
	}
}

func TestWriteAtomicFSGroup(t *testing.T) {
	if testing.Short() || os.Geteuid() != 0 {
		t.Skip("changing a file's group needs root")
	}
	const gid = 4321
	dir := t.TempDir()
	payload := map[string]File{"a": {Data: []byte("1"), Mode: 0o600}, "sub/b": {Data: []byte("2"), Mode: 0o644}}
	mustWrite(t, dir, payload, WithFSGroup(gid))
	tests := []struct {
		path string
		mode fs.FileMode
	}{
		{".", 0o755 | fs.ModeSetgid},
		{version(t, dir), 0o755 | fs.ModeSetgid},
		{"a", 0o640},
		{"sub", 0o755 | fs.ModeSetgid},
		{"sub/b", 0o644},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			info, err := os.Stat(filepath.Join(dir, tt.path))
			if err != nil {
				t.Fatal(err)
			}
			mode := info.Mode() & (fs.ModePerm | fs.ModeSetgid)
			if g := info.Sys().(*syscall.Stat_t).Gid; g != gid || mode != tt.mode {
				t.Errorf("group %d mode %v, want %d %v", g, mode, gid, tt.mode)
			}
		})
	}
	link, err := os.Lstat(filepath.Join(dir, "a"))
	if err != nil || link.Sys().(*syscall.Stat_t).Gid != gid {
		t.Errorf("visible link a not in group %d: %v", gid, err)
	}
	if mustWrite(t, dir, payload, WithFSGroup(gid)) {
		t.Error("same payload and fsGroup rewrote the volume")
	}
	if !mustWrite(t, dir, payload, WithFSGroup(gid+1)) {
		t.Error("another fsGroup did not rewrite the volume")
	}
}

func mustRemove(t *testing.T, p string) {
	t.Helper()
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
}

func mustSymlink(t *testing.T, target, p string) {
	t.Helper()
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
}

func mustMkdir(t *testing.T, p string) {
	t.Helper()
	if err := os.Mkdir(p, 0o755); err != nil {
		t.Fatal(err)
	}
}
