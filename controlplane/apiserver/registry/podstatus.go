package registry

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// summarizePod computes the READY, STATUS and RESTARTS cells the way
// kubectl users know them: init progress as Init:N/M, a waiting or
// terminated container's reason, Terminating for a pod being deleted.
func summarizePod(pod *corev1.Pod) podSummary {
	s := podSummary{total: len(pod.Spec.Containers), reason: string(pod.Status.Phase)}
	if pod.Status.Reason != "" {
		s.reason = pod.Status.Reason
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Reason == "SchedulingGated" {
			s.reason = "SchedulingGated"
		}
	}
	sidecars := map[string]bool{}
	for _, c := range pod.Spec.InitContainers {
		if isSidecarContainer(&c) {
			sidecars[c.Name] = true
			s.total++
		}
	}
	var sidecarRestarts int32
	var sidecarLast time.Time
	initializing := false
	for i, st := range pod.Status.InitContainerStatuses {
		s.addRestarts(st)
		if sidecars[st.Name] {
			sidecarRestarts += st.RestartCount
			sidecarLast = later(sidecarLast, st)
		}
		if reason, done := initReason(st, i, len(pod.Spec.InitContainers), sidecars[st.Name], &s); !done {
			s.reason, initializing = reason, true
			break
		}
	}
	if !initializing || podConditionTrue(pod, corev1.PodInitialized) {
		s.restarts, s.lastRestart = sidecarRestarts, sidecarLast
		s.summarizeContainers(pod)
	}
	if pod.DeletionTimestamp != nil {
		if pod.Status.Reason == "NodeLost" {
			s.reason = "Unknown"
		} else if pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed {
			s.reason = "Terminating"
		}
	}
	return s
}

// initReason reports whether init container i is done and, if not, the
// pod's status while it is not.
func initReason(st corev1.ContainerStatus, i, n int, sidecar bool, s *podSummary) (string, bool) {
	switch {
	case st.State.Terminated != nil && st.State.Terminated.ExitCode == 0:
		return "", true
	case sidecar && st.Started != nil && *st.Started:
		if st.Ready {
			s.ready++
		}
		return "", true
	case st.State.Terminated != nil:
		t := st.State.Terminated
		switch {
		case t.Reason != "":
			return "Init:" + t.Reason, false
		case t.Signal != 0:
			return fmt.Sprintf("Init:Signal:%d", t.Signal), false
		}
		return fmt.Sprintf("Init:ExitCode:%d", t.ExitCode), false
	case st.State.Waiting != nil && st.State.Waiting.Reason != "" && st.State.Waiting.Reason != "PodInitializing":
		return "Init:" + st.State.Waiting.Reason, false
	}
	return fmt.Sprintf("Init:%d/%d", i, n), false
}

func (s *podSummary) summarizeContainers(pod *corev1.Pod) {
	hasRunning, errorReason := false, ""
	statuses := pod.Status.ContainerStatuses
	for i := len(statuses) - 1; i >= 0; i-- {
		st := statuses[i]
		s.addRestarts(st)
		switch {
		case st.State.Waiting != nil && st.State.Waiting.Reason != "":
			s.reason = st.State.Waiting.Reason
		case st.State.Terminated != nil:
			t := st.State.Terminated
			switch {
			case t.Reason != "":
				s.reason = t.Reason
			case t.Signal != 0:
				s.reason = fmt.Sprintf("Signal:%d", t.Signal)
			default:
				s.reason = fmt.Sprintf("ExitCode:%d", t.ExitCode)
			}
			if t.ExitCode != 0 {
				errorReason = s.reason
			}
		case st.Ready && st.State.Running != nil:
			hasRunning = true
			s.ready++
		}
	}
	if s.reason == "Completed" {
		switch {
		case hasRunning && podConditionTrue(pod, corev1.PodReady):
			s.reason = "Running"
		case errorReason != "":
			s.reason = errorReason
		case hasRunning:
			s.reason = "NotReady"
		}
	}
}

func (s *podSummary) addRestarts(st corev1.ContainerStatus) {
	s.restarts += st.RestartCount
	s.lastRestart = later(s.lastRestart, st)
}

func later(t time.Time, st corev1.ContainerStatus) time.Time {
	if term := st.LastTerminationState.Terminated; term != nil && term.FinishedAt.After(t) {
		return term.FinishedAt.Time
	}
	return t
}

func podConditionTrue(pod *corev1.Pod, typ corev1.PodConditionType) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == typ {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
