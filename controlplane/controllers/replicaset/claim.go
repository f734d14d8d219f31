package replicaset

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skiff-lab/skiff/controlplane/controllers"
)

// claimPods adopts and releases pods so that the ReplicaSet owns exactly
// the pods it selects, and returns those it owns (see
// controllers.Claimer).
func (c *Controller) claimPods(ctx context.Context, rs *appsv1.ReplicaSet, selector labels.Selector, pods []*corev1.Pod) ([]*corev1.Pod, error) {
	return controllers.Claimer[*corev1.Pod]{
		Owner:     rs,
		OwnerKind: c.gvk,
		Selector:  selector,
		OwnerNoun: c.name,
		Noun:      "pod",
		Get: func(ctx context.Context) (metav1.Object, error) {
			return c.objects.GetLive(ctx, rs.Namespace, rs.Name)
		},
		Patch: func(ctx context.Context, pod *corev1.Pod, patch []byte) (*corev1.Pod, error) {
			return c.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
		},
	}.Claim(ctx, pods)
}
