package deployment

import (
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// hashLabel is the label that tells the ReplicaSets of one Deployment
// apart: the hash of their pod template.
const hashLabel = appsv1.DefaultDeploymentUniqueLabelKey // "pod-template-hash"

// equalIgnoreHash reports whether two pod templates are the same but for
// their pod-template-hash labels.
func equalIgnoreHash(a, b *corev1.PodTemplateSpec) bool {
	a, b = a.DeepCopy(), b.DeepCopy()
	delete(a.Labels, hashLabel)
	delete(b.Labels, hashLabel)
	return apiequality.Semantic.DeepEqual(a, b)
}

// newReplicaSet is the ReplicaSet for d's current template with the given
// hash, at size 0 and without annotations: "<deployment>-<hash>",
// controlled by d, with the hash label on itself, its selector and its
// template.
func newReplicaSet(d *appsv1.Deployment, hash string) *appsv1.ReplicaSet {
	template := *d.Spec.Template.DeepCopy()
	template.Labels = withLabel(d.Spec.Template.Labels, hashLabel, hash)
	selector := d.Spec.Selector.DeepCopy()
	selector.MatchLabels = withLabel(selector.MatchLabels, hashLabel, hash)
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Name:            d.Name + "-" + hash,
			Namespace:       d.Namespace,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(d, controllerKind)},
			Labels:          withLabel(d.Spec.Template.Labels, hashLabel, hash),
		},
		Spec: appsv1.ReplicaSetSpec{
			Replicas:        new(int32),
			MinReadySeconds: d.Spec.MinReadySeconds,
			Selector:        selector,
			Template:        template,
		},
	}
}

// withLabel returns a copy of m with key set to value.
func withLabel(m map[string]string, key, value string) map[string]string {
	out := maps.Clone(m)
	if out == nil {
		out = map[string]string{}
	}
	out[key] = value
	return out
}

// findNewReplicaSet returns the ReplicaSet whose template is d's, the
// oldest if several are (after some upgrades there can be more than one),
// or nil.
func findNewReplicaSet(d *appsv1.Deployment, rss []*appsv1.ReplicaSet) *appsv1.ReplicaSet {
	var found *appsv1.ReplicaSet
	for _, rs := range rss {
		if equalIgnoreHash(&rs.Spec.Template, &d.Spec.Template) && (found == nil || createdBefore(rs, found)) {
			found = rs
		}
	}
	return found
}

// oldReplicaSets are the ReplicaSets other than newRS (which may be nil).
func oldReplicaSets(rss []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	var old []*appsv1.ReplicaSet
	for _, rs := range rss {
		if newRS == nil || rs.UID != newRS.UID {
			old = append(old, rs)
		}
	}
	return old
}
