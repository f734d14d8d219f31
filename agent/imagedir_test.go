package agent

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	testclock "k8s.io/utils/clock/testing"
)

type fakeImporter struct{ imported []string }

func (f *fakeImporter) ImportFile(_ context.Context, path string) ([]string, error) {
	f.imported = append(f.imported, filepath.Base(path))
	if filepath.Base(path) == "bad.tar.gz" {
		return nil, errors.New("gzip: invalid header")
	}
	return []string{"x"}, nil
}

// TestImageDir: what is there at start is imported; a new tarball once it
// has not changed for the settle time; a changed one again; a bad one and
// other files once or never.
func TestImageDir(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	clk := testclock.NewFakeClock(now)
	put := func(name, data string, age time.Duration) {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, clk.Now().Add(-age), clk.Now().Add(-age)); err != nil {
			t.Fatal(err)
		}
	}
	put("a.tar", "a", time.Minute)
	put("notes.txt", "n", time.Minute)
	f := &fakeImporter{}
	d := &imageDir{dir: dir, rt: f, clock: clk, seen: map[string]fileStamp{}}
	d.scan(context.Background(), 0)
	put("b.tar.zst", "b", 0) // being written
	put("bad.tar.gz", "!", time.Minute)
	d.scan(context.Background(), imageSettle)
	clk.Step(imageScanPeriod)
	d.scan(context.Background(), imageSettle)
	d.scan(context.Background(), imageSettle)
	put("a.tar", "a, again", 0)
	clk.Step(imageScanPeriod)
	d.scan(context.Background(), imageSettle)
	if want := []string{"a.tar", "bad.tar.gz", "b.tar.zst", "a.tar"}; !slices.Equal(f.imported, want) {
		t.Errorf("imported %v, want %v", f.imported, want)
	}
}
