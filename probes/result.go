package probes

import (
	"time"

	v1 "k8s.io/api/core/v1"
)

// Result is what one probe run found, or what a worker publishes.
//
// A Prober returns any of the four. A Manager publishes only Unknown (a
// startup probe that has not decided yet), Success or Failure: Warning counts
// as Success, and a run that ended in Unknown without an error counts as
// Failure, as in the kubelet.
type Result int

// The results. The zero value is Unknown.
const (
	Unknown Result = iota
	Success
	// Warning is a success worth telling the user about, e.g. an HTTP
	// redirect to another host that was not followed.
	Warning
	Failure
)

func (r Result) String() string {
	switch r {
	case Success:
		return "Success"
	case Warning:
		return "Warning"
	case Failure:
		return "Failure"
	default:
		return "Unknown"
	}
}

// verdict is what a run counts as toward the thresholds.
func (r Result) verdict() Result {
	if r == Success || r == Warning {
		return Success
	}
	return Failure
}

// Kind says which of a container's probes a worker runs.
type Kind int

// The probe kinds, in the order they gate one another: liveness and
// readiness do not run before the startup probe has succeeded.
const (
	Startup Kind = iota
	Liveness
	Readiness
	numKinds
)

// String is the name kubelet uses in events ("Liveness probe failed: ...").
func (k Kind) String() string {
	switch k {
	case Startup:
		return "Startup"
	case Liveness:
		return "Liveness"
	case Readiness:
		return "Readiness"
	default:
		return "Unknown"
	}
}

// of returns the container's probe of this kind, nil if it has none.
func (k Kind) of(c *v1.Container) *v1.Probe {
	switch k {
	case Startup:
		return c.StartupProbe
	case Liveness:
		return c.LivenessProbe
	case Readiness:
		return c.ReadinessProbe
	}
	return nil
}

// initial is a worker's result for a container it has not probed yet:
// not ready, alive, startup undecided.
func (k Kind) initial() Result {
	switch k {
	case Readiness:
		return Failure
	case Liveness:
		return Success
	default:
		return Unknown
	}
}

// ProbeGracePeriod returns the terminationGracePeriodSeconds set on the
// container's liveness or startup probe. When the agent kills a container
// because that probe failed, this overrides the pod's
// spec.terminationGracePeriodSeconds; a pod deletion's own grace period still
// wins, as in the kubelet. ok is false when the probe or the field is unset,
// and always for Readiness (readiness never kills).
func ProbeGracePeriod(c *v1.Container, kind Kind) (grace time.Duration, ok bool) {
	if kind == Readiness {
		return 0, false
	}
	p := kind.of(c)
	if p == nil || p.TerminationGracePeriodSeconds == nil {
		return 0, false
	}
	return time.Duration(*p.TerminationGracePeriodSeconds) * time.Second, true
}

// The API server defaults these; the zero values are replaced here too so a
// hand-built spec behaves like a defaulted one.
const (
	defaultTimeout = time.Second
	defaultPeriod  = 10 * time.Second
)

func seconds(s int32, def time.Duration) time.Duration {
	if s <= 0 {
		return def
	}
	return time.Duration(s) * time.Second
}
