package registry

import (
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// StatefulSets (apps/v1) are kube-apiserver's: pods one at a time by
// default, rolling updates in descending ordinal above a partition, and
// claims from volumeClaimTemplates kept by default when pods go.

type statefulSetStrategy struct{ BaseStrategy }

var _ Scaler = statefulSetStrategy{}

func (statefulSetStrategy) PrepareForCreate(obj runtime.Object) {
	ss := obj.(*appsv1.StatefulSet)
	defaultStatefulSet(ss)
	ss.Status = appsv1.StatefulSetStatus{}
}

func (statefulSetStrategy) PrepareForUpdate(obj, _ runtime.Object) {
	defaultStatefulSet(obj.(*appsv1.StatefulSet))
}

func defaultStatefulSet(ss *appsv1.StatefulSet) {
	spec := &ss.Spec
	if spec.Replicas == nil {
		spec.Replicas = ptr.To[int32](1)
	}
	if spec.PodManagementPolicy == "" {
		spec.PodManagementPolicy = appsv1.OrderedReadyPodManagement
	}
	if spec.UpdateStrategy.Type == "" {
		spec.UpdateStrategy.Type = appsv1.RollingUpdateStatefulSetStrategyType
		if spec.UpdateStrategy.RollingUpdate == nil {
			spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{}
		}
	}
	if ru := spec.UpdateStrategy.RollingUpdate; spec.UpdateStrategy.Type == appsv1.RollingUpdateStatefulSetStrategyType && ru != nil {
		if ru.Partition == nil {
			ru.Partition = ptr.To[int32](0)
		}
		if ru.MaxUnavailable == nil {
			ru.MaxUnavailable = ptr.To(intstr.FromInt32(1))
		}
	}
	if spec.RevisionHistoryLimit == nil {
		spec.RevisionHistoryLimit = ptr.To[int32](10)
	}
	if spec.PersistentVolumeClaimRetentionPolicy == nil {
		spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{}
	}
	rp := spec.PersistentVolumeClaimRetentionPolicy
	if rp.WhenDeleted == "" {
		rp.WhenDeleted = appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	}
	if rp.WhenScaled == "" {
		rp.WhenScaled = appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	}
	for i := range spec.VolumeClaimTemplates {
		defaultPVCSpec(&spec.VolumeClaimTemplates[i].Spec)
	}
	defaultPodSpec(&spec.Template.Spec)
}

func (statefulSetStrategy) Validate(obj runtime.Object) field.ErrorList {
	ss := obj.(*appsv1.StatefulSet)
	spec, path := &ss.Spec, field.NewPath("spec")
	errs := validateWorkload("statefulset", spec.Replicas, spec.Selector, withClaimVolumes(ss), spec.MinReadySeconds)
	errs = append(errs, validateOneOf(spec.PodManagementPolicy, path.Child("podManagementPolicy"),
		appsv1.OrderedReadyPodManagement, appsv1.ParallelPodManagement)...)
	errs = append(errs, validateStatefulSetStrategy(&spec.UpdateStrategy, path.Child("updateStrategy"))...)
	if spec.ServiceName != "" {
		errs = append(errs, validateDNSLabel(spec.ServiceName, path.Child("serviceName"))...)
	}
	if spec.RevisionHistoryLimit != nil {
		errs = append(errs, validateNonNegative(int64(*spec.RevisionHistoryLimit), path.Child("revisionHistoryLimit"))...)
	}
	if spec.Ordinals != nil {
		errs = append(errs, validateNonNegative(int64(spec.Ordinals.Start), path.Child("ordinals", "start"))...)
	}
	rp, rpath := spec.PersistentVolumeClaimRetentionPolicy, path.Child("persistentVolumeClaimRetentionPolicy")
	for _, f := range []struct {
		name string
		v    appsv1.PersistentVolumeClaimRetentionPolicyType
	}{{"whenDeleted", rp.WhenDeleted}, {"whenScaled", rp.WhenScaled}} {
		errs = append(errs, validateOneOf(f.v, rpath.Child(f.name),
			appsv1.RetainPersistentVolumeClaimRetentionPolicyType, appsv1.DeletePersistentVolumeClaimRetentionPolicyType)...)
	}
	for i := range spec.VolumeClaimTemplates {
		t, tpath := &spec.VolumeClaimTemplates[i], path.Child("volumeClaimTemplates").Index(i)
		errs = append(errs, requiredDNSSubdomain(t.Name, tpath.Child("metadata", "name"))...)
		errs = append(errs, validatePVCSpec(&t.Spec, tpath.Child("spec"))...)
	}
	return errs
}

// withClaimVolumes is the set's template with a volume for each claim
// template, as its pods will have: containers may mount them.
func withClaimVolumes(ss *appsv1.StatefulSet) *corev1.PodTemplateSpec {
	tmpl := ss.Spec.Template.DeepCopy()
	for _, t := range ss.Spec.VolumeClaimTemplates {
		if !slices.ContainsFunc(tmpl.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == t.Name }) {
			tmpl.Spec.Volumes = append(tmpl.Spec.Volumes, corev1.Volume{Name: t.Name, VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: t.Name}}})
		}
	}
	return tmpl
}

func validateStatefulSetStrategy(st *appsv1.StatefulSetUpdateStrategy, path *field.Path) field.ErrorList {
	errs := validateOneOf(st.Type, path.Child("type"), appsv1.RollingUpdateStatefulSetStrategyType, appsv1.OnDeleteStatefulSetStrategyType)
	ru := st.RollingUpdate
	if ru == nil {
		return errs
	}
	rpath := path.Child("rollingUpdate")
	if st.Type == appsv1.OnDeleteStatefulSetStrategyType {
		return append(errs, field.Invalid(rpath, ru, fmt.Sprintf("only allowed for updateStrategy '%s'", appsv1.RollingUpdateStatefulSetStrategyType)))
	}
	if ru.Partition != nil {
		errs = append(errs, validateNonNegative(int64(*ru.Partition), rpath.Child("partition"))...)
	}
	if ru.MaxUnavailable != nil {
		errs = append(errs, validateCountOrPercent(*ru.MaxUnavailable, rpath.Child("maxUnavailable"))...)
		if n, err := intstr.GetScaledValueFromIntOrPercent(ru.MaxUnavailable, 100, true); err == nil && n == 0 {
			errs = append(errs, field.Invalid(rpath.Child("maxUnavailable"), ru.MaxUnavailable.String(), "must be greater than 0"))
		}
	}
	return errs
}

// ValidateUpdate: only what kube-apiserver lets change may change.
func (statefulSetStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	ss, prev := obj.(*appsv1.StatefulSet), old.(*appsv1.StatefulSet)
	a, b := ss.Spec.DeepCopy(), prev.Spec.DeepCopy()
	for _, s := range []*appsv1.StatefulSetSpec{a, b} {
		s.Replicas, s.Ordinals, s.Template, s.UpdateStrategy = nil, nil, corev1.PodTemplateSpec{}, appsv1.StatefulSetUpdateStrategy{}
		s.RevisionHistoryLimit, s.PersistentVolumeClaimRetentionPolicy, s.MinReadySeconds = nil, nil, 0
	}
	if !apiequality.Semantic.DeepEqual(a, b) {
		return field.ErrorList{field.Forbidden(field.NewPath("spec"), "updates to statefulset spec for fields other than "+
			"'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden")}
	}
	return nil
}

func (statefulSetStrategy) Scale(obj runtime.Object) autoscalingv1.Scale {
	ss := obj.(*appsv1.StatefulSet)
	return scaleFor(ss.Spec.Replicas, ss.Status.Replicas, ss.Spec.Selector)
}

func (statefulSetStrategy) SetReplicas(obj runtime.Object, n int32) {
	obj.(*appsv1.StatefulSet).Spec.Replicas = &n
}

func (statefulSetStrategy) Columns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		nameColumn,
		column("Ready", "string", "Number of the pod with ready state"),
		ageColumn,
		workloadWideColumns[0], workloadWideColumns[1],
	}
}

func (statefulSetStrategy) Row(obj runtime.Object) []any {
	ss := obj.(*appsv1.StatefulSet)
	cells := workloadCells(&ss.Spec.Template, ss.Spec.Selector)
	return []any{ss.Name, fmt.Sprintf("%d/%d", ss.Status.ReadyReplicas, *ss.Spec.Replicas), age(ss.CreationTimestamp), cells[0], cells[1]}
}
