package agent

import "time"

// deadlineMessage is the kubelet's message for a pod past its
// activeDeadlineSeconds.
const deadlineMessage = "Pod was active on the node longer than the specified deadline"

// pastDeadline says the pod has been active longer than its
// activeDeadlineSeconds, counted from its startTime (or from when the agent
// first saw it); before that it asks for a sync when the deadline comes.
func (s *podSync) pastDeadline() bool {
	d := s.pod.Spec.ActiveDeadlineSeconds
	if d == nil {
		return false
	}
	start := s.a.firstSeen(s.pod.UID)
	if t := s.pod.Status.StartTime; t != nil {
		start = t.Time
	}
	left := start.Add(time.Duration(*d) * time.Second).Sub(s.a.clock.Now())
	if left > 0 {
		s.retryAfter(left)
		return false
	}
	return true
}
