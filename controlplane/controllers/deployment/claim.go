package deployment

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skiff-lab/skiff/controlplane/controllers"
)

// claimReplicaSets adopts and releases the ReplicaSets of d's namespace so
// that d owns exactly those it selects, and returns those it owns (see
// controllers.Claimer).
func (c *Controller) claimReplicaSets(ctx context.Context, d *appsv1.Deployment, selector labels.Selector) ([]*appsv1.ReplicaSet, error) {
	all, err := c.rsLister.ReplicaSets(d.Namespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	return controllers.Claimer[*appsv1.ReplicaSet]{
		Owner:     d,
		OwnerKind: controllerKind,
		Selector:  selector,
		OwnerNoun: "deployment",
		Noun:      "replica set",
		Get: func(ctx context.Context) (metav1.Object, error) {
			return c.client.AppsV1().Deployments(d.Namespace).Get(ctx, d.Name, metav1.GetOptions{})
		},
		Patch: func(ctx context.Context, rs *appsv1.ReplicaSet, patch []byte) (*appsv1.ReplicaSet, error) {
			return c.client.AppsV1().ReplicaSets(rs.Namespace).Patch(ctx, rs.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
		},
	}.Claim(ctx, all)
}
