package version

import (
	"runtime"
	"testing"
)

func TestCurrent(t *testing.T) {
	GitCommit, BuildDate = "abc123", "2026-11-26T00:00:00Z"
	defer func() { GitCommit, BuildDate = "", "" }()
	b := Current()
	if b.GitCommit != "abc123" || b.BuildDate != "2026-11-26T00:00:00Z" || b.GoVersion != runtime.Version() ||
		b.Platform != runtime.GOOS+"/"+runtime.GOARCH || b.Version != Version {
		t.Errorf("Current() = %+v", b)
	}
	if got := GitVersion(); got != Kubernetes+"-skiff."+trimV(Version) {
		t.Errorf("GitVersion() = %q", got)
	}
}
