package agent

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/skiff-lab/skiff/cri"
)

func TestComputeStatus(t *testing.T) {
	always, never := v1.RestartPolicyAlways, v1.RestartPolicyNever
	run, exited := cri.StateRunning, cri.StateExited
	tests := []struct {
		name   string
		pod    *v1.Pod
		have   []cri.Container
		waits  map[string]waiting
		phase  v1.PodPhase
		states string // each container's state, init containers first
		ready  bool
	}{
		{"nothing yet", testPod(always, []string{"i"}, "a"), nil, nil,
			v1.PodPending, "i:PodInitializing a:PodInitializing", false},
		{"init running", testPod(always, []string{"i"}, "a"), []cri.Container{sandbox("s", run), ctr("i", 0, "s", run, 0)}, nil,
			v1.PodPending, "i:running a:PodInitializing", false},
		{"init done, main creating", testPod(always, []string{"i"}, "a"), []cri.Container{sandbox("s", run), ctr("i", 0, "s", exited, 0)}, nil,
			v1.PodPending, "i:Completed a:PodInitializing", false},
		{"all running", testPod(always, []string{"i"}, "a", "b"),
			[]cri.Container{sandbox("s", run), ctr("i", 0, "s", exited, 0), ctr("a", 0, "s", run, 0), ctr("b", 0, "s", run, 0)}, nil,
			v1.PodRunning, "i:Completed a:running b:running", true},
		{"image pull failing", testPod(always, nil, "a"), []cri.Container{sandbox("s", run)},
			map[string]waiting{"a": {Reason: "ErrImagePull", Message: "not found"}},
			v1.PodPending, "a:ErrImagePull", false},
		{"crash looping", testPod(always, nil, "a"), []cri.Container{sandbox("s", run), ctr("a", 2, "s", exited, 1)},
			map[string]waiting{"a": {Reason: "CrashLoopBackOff"}},
			v1.PodRunning, "a:CrashLoopBackOff", false},
		{"succeeded", testPod(never, nil, "a"), []cri.Container{ctr("a", 0, "s", exited, 0)}, nil,
			v1.PodSucceeded, "a:Completed", false},
		{"failed", testPod(never, nil, "a", "b"), []cri.Container{ctr("a", 0, "s", exited, 0), ctr("b", 0, "s", exited, 3)}, nil,
			v1.PodFailed, "a:Completed b:Error", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for i := range tt.have {
				if tt.have[i].State == exited {
					tt.have[i].Reason = map[bool]string{true: "Completed", false: "Error"}[tt.have[i].ExitCode == 0]
				}
			}
			s := computeStatus(statusInput{pod: tt.pod, state: groupState(tt.have), waits: tt.waits, now: t0, started: t0})
			if s.Phase != tt.phase {
				t.Errorf("phase %s, want %s", s.Phase, tt.phase)
			}
			if got := stateSummary(s); got != tt.states {
				t.Errorf("states %q, want %q", got, tt.states)
			}
			if got := conditionTrue(s, v1.PodReady); got != tt.ready {
				t.Errorf("Ready %v, want %v", got, tt.ready)
			}
		})
	}
}

// TestConditionMessages: the Initialized and Ready conditions name the
// containers they wait for, as the kubelet words it.
func TestConditionMessages(t *testing.T) {
	pod := testPod(v1.RestartPolicyAlways, []string{"i1", "i2"}, "a")
	s := computeStatus(statusInput{pod: pod, state: groupState([]cri.Container{sandbox("s", cri.StateRunning),
		ctr("i1", 0, "s", cri.StateRunning, 0)}), now: t0, started: t0})
	want := map[v1.PodConditionType]string{
		v1.PodInitialized: "containers with incomplete status: [i1 i2]",
		v1.PodReady:       "containers with unready status: [a]",
	}
	for _, c := range s.Conditions {
		if m, ok := want[c.Type]; ok && c.Message != m {
			t.Errorf("%s: message %q, want %q", c.Type, c.Message, m)
		}
	}
}

// TestObservedGeneration: the status answers to the pod's generation, and
// so do the conditions the agent sets (not the scheduler's).
func TestObservedGeneration(t *testing.T) {
	pod := testPod(v1.RestartPolicyAlways, nil, "a")
	pod.Generation = 3
	pod.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionTrue}}
	s := computeStatus(statusInput{pod: pod, state: groupState([]cri.Container{sandbox("s", cri.StateRunning)}), now: t0, started: t0})
	if s.ObservedGeneration != 3 {
		t.Errorf("observedGeneration %d, want 3", s.ObservedGeneration)
	}
	for _, c := range s.Conditions {
		if want := map[bool]int64{true: 0, false: 3}[c.Type == v1.PodScheduled]; c.ObservedGeneration != want {
			t.Errorf("condition %s observedGeneration %d, want %d", c.Type, c.ObservedGeneration, want)
		}
	}
}

// TestInitContainerReadyOnceDone: as the kubelet reports them, an init
// container is ready once it exited 0, not while it runs nor after it
// failed.
func TestInitContainerReadyOnceDone(t *testing.T) {
	run, exited := cri.StateRunning, cri.StateExited
	for _, tc := range []struct {
		name string
		init cri.Container
		want bool
	}{
		{"running", ctr("i", 0, "s", run, 0), false},
		{"exited 0", ctr("i", 0, "s", exited, 0), true},
		{"exited 1", ctr("i", 0, "s", exited, 1), false},
	} {
		have := []cri.Container{sandbox("s", run), tc.init}
		s := computeStatus(statusInput{pod: testPod(v1.RestartPolicyAlways, []string{"i"}, "a"), state: groupState(have), now: t0, started: t0})
		if got := s.InitContainerStatuses[0].Ready; got != tc.want {
			t.Errorf("%s: Ready %v, want %v", tc.name, got, tc.want)
		}
	}
}

func stateSummary(s v1.PodStatus) string {
	out := ""
	for _, cs := range append(append([]v1.ContainerStatus{}, s.InitContainerStatuses...), s.ContainerStatuses...) {
		if out != "" {
			out += " "
		}
		switch {
		case cs.State.Running != nil:
			out += cs.Name + ":running"
		case cs.State.Terminated != nil:
			out += cs.Name + ":" + cs.State.Terminated.Reason
		case cs.State.Waiting != nil:
			out += cs.Name + ":" + cs.State.Waiting.Reason
		}
	}
	return out
}

func conditionTrue(s v1.PodStatus, t v1.PodConditionType) bool {
	for _, c := range s.Conditions {
		if c.Type == t {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// fakeHealth is what probes say: absent names have no probe.
type fakeHealth struct{ ready, started map[string]bool }

func (f fakeHealth) Ready(_ types.UID, c string) (bool, bool) {
	r, ok := f.ready[c]
	return r, ok
}

func (f fakeHealth) Started(_ types.UID, c string) (bool, bool) {
	s, ok := f.started[c]
	return s, ok
}

func TestComputeStatusProbesMessagesDeadline(t *testing.T) {
	run := cri.StateRunning
	running := []cri.Container{sandbox("s", run), ctr("a", 0, "s", run, 0)}
	sidecars := testPod(v1.RestartPolicyAlways, []string{"side"}, "a")
	sidecars.Spec.InitContainers[0].RestartPolicy = ptr.To(v1.ContainerRestartPolicyAlways)
	failed := ctr("a", 0, "s", cri.StateExited, 1)
	failed.Reason = "Error"
	tests := []struct {
		name  string
		in    statusInput
		ready bool
		check func(v1.PodStatus) string
	}{
		{"readiness probe failing", statusInput{pod: testPod(v1.RestartPolicyAlways, nil, "a"), state: groupState(running),
			health: fakeHealth{ready: map[string]bool{"a": false}}}, false, nil},
		{"readiness probe passing", statusInput{pod: testPod(v1.RestartPolicyAlways, nil, "a"), state: groupState(running),
			health: fakeHealth{ready: map[string]bool{"a": true}}}, true, nil},
		{"not started yet: not ready either", statusInput{pod: testPod(v1.RestartPolicyAlways, nil, "a"), state: groupState(running),
			health: fakeHealth{ready: map[string]bool{"a": true}, started: map[string]bool{"a": false}}}, false,
			func(s v1.PodStatus) string {
				if *s.ContainerStatuses[0].Started {
					return "started"
				}
				return ""
			}},
		{"unready sidecar holds the pod", statusInput{pod: sidecars, state: groupState(append(running, ctr("side", 0, "s", run, 0))),
			health: fakeHealth{ready: map[string]bool{"side": false}}}, false, nil},
		{"termination message", statusInput{pod: testPod(v1.RestartPolicyNever, nil, "a"), state: groupState([]cri.Container{failed}),
			messages: map[string]string{failed.ID: "bye"}}, false,
			func(s v1.PodStatus) string {
				if m := s.ContainerStatuses[0].State.Terminated.Message; m != "bye" {
					return "message " + m
				}
				return ""
			}},
		{"deadline exceeded", statusInput{pod: testPod(v1.RestartPolicyAlways, nil, "a"), state: groupState(running), failure: deadlineFailure()}, false,
			func(s v1.PodStatus) string {
				if s.Phase != v1.PodFailed || s.Reason != "DeadlineExceeded" {
					return string(s.Phase) + "/" + s.Reason
				}
				return ""
			}},
		{"evicted", statusInput{pod: testPod(v1.RestartPolicyAlways, nil, "a"), state: groupState(running),
			failure: evictionFailure("too big")}, false,
			func(s v1.PodStatus) string {
				if s.Phase != v1.PodFailed || s.Reason != "Evicted" || s.Message != "too big" {
					return string(s.Phase) + "/" + s.Reason + "/" + s.Message
				}
				for _, c := range s.Conditions {
					if c.Type == v1.DisruptionTarget && c.Status == v1.ConditionTrue && c.Reason == "TerminationByKubelet" && c.Message == "too big" {
						return ""
					}
				}
				return fmt.Sprintf("no DisruptionTarget condition in %+v", s.Conditions)
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.in.now, tt.in.started = t0, t0
			s := computeStatus(tt.in)
			if got := conditionTrue(s, v1.PodReady); got != tt.ready {
				t.Errorf("Ready %v, want %v", got, tt.ready)
			}
			if tt.check != nil {
				if problem := tt.check(s); problem != "" {
					t.Error(problem)
				}
			}
		})
	}
}
