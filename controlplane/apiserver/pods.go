package apiserver

import (
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

type podStrategy struct{ baseStrategy }

var _ graceful = podStrategy{}

func (podStrategy) prepareForCreate(obj runtime.Object) {
	pod := obj.(*corev1.Pod)
	defaultPodSpec(&pod.Spec)
	if pod.Spec.ServiceAccountName == "" {
		pod.Spec.ServiceAccountName = "default"
	}
	pod.Spec.DeprecatedServiceAccount = pod.Spec.ServiceAccountName
	pod.Status = corev1.PodStatus{Phase: corev1.PodPending, QOSClass: qosClass(&pod.Spec)}
}

func (podStrategy) validate(obj runtime.Object) field.ErrorList {
	pod := obj.(*corev1.Pod)
	return validatePodSpec(&pod.Spec, field.NewPath("spec"))
}

// validateCreate: ephemeral containers come only later, through their
// subresource.
func (podStrategy) validateCreate(obj runtime.Object) field.ErrorList {
	if len(obj.(*corev1.Pod).Spec.EphemeralContainers) > 0 {
		return field.ErrorList{field.Forbidden(field.NewPath("spec", "ephemeralContainers"), "cannot be set on create")}
	}
	return nil
}

func (podStrategy) prepareForUpdate(obj, old runtime.Object) {
	defaultPodSpec(&obj.(*corev1.Pod).Spec)
}

// validateUpdate allows a pod's spec to change only in its images, its
// activeDeadlineSeconds and by added tolerations.
func (podStrategy) validateUpdate(obj, old runtime.Object) field.ErrorList {
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

func (podStrategy) fields(obj runtime.Object) fields.Set {
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

// gracePeriod: an unbound or finished pod goes at once; a running one gets
// the requested period or its terminationGracePeriodSeconds.
func (podStrategy) gracePeriod(obj runtime.Object, requested *int64) int64 {
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

func (podStrategy) columns() []metav1.TableColumnDefinition {
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

func (podStrategy) row(obj runtime.Object) []any {
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

// bind assigns a pod to a node (pods/binding).
func (s *Server) bind(w http.ResponseWriter, r *http.Request, req request) error {
	binding := &corev1.Binding{}
	if err := decodeBody(w, r, corev1.SchemeGroupVersion.WithKind("Binding"), binding); err != nil {
		return err
	}
	if binding.Name == "" {
		binding.Name = req.name
	}
	if err := checkIdentity(req, binding); err != nil {
		return err
	}
	if binding.Target.Kind != "" && binding.Target.Kind != "Node" {
		return invalid(corev1.SchemeGroupVersion.WithKind("Binding").GroupKind(), binding.Name,
			field.ErrorList{field.NotSupported(field.NewPath("target", "kind"), binding.Target.Kind, []string{"Node"})})
	}
	if binding.Target.Name == "" {
		return invalid(corev1.SchemeGroupVersion.WithKind("Binding").GroupKind(), binding.Name,
			field.ErrorList{field.Required(field.NewPath("target", "name"), "")})
	}
	pod := &corev1.Pod{}
	err := s.store.Update(r.Context(), req.res.key(req.namespace, req.name), pod, func(cur runtime.Object) (runtime.Object, error) {
		p := cur.(*corev1.Pod)
		if p.DeletionTimestamp != nil {
			return nil, apierrors.NewConflict(req.res.groupResource(), req.name, fmt.Errorf("pod %s is being deleted, cannot be assigned to a host", req.name))
		}
		if p.Spec.NodeName != "" {
			return nil, apierrors.NewConflict(req.res.groupResource(), req.name, fmt.Errorf("pod %s is already assigned to node %q", req.name, p.Spec.NodeName))
		}
		if binding.UID != "" && binding.UID != p.UID {
			return nil, apierrors.NewConflict(req.res.groupResource(), req.name, fmt.Errorf("pod uid %s does not match binding", p.UID))
		}
		p.Spec.NodeName = binding.Target.Name
		setPodCondition(&p.Status, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now()})
		return p, nil
	})
	if err != nil {
		return storeError(err, req.res.groupResource(), req.name)
	}
	writeJSON(w, http.StatusCreated, successStatus(nil))
	return nil
}

func setPodCondition(status *corev1.PodStatus, c corev1.PodCondition) {
	for i := range status.Conditions {
		if status.Conditions[i].Type == c.Type {
			if status.Conditions[i].Status == c.Status {
				c.LastTransitionTime = status.Conditions[i].LastTransitionTime
			}
			status.Conditions[i] = c
			return
		}
	}
	status.Conditions = append(status.Conditions, c)
}

// evict deletes a pod through pods/eviction with the eviction's options.
func (s *Server) evict(w http.ResponseWriter, r *http.Request, req request) error {
	eviction := &policyv1.Eviction{}
	if err := decodeBody(w, r, policyv1.SchemeGroupVersion.WithKind("Eviction"), eviction); err != nil {
		return err
	}
	if eviction.Name == "" {
		eviction.Name = req.name
	}
	if err := checkIdentity(req, eviction); err != nil {
		return err
	}
	opts := eviction.DeleteOptions
	if opts == nil {
		opts = &metav1.DeleteOptions{}
	}
	if err := validateDeleteOptions(opts); err != nil {
		return err
	}
	if _, _, err := s.deleteOne(r.Context(), req.res, req.namespace, req.name, opts); err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, successStatus(nil))
	return nil
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
func (podStrategy) keepsMetadataOnStatus() {}
