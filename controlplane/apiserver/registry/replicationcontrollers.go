package registry

import (
	"strconv"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// replicationControllerStrategy is core/v1 ReplicationControllers: a
// ReplicaSet with an equality-only selector (which may change) and a
// template pointer. It checks, scales and prints them as ReplicaSets.
type replicationControllerStrategy struct{ BaseStrategy }

// Fields are kube-apiserver's for ReplicationControllers.
func (replicationControllerStrategy) Fields(obj runtime.Object) fields.Set {
	return fields.Set{"status.replicas": strconv.Itoa(int(obj.(*corev1.ReplicationController).Status.Replicas))}
}

var _ Scaler = replicationControllerStrategy{}

func (replicationControllerStrategy) PrepareForCreate(obj runtime.Object) {
	rc := obj.(*corev1.ReplicationController)
	defaultReplicationController(rc)
	rc.Status = corev1.ReplicationControllerStatus{}
}

// defaultReplicationController defaults as kube-apiserver does: the
// selector and the object's labels from the template's labels when empty,
// one replica, and the template's pod spec.
func defaultReplicationController(rc *corev1.ReplicationController) {
	if t := rc.Spec.Template; t != nil && t.Labels != nil {
		if len(rc.Spec.Selector) == 0 {
			rc.Spec.Selector = t.Labels
		}
		if len(rc.Labels) == 0 {
			rc.Labels = t.Labels
		}
	}
	if rc.Spec.Replicas == nil {
		rc.Spec.Replicas = ptr.To[int32](1)
	}
	if rc.Spec.Template != nil {
		defaultPodSpec(&rc.Spec.Template.Spec)
	}
}

func (replicationControllerStrategy) PrepareForUpdate(obj, _ runtime.Object) {
	defaultReplicationController(obj.(*corev1.ReplicationController))
}

func (replicationControllerStrategy) Validate(obj runtime.Object) field.ErrorList {
	rc := obj.(*corev1.ReplicationController)
	if rc.Spec.Template == nil {
		return field.ErrorList{field.Required(field.NewPath("spec", "template"), "")}
	}
	return validateWorkload("deployment", rc.Spec.Replicas, rcSelector(rc), rc.Spec.Template, rc.Spec.MinReadySeconds)
}

// rcSelector is rc's selector as a label selector; nil when empty.
func rcSelector(rc *corev1.ReplicationController) *metav1.LabelSelector {
	if len(rc.Spec.Selector) == 0 {
		return nil
	}
	return &metav1.LabelSelector{MatchLabels: rc.Spec.Selector}
}

func (replicationControllerStrategy) Scale(obj runtime.Object) autoscalingv1.Scale {
	rc := obj.(*corev1.ReplicationController)
	return scaleFor(rc.Spec.Replicas, rc.Status.Replicas, rcSelector(rc))
}

func (replicationControllerStrategy) SetReplicas(obj runtime.Object, n int32) {
	obj.(*corev1.ReplicationController).Spec.Replicas = &n
}

func (replicationControllerStrategy) Columns() []metav1.TableColumnDefinition {
	return replicaSetStrategy{}.Columns()
}

func (replicationControllerStrategy) Row(obj runtime.Object) []any {
	rc := obj.(*corev1.ReplicationController)
	template := rc.Spec.Template
	if template == nil {
		template = &corev1.PodTemplateSpec{}
	}
	return append([]any{rc.Name, int64(*rc.Spec.Replicas), int64(rc.Status.Replicas), int64(rc.Status.ReadyReplicas), age(rc.CreationTimestamp)},
		workloadCells(template, rcSelector(rc))...)
}
