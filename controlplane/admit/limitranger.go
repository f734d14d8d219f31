package admit

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apiserver/pkg/admission"
	podresource "k8s.io/component-helpers/resource"
)

// limitRangerAnnotation records on a pod which defaults LimitRanger set.
const limitRangerAnnotation = "kubernetes.io/limit-ranger"

// LimitRanges lists a namespace's LimitRanges.
type LimitRanges interface {
	LimitRanges(ctx context.Context, namespace string) ([]*v1.LimitRange, error)
}

// LimitRanger applies a namespace's LimitRanges to new pods, as
// kube-apiserver's plugin of that name: a container without a limit or a
// request for a resource gets the Container item's default and
// defaultRequest (noted in the kubernetes.io/limit-ranger annotation), and
// a pod whose containers (Container items) or sums (Pod items) fall below
// min, above max or over maxLimitRequestRatio is refused, when created or
// resized (pods/resize).
type LimitRanger struct {
	*admission.Handler
	ranges LimitRanges
}

// NewLimitRanger returns the plugin.
func NewLimitRanger(ranges LimitRanges) *LimitRanger {
	return &LimitRanger{Handler: admission.NewHandler(admission.Create, admission.Update), ranges: ranges}
}

// newPod returns the pod a create or an update of the pod itself admits,
// if that is what a is.
func newPod(a admission.Attributes) (*v1.Pod, bool) {
	pod, ok := a.GetObject().(*v1.Pod)
	return pod, ok && a.GetResource().GroupResource() == podsResource && a.GetSubresource() == ""
}

// createdPod returns the pod a create admits, if that is what a is.
func createdPod(a admission.Attributes) (*v1.Pod, bool) {
	pod, ok := newPod(a)
	return pod, ok && a.GetOperation() == admission.Create
}

// resizedPod returns the pod a resize (an update through pods/resize)
// admits, if that is what a is.
func resizedPod(a admission.Attributes) (*v1.Pod, bool) {
	pod, ok := a.GetObject().(*v1.Pod)
	return pod, ok && a.GetResource().GroupResource() == podsResource && a.GetSubresource() == "resize" && a.GetOperation() == admission.Update
}

// Admit sets the default limits and requests.
func (l *LimitRanger) Admit(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	pod, ok := createdPod(a)
	if !ok {
		return nil
	}
	ranges, err := l.ranges.LimitRanges(ctx, a.GetNamespace())
	if err != nil {
		return admission.NewForbidden(a, fmt.Errorf("error listing LimitRanges: %w", err))
	}
	var notes []string
	for _, lr := range ranges {
		for _, item := range lr.Spec.Limits {
			if item.Type == v1.LimitTypeContainer {
				notes = append(notes, setDefaults(pod, item)...)
			}
		}
	}
	if len(notes) > 0 {
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		pod.Annotations[limitRangerAnnotation] = "LimitRanger plugin set: " + strings.Join(notes, "; ")
	}
	return nil
}

// setDefaults gives each container the item's defaults it lacks and
// describes what it set.
func setDefaults(pod *v1.Pod, item v1.LimitRangeItem) []string {
	var notes []string
	for _, cs := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			c := &cs[i]
			requests := fill(&c.Resources.Requests, item.DefaultRequest)
			limits := fill(&c.Resources.Limits, item.Default)
			if len(requests) > 0 {
				notes = append(notes, fmt.Sprintf("%s request for container %s", strings.Join(requests, ", "), c.Name))
			}
			if len(limits) > 0 {
				notes = append(notes, fmt.Sprintf("%s limit for container %s", strings.Join(limits, ", "), c.Name))
			}
		}
	}
	return notes
}

// fill sets into *list the defaults it lacks and names them, sorted.
func fill(list *v1.ResourceList, defaults v1.ResourceList) []string {
	var set []string
	for name, q := range defaults {
		if _, ok := (*list)[name]; ok {
			continue
		}
		if *list == nil {
			*list = v1.ResourceList{}
		}
		(*list)[name] = q.DeepCopy()
		set = append(set, string(name))
	}
	slices.Sort(set)
	return set
}

// Validate refuses a pod outside its namespace's ranges.
func (l *LimitRanger) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	pod, ok := createdPod(a)
	if !ok {
		if pod, ok = resizedPod(a); !ok {
			return nil
		}
	}
	ranges, err := l.ranges.LimitRanges(ctx, a.GetNamespace())
	if err != nil {
		return admission.NewForbidden(a, fmt.Errorf("error listing LimitRanges: %w", err))
	}
	var errs []error
	for _, lr := range ranges {
		for _, item := range lr.Spec.Limits {
			switch item.Type {
			case v1.LimitTypeContainer:
				for _, c := range append(slices.Clone(pod.Spec.InitContainers), pod.Spec.Containers...) {
					errs = append(errs, checkBounds(string(item.Type), item, c.Resources.Requests, c.Resources.Limits)...)
				}
			case v1.LimitTypePod:
				requests := podresource.PodRequests(pod, podresource.PodResourcesOptions{})
				limits := podresource.PodLimits(pod, podresource.PodResourcesOptions{})
				errs = append(errs, checkBounds(string(item.Type), item, requests, limits)...)
			}
		}
	}
	if len(errs) > 0 {
		return admission.NewForbidden(a, utilerrors.NewAggregate(errs))
	}
	return nil
}

// checkBounds compares requests and limits with the item's min, max and
// ratio, with kube-apiserver's messages.
func checkBounds(kind string, item v1.LimitRangeItem, requests, limits v1.ResourceList) []error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(item.Min)) {
		min := item.Min[name]
		req, hasReq := requests[name]
		lim, hasLim := limits[name]
		switch {
		case !hasReq:
			errs = append(errs, fmt.Errorf("minimum %s usage per %s is %s.  No request is specified", name, kind, min.String()))
		case less(req, min):
			errs = append(errs, fmt.Errorf("minimum %s usage per %s is %s, but request is %s", name, kind, min.String(), req.String()))
		case hasLim && less(lim, min):
			errs = append(errs, fmt.Errorf("minimum %s usage per %s is %s, but limit is %s", name, kind, min.String(), lim.String()))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(item.Max)) {
		max := item.Max[name]
		req, hasReq := requests[name]
		lim, hasLim := limits[name]
		switch {
		case !hasLim:
			errs = append(errs, fmt.Errorf("maximum %s usage per %s is %s.  No limit is specified", name, kind, max.String()))
		case less(max, lim):
			errs = append(errs, fmt.Errorf("maximum %s usage per %s is %s, but limit is %s", name, kind, max.String(), lim.String()))
		case hasReq && less(max, req):
			errs = append(errs, fmt.Errorf("maximum %s usage per %s is %s, but request is %s", name, kind, max.String(), req.String()))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(item.MaxLimitRequestRatio)) {
		ratio := item.MaxLimitRequestRatio[name]
		req, lim := requests[name], limits[name]
		switch {
		case req.IsZero():
			errs = append(errs, fmt.Errorf("%s max limit to request ratio per %s is %s, but no request is specified or request is 0", name, kind, ratio.String()))
		case lim.IsZero():
			errs = append(errs, fmt.Errorf("%s max limit to request ratio per %s is %s, but no limit is specified or limit is 0", name, kind, ratio.String()))
		default:
			observed := float64(lim.MilliValue()) / float64(req.MilliValue())
			if observed > float64(ratio.MilliValue())/1000 {
				errs = append(errs, fmt.Errorf("%s max limit to request ratio per %s is %s, but provided ratio is %f", name, kind, ratio.String(), observed))
			}
		}
	}
	return errs
}

func less(a, b resource.Quantity) bool { return a.Cmp(b) < 0 }
