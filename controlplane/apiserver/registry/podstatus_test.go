package registry

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// Container states for the summarizePod cases.
var (
	stateRunning    = corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	statePodInitW   = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}}
	stateCrashLoop  = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
	stateCompleted  = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Completed"}}
	stateErrored    = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 1}}
	stateExitCode2  = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 2}}
	stateKilledBy9  = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Signal: 9}}
	stateInitRanOK  = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Completed", ExitCode: 0}}
	stateInitFailed = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 3}}
)

// statusPod is a pod with the given init and app container names and
// statuses.
func statusPod(phase corev1.PodPhase, inits []corev1.ContainerStatus, apps []corev1.ContainerStatus) *corev1.Pod {
	pod := &corev1.Pod{Status: corev1.PodStatus{Phase: phase, InitContainerStatuses: inits, ContainerStatuses: apps}}
	for _, st := range inits {
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, corev1.Container{Name: st.Name})
	}
	for _, st := range apps {
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: st.Name})
	}
	if len(pod.Spec.Containers) == 0 {
		pod.Spec.Containers = []corev1.Container{{Name: "app"}}
	}
	return pod
}

func ctrStatus(name string, state corev1.ContainerState, ready bool) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, State: state, Ready: ready}
}

func TestSummarizePod(t *testing.T) {
	deleting := metav1.Now()
	tests := []struct {
		name   string
		pod    *corev1.Pod
		ready  string
		reason string
	}{
		{"pending", statusPod(corev1.PodPending, nil, nil), "0/1", "Pending"},
		{"stateRunning", statusPod(corev1.PodRunning, nil, []corev1.ContainerStatus{ctrStatus("app", stateRunning, true)}), "1/1", "Running"},
		{"stateRunning, one of two ready", statusPod(corev1.PodRunning, nil,
			[]corev1.ContainerStatus{ctrStatus("a", stateRunning, true), ctrStatus("b", stateRunning, false)}), "1/2", "Running"},
		{"first of two init containers stateRunning", statusPod(corev1.PodPending,
			[]corev1.ContainerStatus{ctrStatus("i1", stateRunning, false), ctrStatus("i2", statePodInitW, false)},
			[]corev1.ContainerStatus{ctrStatus("app", statePodInitW, false)}), "0/1", "Init:0/2"},
		{"second init container stateRunning", statusPod(corev1.PodPending,
			[]corev1.ContainerStatus{ctrStatus("i1", stateInitRanOK, false), ctrStatus("i2", stateRunning, false)},
			[]corev1.ContainerStatus{ctrStatus("app", statePodInitW, false)}), "0/1", "Init:1/2"},
		{"init container crash-looping", statusPod(corev1.PodPending,
			[]corev1.ContainerStatus{ctrStatus("i1", stateCrashLoop, false)}, nil), "0/1", "Init:CrashLoopBackOff"},
		{"init container failed with reason", statusPod(corev1.PodPending,
			[]corev1.ContainerStatus{ctrStatus("i1", stateErrored, false)}, nil), "0/1", "Init:Error"},
		{"init container failed without reason", statusPod(corev1.PodPending,
			[]corev1.ContainerStatus{ctrStatus("i1", stateInitFailed, false)}, nil), "0/1", "Init:ExitCode:3"},
		{"inits done, app starting", statusPod(corev1.PodPending,
			[]corev1.ContainerStatus{ctrStatus("i1", stateInitRanOK, false)},
			[]corev1.ContainerStatus{ctrStatus("app", statePodInitW, false)}), "0/1", "PodInitializing"},
		{"crash-looping", statusPod(corev1.PodRunning, nil, []corev1.ContainerStatus{ctrStatus("app", stateCrashLoop, false)}), "0/1", "CrashLoopBackOff"},
		{"stateCompleted", statusPod(corev1.PodSucceeded, nil, []corev1.ContainerStatus{ctrStatus("app", stateCompleted, false)}), "0/1", "Completed"},
		{"error", statusPod(corev1.PodFailed, nil, []corev1.ContainerStatus{ctrStatus("app", stateErrored, false)}), "0/1", "Error"},
		{"exit code without reason", statusPod(corev1.PodFailed, nil, []corev1.ContainerStatus{ctrStatus("app", stateExitCode2, false)}), "0/1", "ExitCode:2"},
		{"signal without reason", statusPod(corev1.PodFailed, nil, []corev1.ContainerStatus{ctrStatus("app", stateKilledBy9, false)}), "0/1", "Signal:9"},
		{"one stateCompleted, one still stateRunning and ready", func() *corev1.Pod {
			p := statusPod(corev1.PodRunning, nil, []corev1.ContainerStatus{ctrStatus("a", stateRunning, true), ctrStatus("b", stateCompleted, false)})
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
			return p
		}(), "1/2", "Running"},
		{"one stateCompleted, one stateRunning but pod not ready", statusPod(corev1.PodRunning, nil,
			[]corev1.ContainerStatus{ctrStatus("a", stateRunning, true), ctrStatus("b", stateCompleted, false)}), "1/2", "NotReady"},
		{"pod reason wins over phase", func() *corev1.Pod {
			p := statusPod(corev1.PodFailed, nil, nil)
			p.Status.Reason = "Evicted"
			return p
		}(), "0/1", "Evicted"},
		{"terminating", func() *corev1.Pod {
			p := statusPod(corev1.PodRunning, nil, []corev1.ContainerStatus{ctrStatus("app", stateRunning, true)})
			p.DeletionTimestamp = &deleting
			return p
		}(), "1/1", "Terminating"},
		{"terminating but finished", func() *corev1.Pod {
			p := statusPod(corev1.PodSucceeded, nil, []corev1.ContainerStatus{ctrStatus("app", stateCompleted, false)})
			p.DeletionTimestamp = &deleting
			return p
		}(), "0/1", "Completed"},
		{"node lost", func() *corev1.Pod {
			p := statusPod(corev1.PodRunning, nil, []corev1.ContainerStatus{ctrStatus("app", stateRunning, true)})
			p.DeletionTimestamp, p.Status.Reason = &deleting, "NodeLost"
			return p
		}(), "1/1", "Unknown"},
		{"started sidecar counts as a container", func() *corev1.Pod {
			always := corev1.ContainerRestartPolicyAlways
			side := ctrStatus("side", stateRunning, true)
			side.Started = ptr.To(true)
			p := statusPod(corev1.PodRunning, []corev1.ContainerStatus{side}, []corev1.ContainerStatus{ctrStatus("app", stateRunning, true)})
			p.Spec.InitContainers[0].RestartPolicy = &always
			return p
		}(), "2/2", "Running"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cells := PodStrategy{}.Row(tt.pod)
			if cells[1] != tt.ready || cells[2] != tt.reason {
				t.Errorf("READY %v STATUS %v, want %s %s", cells[1], cells[2], tt.ready, tt.reason)
			}
		})
	}
}

func TestPodRestartsCell(t *testing.T) {
	restarted := func(name string, count int32, ago time.Duration) corev1.ContainerStatus {
		st := ctrStatus(name, stateRunning, true)
		st.RestartCount = count
		if ago > 0 {
			st.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{FinishedAt: metav1.NewTime(time.Now().Add(-ago))}
		}
		return st
	}
	tests := []struct {
		name string
		pod  *corev1.Pod
		want string
	}{
		{"never restarted", statusPod(corev1.PodRunning, nil, []corev1.ContainerStatus{ctrStatus("app", stateRunning, true)}), "0"},
		{"restarts without a time", statusPod(corev1.PodRunning, nil, []corev1.ContainerStatus{restarted("app", 2, 0)}), "2"},
		{"restarts add up, latest time shown", statusPod(corev1.PodRunning, nil,
			[]corev1.ContainerStatus{restarted("a", 1, 2*time.Hour), restarted("b", 2, 30*time.Minute)}), "3 (30m ago)"},
		{"init restarts shown while initializing", statusPod(corev1.PodPending,
			[]corev1.ContainerStatus{func() corev1.ContainerStatus {
				st := restarted("i1", 4, 45*time.Minute)
				st.State = stateCrashLoop
				return st
			}()}, nil), "4 (45m ago)"},
		{"init restarts dropped once initialized", statusPod(corev1.PodRunning,
			[]corev1.ContainerStatus{func() corev1.ContainerStatus {
				st := restarted("i1", 4, 45*time.Minute)
				st.State = stateInitRanOK
				return st
			}()}, []corev1.ContainerStatus{restarted("app", 1, 30*time.Minute)}), "1 (30m ago)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := summarizePod(tt.pod).restartsCell(); got != tt.want {
				t.Errorf("restarts = %q, want %q", got, tt.want)
			}
		})
	}
}
