package agent

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/skiff-lab/skiff/cri"
)

// killPod stops the pod's containers (SIGTERM, the grace period, SIGKILL),
// then its sandboxes and network. A deleted pod also loses its stopped
// containers and its files; a finished pod keeps its containers for status
// and logs. Killing twice is harmless.
func (s *podSync) killPod(ctx context.Context, st podState, remove bool) error {
	// Main containers first, then the sidecars, which serve them to the end.
	var apps, sidecars []cri.Container
	for _, c := range st.live() {
		switch spec := s.containerByName(c.Name); {
		case c.Kind != cri.KindContainer:
		case spec != nil && isSidecar(spec):
			sidecars = append(sidecars, c)
		default:
			apps = append(apps, c)
		}
	}
	start, grace := s.a.clock.Now(), s.gracePeriod()
	if err := s.stopAll(ctx, apps, grace); err != nil {
		return err
	}
	if err := s.stopAll(ctx, sidecars, max(grace-s.a.clock.Since(start), minStopGrace)); err != nil {
		return err
	}
	teardown := time.Now()
	for _, sb := range st.sandboxes {
		if err := s.removeSandbox(ctx, sb.ID); err != nil {
			s.deletionStep("agent.teardown", teardown, err)
			return err
		}
	}
	if len(st.sandboxes) > 0 {
		s.deletionStep("agent.teardown", teardown, nil, attribute.Int("sandboxes", len(st.sandboxes)))
	}
	if !remove {
		return nil
	}
	for _, list := range st.containers {
		for _, c := range list {
			if err := s.a.rt.RemoveContainer(ctx, c.ID); err != nil {
				return err
			}
		}
	}
	return s.a.rt.RemovePod(ctx, s.ref)
}

// stopAll stops containers in parallel, each with the same grace period.
func (s *podSync) stopAll(ctx context.Context, cs []cri.Container, grace time.Duration) error {
	var wg sync.WaitGroup
	errs := make([]error, len(cs))
	for i, c := range cs {
		if c.Kind == cri.KindContainer {
			s.event(v1.EventTypeNormal, "Killing", "Stopping container "+c.Name)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.stopContainer(ctx, c, grace)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// gracePeriod is the deletion's grace period, else the pod's; an evicted
// pod gets none (its containers still get minStopGrace after a PreStop).
func (s *podSync) gracePeriod() time.Duration {
	if s.failure != nil && s.failure.evicted {
		return 0
	}
	if g := s.pod.DeletionGracePeriodSeconds; g != nil {
		return time.Duration(*g) * time.Second
	}
	if g := s.pod.Spec.TerminationGracePeriodSeconds; g != nil {
		return time.Duration(*g) * time.Second
	}
	return 30 * time.Second
}

// reportTerminal records how a deleted pod ended before its object goes,
// as the kubelet does: Succeeded when every container had exited 0,
// Failed otherwise. Only an object a finalizer holds (a Job's pod, until
// the Job has counted it) outlives its containers for anyone to read, so
// other pods are spared the write.
func (s *podSync) reportTerminal(ctx context.Context) error {
	st := s.pod.Status
	if len(s.pod.Finalizers) == 0 || st.Phase == v1.PodSucceeded || st.Phase == v1.PodFailed {
		return nil
	}
	update := s.pod.DeepCopy()
	update.Status.Phase = v1.PodFailed
	if allExitedZero(st.ContainerStatuses) {
		update.Status.Phase = v1.PodSucceeded
	}
	// A conflict fails the sync, which runs again on the pod's news.
	_, err := s.a.client.CoreV1().Pods(s.pod.Namespace).UpdateStatus(ctx, update, metav1.UpdateOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("report terminal phase: %w", err)
	}
	return nil
}

func allExitedZero(statuses []v1.ContainerStatus) bool {
	for _, cs := range statuses {
		if t := cs.State.Terminated; t == nil || t.ExitCode != 0 {
			return false
		}
	}
	return len(statuses) > 0
}

// finishDeletion removes the pod object once nothing of it runs: grace 0,
// preconditioned on its UID so a new pod of the same name is never touched.
func (s *podSync) finishDeletion(ctx context.Context) error {
	opts := metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0), Preconditions: metav1.NewUIDPreconditions(string(s.pod.UID))}
	start := time.Now()
	err := s.a.client.CoreV1().Pods(s.pod.Namespace).Delete(ctx, s.pod.Name, opts)
	s.deletionStep("agent.deleted", start, err)
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("delete pod: %w", err)
	}
	s.a.forget(s.pod.UID)
	return nil
}

// cleanupOrphan removes everything of a pod the API no longer has.
func (a *Agent) cleanupOrphan(ctx context.Context, ref cri.PodRef) error {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: typesUID(ref.UID), Namespace: ref.Namespace, Name: ref.Name}}
	pod.Spec.TerminationGracePeriodSeconds = ptr.To[int64](2)
	s := &podSync{a: a, pod: pod, ref: ref}
	st, err := s.observe(ctx)
	if err != nil {
		return err
	}
	if err := s.killPod(ctx, st, true); err != nil {
		return err
	}
	a.forget(pod.UID)
	return nil
}
