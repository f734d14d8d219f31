// Package version says which skiff this is and which Kubernetes API it
// speaks.
package version

import (
	"cmp"
	"runtime"
	"runtime/debug"
)

// Version is skiff's release, set at build time with
// -ldflags "-X github.com/skiff-lab/skiff/version.Version=...".
var Version = "v0.1.0-dev"

// Kubernetes is the Kubernetes release whose API skiff serves.
const (
	KubernetesMajor = "1"
	KubernetesMinor = "37"
	Kubernetes      = "v1.37.0"
)

// GitVersion is what /version reports: the Kubernetes release, tagged as skiff's.
func GitVersion() string { return Kubernetes + "-skiff." + trimV(Version) }

func trimV(s string) string {
	if len(s) > 0 && s[0] == 'v' {
		return s[1:]
	}
	return s
}

// GitCommit and BuildDate say where and when this binary was built; set
// at build time with -ldflags "-X ...=...", or else read from the VCS
// stamp Go puts in binaries built in a git checkout.
var (
	GitCommit = ""
	BuildDate = ""
)

// Build describes this binary.
type Build struct {
	Version, GitCommit, BuildDate, GoVersion, Platform string
}

// Current is this binary's Build.
func Current() Build {
	b := Build{Version: Version, GitCommit: GitCommit, BuildDate: BuildDate,
		GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	dirty := false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			b.GitCommit = cmp.Or(b.GitCommit, s.Value)
		case "vcs.time":
			b.BuildDate = cmp.Or(b.BuildDate, s.Value)
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if dirty && GitCommit == "" && b.GitCommit != "" {
		b.GitCommit += "-dirty"
	}
	return b
}
