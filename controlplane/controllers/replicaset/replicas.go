package replicaset

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/skiff-lab/skiff/controlplane/controllers"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

const (
	// burstReplicas caps the pods one sync creates or deletes; the rest
	// waits for the next sync, once these have been observed.
	burstReplicas = 500
	// slowStartInitialBatch is the first batch of creates; each batch
	// that fully succeeds doubles the next.
	slowStartInitialBatch = 1
)

// plan is what one sync does about a ReplicaSet's pods: create some, or
// delete these.
type plan struct {
	create int
	remove []*corev1.Pod
}

// planReplicas compares the active pods a ReplicaSet owns with the
// replicas it wants, at most burstReplicas apart. related and now order
// the pods to delete (see podsToDelete).
func planReplicas(replicas int, active, related []*corev1.Pod, now time.Time) plan {
	diff := len(active) - replicas
	switch {
	case diff < 0:
		return plan{create: min(-diff, burstReplicas)}
	case diff > 0:
		return plan{remove: podsToDelete(active, related, min(diff, burstReplicas), now)}
	}
	return plan{}
}

// manageReplicas creates or deletes pods so that rs owns spec.replicas
// active pods, recording expectations for what it starts.
func (c *Controller) manageReplicas(ctx context.Context, rs *appsv1.ReplicaSet, active []*corev1.Pod) error {
	replicas := int(desiredReplicas(rs))
	var related []*corev1.Pod
	if len(active) > replicas {
		related = c.relatedPods(rs)
	}
	p := planReplicas(replicas, active, related, c.now())
	key := keyOf(rs.Namespace, rs.Name)
	switch {
	case p.create > 0:
		c.expectations.ExpectCreations(key, p.create)
		created, err := controllers.SlowStartBatch(p.create, slowStartInitialBatch, func(int) error { return c.createPod(ctx, rs) })
		if skipped := p.create - created; skipped > 0 {
			c.expectations.LowerCreations(key, skipped) // never to be observed
		}
		return err
	case len(p.remove) > 0:
		return c.deletePods(ctx, rs, p.remove)
	}
	return nil
}

// deletePods deletes pods concurrently and returns the first error; a pod
// already gone is no error.
func (c *Controller) deletePods(ctx context.Context, rs *appsv1.ReplicaSet, pods []*corev1.Pod) error {
	key := keyOf(rs.Namespace, rs.Name)
	podKeys := make([]string, len(pods))
	for i, p := range pods {
		podKeys[i] = keyOf(p.Namespace, p.Name)
	}
	c.expectations.ExpectDeletions(key, podKeys)
	errs := make([]error, len(pods))
	var wg sync.WaitGroup
	for i, pod := range pods {
		wg.Go(func() {
			err := c.deletePod(ctx, rs, pod)
			if err == nil {
				return
			}
			c.expectations.DeletionObserved(key, podKeys[i]) // never to be observed
			if !apierrors.IsNotFound(err) {
				errs[i] = err
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// createPod creates one pod from rs's template and reports it in an
// event. The API error is returned as is: it becomes the message of the
// ReplicaFailure condition.
func (c *Controller) createPod(ctx context.Context, rs *appsv1.ReplicaSet) error {
	pod, err := podFromTemplate(rs, c.gvk)
	if err != nil {
		return err
	}
	created, err := c.client.CoreV1().Pods(rs.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			// Every create fails until the namespace is gone; not a
			// failure of this ReplicaSet.
			c.expectations.LowerCreations(keyOf(rs.Namespace, rs.Name), 1)
			return nil
		}
		c.recorder.Eventf(rs, corev1.EventTypeWarning, reasonFailedCreate, "Error creating: %v", err)
		return err
	}
	c.recorder.Eventf(rs, corev1.EventTypeNormal, reasonSuccessfulCreate, "Created pod: %v", created.Name)
	return nil
}

// deletePod deletes one pod of rs and reports it in an event.
func (c *Controller) deletePod(ctx context.Context, rs *appsv1.ReplicaSet, pod *corev1.Pod) error {
	err := c.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return err
	case err != nil:
		c.recorder.Eventf(rs, corev1.EventTypeWarning, reasonFailedDelete, "Error deleting: %v", err)
		return err
	}
	c.recorder.Eventf(rs, corev1.EventTypeNormal, reasonSuccessfulDelete, "Deleted pod: %v", pod.Name)
	return nil
}

// podFromTemplate is a new pod of rs: the template's labels, annotations,
// finalizers and spec, a name generated from "<rs name>-", and rs (of
// kind) as controller.
func podFromTemplate(rs *appsv1.ReplicaSet, kind schema.GroupVersionKind) (*corev1.Pod, error) {
	t := rs.Spec.Template.DeepCopy()
	if len(t.Labels) == 0 {
		return nil, errors.New("unable to create pods, no labels")
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName:    rs.Name + "-",
			Namespace:       rs.Namespace,
			Labels:          t.Labels,
			Annotations:     t.Annotations,
			Finalizers:      t.Finalizers,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(rs, kind)},
		},
		Spec: t.Spec,
	}, nil
}
