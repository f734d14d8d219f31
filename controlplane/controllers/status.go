package controllers

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Owner is an API object that owns pods (a DaemonSet, a StatefulSet).
type Owner interface {
	metav1.Object
	runtime.Object
}

// StatusWriter writes an owner's status through its status subresource.
type StatusWriter[T Owner] struct {
	Noun string
	// Get reads the owner afresh; Update writes its status.
	Get    func(ctx context.Context, namespace, name string, opts metav1.GetOptions) (T, error)
	Update func(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
}

// Write gives a copy of obj the status set puts on it; on a conflict,
// the cache lagging behind a write of ours, it tries once more on the
// latest copy of the same object.
func (w StatusWriter[T]) Write(ctx context.Context, obj T, set func(T)) error {
	next := obj.DeepCopyObject().(T)
	set(next)
	_, err := w.Update(ctx, next, metav1.UpdateOptions{})
	if apierrors.IsConflict(err) {
		if next, err = w.Get(ctx, obj.GetNamespace(), obj.GetName(), metav1.GetOptions{}); err == nil && next.GetUID() == obj.GetUID() {
			set(next)
			_, err = w.Update(ctx, next, metav1.UpdateOptions{})
		}
	}
	if err != nil {
		return fmt.Errorf("update status of %s %s/%s: %w", w.Noun, obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}
