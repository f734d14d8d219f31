package disruption

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/utils/ptr"
)

// scales finds how many replicas the controllers of a budget's pods want:
// a ReplicationController's, a ReplicaSet's, or the Deployment's that
// controls the ReplicaSet.
type scales struct {
	rcs         corelisters.ReplicationControllerLister
	rss         appslisters.ReplicaSetLister
	deployments appslisters.DeploymentLister
}

// controllerScale is one controller and its desired replicas.
type controllerScale struct {
	uid      types.UID
	replicas int32
}

// expected sums the replicas of the pods' distinct controllers. A pod
// without a controller skiff knows the scale of is an error: a budget
// that counts in replicas cannot count it.
func (s scales) expected(pods []*corev1.Pod) (int32, error) {
	seen := map[types.UID]bool{}
	var total int32
	for _, pod := range pods {
		if pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue
		}
		ref := metav1.GetControllerOfNoCopy(pod)
		if ref == nil {
			return 0, fmt.Errorf("found no controller ref for pod %q", pod.Name)
		}
		sc, ok := s.of(pod.Namespace, ref)
		if !ok {
			return 0, fmt.Errorf("found no controllers for pod %q", pod.Name)
		}
		if !seen[sc.uid] {
			seen[sc.uid] = true
			total += sc.replicas
		}
	}
	return total, nil
}

// of is the scale of the controller ref names, when it is cached with
// the UID ref names.
func (s scales) of(ns string, ref *metav1.OwnerReference) (controllerScale, bool) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return controllerScale{}, false
	}
	switch gv.WithKind(ref.Kind).GroupKind() {
	case schema.GroupKind{Kind: "ReplicationController"}:
		rc, err := s.rcs.ReplicationControllers(ns).Get(ref.Name)
		if err != nil || rc.UID != ref.UID {
			return controllerScale{}, false
		}
		return controllerScale{rc.UID, ptr.Deref(rc.Spec.Replicas, 1)}, true
	case appsv1.SchemeGroupVersion.WithKind("ReplicaSet").GroupKind():
		rs, err := s.rss.ReplicaSets(ns).Get(ref.Name)
		if err != nil || rs.UID != ref.UID {
			return controllerScale{}, false
		}
		if owner := metav1.GetControllerOfNoCopy(rs); owner != nil && owner.Kind == "Deployment" {
			return s.deployment(ns, owner)
		}
		return controllerScale{rs.UID, ptr.Deref(rs.Spec.Replicas, 1)}, true
	case appsv1.SchemeGroupVersion.WithKind("Deployment").GroupKind():
		return s.deployment(ns, ref)
	}
	return controllerScale{}, false
}

func (s scales) deployment(ns string, ref *metav1.OwnerReference) (controllerScale, bool) {
	d, err := s.deployments.Deployments(ns).Get(ref.Name)
	if err != nil || d.UID != ref.UID {
		return controllerScale{}, false
	}
	return controllerScale{d.UID, ptr.Deref(d.Spec.Replicas, 1)}, true
}
