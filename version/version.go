// Package version says which skiff this is and which Kubernetes API it
// speaks.
package version

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
