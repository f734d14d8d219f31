package stats

import (
	"errors"
	"testing"
)

func TestDetect(t *testing.T) {
	for _, v := range versions {
		t.Run(v.name, func(t *testing.T) {
			fs := t.TempDir()
			v.mount(t, fs)
			if got, want := detect(fs), v.hierarchy(fs); got != want {
				t.Errorf("detect = %#v, want %#v", got, want)
			}
		})
	}
}

func TestReadCgroup(t *testing.T) {
	const path = "/skiff/podu1/c1"
	cases := []struct {
		name string
		in   counters
		want usage
	}{
		{"limited",
			counters{cpuNs: 1_234_567_000, memory: 50 << 20, inactiveFile: 8 << 20, rss: 30 << 20, limit: 64 << 20},
			usage{cpu: 1_234_567_000, memory: 50 << 20, inactiveFile: 8 << 20, rss: 30 << 20, limit: 64 << 20}},
		{"unlimited",
			counters{cpuNs: 5000, memory: 4096, inactiveFile: 1024, rss: 2048},
			usage{cpu: 5000, memory: 4096, inactiveFile: 1024, rss: 2048}},
	}
	for _, v := range versions {
		for _, tc := range cases {
			t.Run(v.name+"/"+tc.name, func(t *testing.T) {
				fs := t.TempDir()
				v.mount(t, fs)
				v.write(t, fs, path, tc.in)
				got, err := detect(fs).read(path)
				if err != nil {
					t.Fatal(err)
				}
				if got != tc.want {
					t.Errorf("read = %+v, want %+v", got, tc.want)
				}
			})
		}
	}
}

func TestReadCgroupErrors(t *testing.T) {
	const path = "/skiff/podu1/c1"
	for _, v := range versions {
		t.Run(v.name+"/gone", func(t *testing.T) {
			fs := t.TempDir()
			v.mount(t, fs)
			v.write(t, fs, path, counters{cpuNs: 1000})
			v.remove(t, fs, path)
			if _, err := detect(fs).read(path); !gone(err) {
				t.Errorf("read of a removed cgroup: err %v, want one that means gone", err)
			}
		})
		t.Run(v.name+"/malformed", func(t *testing.T) {
			fs := t.TempDir()
			v.mount(t, fs)
			v.write(t, fs, path, counters{cpuNs: 1000})
			writeFile(t, v.usageFile(fs, path), "lots\n")
			_, err := detect(fs).read(path)
			if err == nil || gone(err) {
				t.Errorf("read of a malformed usage file: err %v, want a parse error", err)
			}
		})
	}
}

func TestWorkingSet(t *testing.T) {
	cases := []struct {
		memory, inactiveFile, want uint64
	}{
		{memory: 100, inactiveFile: 30, want: 70},
		{memory: 100, inactiveFile: 0, want: 100},
		{memory: 100, inactiveFile: 100, want: 0},
		{memory: 100, inactiveFile: 130, want: 0}, // counters read at different moments
	}
	for _, tc := range cases {
		u := usage{memory: tc.memory, inactiveFile: tc.inactiveFile}
		if got := u.workingSet(); got != tc.want {
			t.Errorf("workingSet of %d - %d = %d, want %d", tc.memory, tc.inactiveFile, got, tc.want)
		}
	}
}

func TestGone(t *testing.T) {
	if gone(nil) || gone(errors.New("parse memory.current: invalid syntax")) {
		t.Error("gone is true for an error that does not mean a missing cgroup")
	}
}
