package controllers

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
)

// PodDeleter deletes the pods of owners (Jobs, DaemonSets) one after the
// other, recording the deletions their informer is to report and an
// event for each on the owner.
type PodDeleter struct {
	Client       kubernetes.Interface
	Recorder     record.EventRecorder
	Expectations *Expectations
}

// Delete deletes pods of owner, whose expectations key is key; a pod
// already gone is no error, and a pod recreated under the same name is
// left alone.
func (d PodDeleter) Delete(ctx context.Context, owner runtime.Object, key string, pods []*corev1.Pod) error {
	podKeys := make([]string, len(pods))
	for i, p := range pods {
		podKeys[i] = p.Namespace + "/" + p.Name
	}
	d.Expectations.ExpectDeletions(key, podKeys)
	for i, pod := range pods {
		err := d.Client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(pod.UID))})
		if err != nil {
			d.Expectations.DeletionObserved(key, podKeys[i])
			if !apierrors.IsNotFound(err) {
				return fmt.Errorf("delete pod %s: %w", pod.Name, err)
			}
			continue
		}
		d.Recorder.Eventf(owner, corev1.EventTypeNormal, "SuccessfulDelete", "Deleted pod: %s", pod.Name)
	}
	return nil
}
