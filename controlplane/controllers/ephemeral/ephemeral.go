// Package ephemeral makes the claims of pods' generic ephemeral volumes,
// as kube-controller-manager's ephemeral-volume controller: for each
// volume with an ephemeral.volumeClaimTemplate, a claim <pod>-<volume>
// from the template, owned by the pod (so the garbage collector removes
// it with the pod). A claim of that name that the pod does not own is
// left alone and named in a warning event.
package ephemeral

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/skiff-lab/skiff/controlplane/component"
	"github.com/skiff-lab/skiff/informer"
	"github.com/skiff-lab/skiff/podrefs"
)

const controllerName = "ephemeral-volume"

// Controller makes ephemeral volumes' claims; its queue holds pod keys.
type Controller struct {
	client   kubernetes.Interface
	pods     corelisters.PodLister
	claims   corelisters.PersistentVolumeClaimLister
	recorder record.EventRecorder
	queue    workqueue.TypedRateLimitingInterface[string]
}

var _ component.Component = (*Controller)(nil)

// New builds the controller on cc's shared informers.
func New(cc component.Context) (component.Component, error) {
	core := cc.Informers.Core().V1()
	c := &Controller{client: cc.Client, pods: core.Pods().Lister(), claims: core.PersistentVolumeClaims().Lister(),
		recorder: cc.Recorder("ephemeral_volume"), queue: component.NewQueue(controllerName)}
	err := informer.AddHandlers(
		informer.Handler{Name: "pod", Informer: core.Pods().Informer(), Funcs: informer.OnChange(func(obj any) {
			if pod, ok := informer.FromTombstone[*corev1.Pod](obj); ok && hasEphemeral(pod) {
				c.queue.Add(pod.Namespace + "/" + pod.Name)
			}
		})},
		// A claim deleted while its pod lives is made again.
		informer.Handler{Name: "persistentvolumeclaim", Informer: core.PersistentVolumeClaims().Informer(), Funcs: cache.ResourceEventHandlerFuncs{
			DeleteFunc: func(obj any) {
				pvc, ok := informer.FromTombstone[*corev1.PersistentVolumeClaim](obj)
				if !ok {
					return
				}
				if owner := metav1.GetControllerOf(pvc); owner != nil && owner.Kind == "Pod" {
					c.queue.Add(pvc.Namespace + "/" + owner.Name)
				}
			}}},
	)
	return c, err
}

func hasEphemeral(pod *corev1.Pod) bool {
	for _, v := range pod.Spec.Volumes {
		if v.Ephemeral != nil {
			return true
		}
	}
	return false
}

// Run makes claims until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	component.RunWorkers(ctx, controllerName, c.queue, 1, c.sync)
}

func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	pod, err := c.pods.Pods(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil || pod.DeletionTimestamp != nil {
		return err
	}
	for i := range pod.Spec.Volumes {
		if vol := &pod.Spec.Volumes[i]; vol.Ephemeral != nil && vol.Ephemeral.VolumeClaimTemplate != nil {
			if err := c.ensureClaim(ctx, pod, vol); err != nil {
				return err
			}
		}
	}
	return nil
}

// ensureClaim makes the volume's claim unless it exists.
func (c *Controller) ensureClaim(ctx context.Context, pod *corev1.Pod, vol *corev1.Volume) error {
	name, _, _ := podrefs.ClaimName(pod, vol)
	if pvc, err := c.claims.PersistentVolumeClaims(pod.Namespace).Get(name); err == nil {
		if !metav1.IsControlledBy(pvc, pod) {
			c.recorder.Eventf(pod, corev1.EventTypeWarning, "FailedBinding", "PVC %s/%s was not created for pod %s/%s (pod is not owner)",
				pvc.Namespace, pvc.Name, pod.Namespace, pod.Name)
		}
		return nil
	}
	tmpl := vol.Ephemeral.VolumeClaimTemplate
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: pod.Namespace, Labels: tmpl.Labels, Annotations: tmpl.Annotations,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(pod, corev1.SchemeGroupVersion.WithKind("Pod"))}},
		Spec: *tmpl.Spec.DeepCopy(),
	}
	_, err := c.client.CoreV1().PersistentVolumeClaims(pod.Namespace).Create(ctx, pvc, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		c.recorder.Eventf(pod, corev1.EventTypeWarning, "FailedBinding", "PVC %s/%s creation failed: %v", pod.Namespace, name, err)
		return fmt.Errorf("claim %s/%s for pod %s: %w", pod.Namespace, name, pod.Name, err)
	}
	return nil
}
