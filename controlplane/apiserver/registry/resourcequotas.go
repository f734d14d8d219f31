package registry

import (
	"fmt"
	"slices"
	"strings"

	"github.com/skiff-lab/skiff/controlplane/quota"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// resourceQuotaStrategy serves core/v1 ResourceQuotas: spec.hard is what
// a namespace may use; status (hard and used) is the resource quota
// controller's and the quota admission plugin's.
type resourceQuotaStrategy struct{ BaseStrategy }

func (resourceQuotaStrategy) PrepareForCreate(obj runtime.Object) {
	obj.(*corev1.ResourceQuota).Status = corev1.ResourceQuotaStatus{}
}

func (resourceQuotaStrategy) Validate(obj runtime.Object) field.ErrorList {
	rq := obj.(*corev1.ResourceQuota)
	var errs field.ErrorList
	for name, q := range rq.Spec.Hard {
		p := field.NewPath("spec", "hard").Key(string(name))
		for _, msg := range quota.ValidName(name) {
			errs = append(errs, field.Invalid(p, string(name), msg))
		}
		if q.Sign() < 0 {
			errs = append(errs, field.Invalid(p, q.String(), "must be greater than or equal to 0"))
		}
	}
	for i, s := range rq.Spec.Scopes {
		if !slices.Contains(quota.Scopes, s) {
			errs = append(errs, field.NotSupported(field.NewPath("spec", "scopes").Index(i), s, quota.Scopes))
		}
	}
	if rq.Spec.ScopeSelector != nil {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "scopeSelector"), "not supported; use spec.scopes"))
	}
	return errs
}

func (resourceQuotaStrategy) Columns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{nameColumn, ageColumn,
		column("Request", "string", "Request represents a minimum amount of cpu/memory that a container may consume."),
		column("Limit", "string", "Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node."),
	}
}

// Row shows "name: used/hard" for each resource, limits.* under Limit.
func (resourceQuotaStrategy) Row(obj runtime.Object) []any {
	rq := obj.(*corev1.ResourceQuota)
	var requests, limits []string
	names := make([]string, 0, len(rq.Status.Hard))
	for name := range rq.Status.Hard {
		names = append(names, string(name))
	}
	slices.Sort(names)
	for _, name := range names {
		hard, used := rq.Status.Hard[corev1.ResourceName(name)], rq.Status.Used[corev1.ResourceName(name)]
		cell := fmt.Sprintf("%s: %s/%s", name, used.String(), hard.String())
		if strings.HasPrefix(name, "limits.") {
			limits = append(limits, cell)
		} else {
			requests = append(requests, cell)
		}
	}
	return []any{rq.Name, age(rq.CreationTimestamp), strings.Join(requests, ", "), strings.Join(limits, ", ")}
}
