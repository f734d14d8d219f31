package registry

import (
	"fmt"
	"reflect"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// PodStrategy is core/v1 Pod.
type PodStrategy struct{ BaseStrategy }

var _ Graceful = PodStrategy{}

func (PodStrategy) PrepareForCreate(obj runtime.Object) {
	pod := obj.(*corev1.Pod)
	defaultPodSpec(&pod.Spec)
	if pod.Spec.ServiceAccountName == "" {
		pod.Spec.ServiceAccountName = "default"
	}
	pod.Spec.DeprecatedServiceAccount = pod.Spec.ServiceAccountName
	pod.Status = corev1.PodStatus{Phase: corev1.PodPending, QOSClass: qosClass(&pod.Spec)}
}

func (PodStrategy) Validate(obj runtime.Object) field.ErrorList {
	pod := obj.(*corev1.Pod)
	return validatePodSpec(&pod.Spec, field.NewPath("spec"))
}

// ValidateCreate: ephemeral containers come only later, through their
// subresource.
func (PodStrategy) ValidateCreate(obj runtime.Object) field.ErrorList {
	if len(obj.(*corev1.Pod).Spec.EphemeralContainers) > 0 {
		return field.ErrorList{field.Forbidden(field.NewPath("spec", "ephemeralContainers"), "cannot be set on create")}
	}
	return nil
}

func (PodStrategy) PrepareForUpdate(obj, old runtime.Object) {
	defaultPodSpec(&obj.(*corev1.Pod).Spec)
}

// ValidateUpdate allows a pod's spec to change only in its images, its
// activeDeadlineSeconds and by added tolerations.
func (PodStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	spec, oldSpec := &obj.(*corev1.Pod).Spec, &old.(*corev1.Pod).Spec
	path := field.NewPath("spec")
	var errs field.ErrorList
	munged := spec.DeepCopy()
	if len(munged.Containers) == len(oldSpec.Containers) {
		for i := range munged.Containers {
			munged.Containers[i].Image = oldSpec.Containers[i].Image
		}
	}
	if len(munged.InitContainers) == len(oldSpec.InitContainers) {
		for i := range munged.InitContainers {
			munged.InitContainers[i].Image = oldSpec.InitContainers[i].Image
		}
	}
	if d, od := spec.ActiveDeadlineSeconds, oldSpec.ActiveDeadlineSeconds; od != nil && (d == nil || *d > *od) {
		errs = append(errs, field.Invalid(path.Child("activeDeadlineSeconds"), d, "must be less than or equal to previous value"))
	}
	munged.ActiveDeadlineSeconds = oldSpec.ActiveDeadlineSeconds
	if !tolerationsAdded(spec.Tolerations, oldSpec.Tolerations) {
		errs = append(errs, field.Forbidden(path.Child("tolerations"), "existing toleration can not be modified except its tolerationSeconds"))
	}
	munged.Tolerations = oldSpec.Tolerations
	if !apiequality.Semantic.DeepEqual(munged, oldSpec) {
		errs = append(errs, field.Forbidden(path, "pod updates may not change fields other than `spec.containers[*].image`,"+
			"`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations)"))
	}
	return errs
}

// tolerationsAdded reports whether ts keeps every toleration of old (a
// NoExecute toleration may shorten its tolerationSeconds).
func tolerationsAdded(ts, old []corev1.Toleration) bool {
	for _, o := range old {
		found := false
		for _, t := range ts {
			if t.Key == o.Key && t.Operator == o.Operator && t.Value == o.Value && t.Effect == o.Effect &&
				(reflect.DeepEqual(t.TolerationSeconds, o.TolerationSeconds) ||
					(o.TolerationSeconds != nil && t.TolerationSeconds != nil && *t.TolerationSeconds <= *o.TolerationSeconds)) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func (PodStrategy) Fields(obj runtime.Object) fields.Set {
	pod := obj.(*corev1.Pod)
	return fields.Set{
		"spec.nodeName":            pod.Spec.NodeName,
		"spec.restartPolicy":       string(pod.Spec.RestartPolicy),
		"spec.schedulerName":       pod.Spec.SchedulerName,
		"spec.serviceAccountName":  pod.Spec.ServiceAccountName,
		"spec.hostNetwork":         strconv.FormatBool(pod.Spec.HostNetwork),
		"status.phase":             string(pod.Status.Phase),
		"status.podIP":             pod.Status.PodIP,
		"status.nominatedNodeName": pod.Status.NominatedNodeName,
	}
}

// GracePeriod: an unbound or finished pod goes at once; a running one gets
// the requested period or its terminationGracePeriodSeconds.
func (PodStrategy) GracePeriod(obj runtime.Object, requested *int64) int64 {
	pod := obj.(*corev1.Pod)
	if pod.Spec.NodeName == "" || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return 0
	}
	if requested != nil {
		return *requested
	}
	if g := pod.Spec.TerminationGracePeriodSeconds; g != nil {
		return *g
	}
	return corev1.DefaultTerminationGracePeriodSeconds
}

func (PodStrategy) Columns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		nameColumn,
		column("Ready", "string", "The aggregate readiness state of this pod for accepting traffic."),
		column("Status", "string", "The aggregate status of the containers in this pod."),
		column("Restarts", "string", "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted."),
		ageColumn,
		wideColumn("IP", "string", "IP address allocated to the pod."),
		wideColumn("Node", "string", "Name of the node the pod is assigned to."),
		wideColumn("Nominated Node", "string", "Name of the node the pod is nominated to."),
		wideColumn("Readiness Gates", "string", "The readiness gates of the pod."),
	}
}

func (PodStrategy) Row(obj runtime.Object) []any {
	pod := obj.(*corev1.Pod)
	s := summarizePod(pod)
	ip := "<none>"
	if len(pod.Status.PodIPs) > 0 {
		ip = pod.Status.PodIPs[0].IP
	} else if pod.Status.PodIP != "" {
		ip = pod.Status.PodIP
	}
	return []any{pod.Name, fmt.Sprintf("%d/%d", s.ready, s.total), s.reason, s.restartsCell(), age(pod.CreationTimestamp),
		ip, orNone(pod.Spec.NodeName), orNone(pod.Status.NominatedNodeName), readinessGates(pod)}
}

func readinessGates(pod *corev1.Pod) string {
	if len(pod.Spec.ReadinessGates) == 0 {
		return "<none>"
	}
	trueGates := 0
	for _, g := range pod.Spec.ReadinessGates {
		for _, c := range pod.Status.Conditions {
			if c.Type == g.ConditionType {
				if c.Status == corev1.ConditionTrue {
					trueGates++
				}
				break
			}
		}
	}
	return fmt.Sprintf("%d/%d", trueGates, len(pod.Spec.ReadinessGates))
}

// podSummary is what kubectl shows of a pod: ready/total containers, a
// one-word status and the restarts.
type podSummary struct {
	ready, total int
	reason       string
	restarts     int32
	lastRestart  time.Time
}

func (s podSummary) restartsCell() string {
	if s.restarts == 0 || s.lastRestart.IsZero() {
		return strconv.Itoa(int(s.restarts))
	}
	return fmt.Sprintf("%d (%s ago)", s.restarts, duration.HumanDuration(time.Since(s.lastRestart)))
}

// keepsMetadataOnStatus: a pod's status update changes its status only,
// as kube-apiserver resets the rest.
func (PodStrategy) keepsMetadataOnStatus() {}
