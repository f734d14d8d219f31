package agent

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
)

// reportStatus writes the pod's status through pods/status when it changed.
// On a conflict it re-reads the pod and computes the status again.
func (s *podSync) reportStatus(ctx context.Context, st podState) error {
	pod := s.pod
	messages := s.terminationMessages(st)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		status := computeStatus(statusInput{
			pod: pod, state: st, waits: s.a.waits.get(pod.UID), hostIP: s.a.nodeIP,
			podIPs: podIPs(st), now: s.a.clock.Now(), started: s.a.firstSeen(pod.UID), health: s.a.health,
			messages: messages, failure: s.failure, alloc: s.alloc, resize: s.resizeState, generation: s.generation,
		})
		if equality.Semantic.DeepEqual(status, pod.Status) {
			return nil
		}
		update := pod.DeepCopy()
		update.Status = status
		written, err := s.a.client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, update, metav1.UpdateOptions{})
		if err == nil {
			s.pod = written // the next report in this sync starts from its resourceVersion
			s.a.pods.starts.reported(written)
		}
		if apierrors.IsConflict(err) {
			fresh, getErr := s.a.client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
			if getErr != nil {
				return getErr
			}
			if fresh.UID != s.pod.UID {
				return nil
			}
			pod = fresh
		}
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil && !apierrors.IsConflict(err) {
			return fmt.Errorf("update status: %w", err)
		}
		return err
	})
}

// podIPs are the IPs of the pod's running sandbox.
func podIPs(st podState) []string {
	if sb := st.readySandbox(); sb != nil {
		return sb.PodIPs
	}
	return nil
}
