package agent

import (
	"testing"

	v1 "k8s.io/api/core/v1"

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
			v1.PodPending, "i:ContainerCreating a:PodInitializing", false},
		{"init running", testPod(always, []string{"i"}, "a"), []cri.Container{sandbox("s", run), ctr("i", 0, "s", run, 0)}, nil,
			v1.PodPending, "i:running a:PodInitializing", false},
		{"init done, main creating", testPod(always, []string{"i"}, "a"), []cri.Container{sandbox("s", run), ctr("i", 0, "s", exited, 0)}, nil,
			v1.PodPending, "i:Completed a:ContainerCreating", false},
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
