package registry

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// limitRangeStrategy serves core/v1 LimitRanges: per-namespace minimums,
// maximums, defaults and limit/request ratios that the LimitRanger
// admission plugin applies to pods.
type limitRangeStrategy struct{ BaseStrategy }

// PrepareForCreate defaults Container items as Kubernetes does: a missing
// default limit is the max, a missing default request the default limit.
func (limitRangeStrategy) PrepareForCreate(obj runtime.Object) {
	lr := obj.(*corev1.LimitRange)
	for i := range lr.Spec.Limits {
		item := &lr.Spec.Limits[i]
		if item.Type != corev1.LimitTypeContainer {
			continue
		}
		item.Default = withDefaults(item.Default, item.Max)
		item.DefaultRequest = withDefaults(item.DefaultRequest, item.Default)
	}
}

func (s limitRangeStrategy) PrepareForUpdate(obj, _ runtime.Object) { s.PrepareForCreate(obj) }

// withDefaults is list with what it lacks of defaults.
func withDefaults(list, defaults corev1.ResourceList) corev1.ResourceList {
	for name, q := range defaults {
		if _, ok := list[name]; !ok {
			if list == nil {
				list = corev1.ResourceList{}
			}
			list[name] = q.DeepCopy()
		}
	}
	return list
}

func (limitRangeStrategy) Validate(obj runtime.Object) field.ErrorList {
	lr := obj.(*corev1.LimitRange)
	var errs field.ErrorList
	seen := map[corev1.LimitType]bool{}
	for i, item := range lr.Spec.Limits {
		p := field.NewPath("spec", "limits").Index(i)
		switch {
		case item.Type == "":
			errs = append(errs, field.Required(p.Child("type"), ""))
		case seen[item.Type]:
			errs = append(errs, field.Duplicate(p.Child("type"), item.Type))
		}
		seen[item.Type] = true
		if item.Type == corev1.LimitTypePod {
			for name, list := range map[string]corev1.ResourceList{"default": item.Default, "defaultRequest": item.DefaultRequest} {
				if len(list) > 0 {
					errs = append(errs, field.Forbidden(p.Child(name), "may not be specified when `type` is 'Pod'"))
				}
			}
		}
		errs = append(errs, validateLimitRangeItem(item, p)...)
	}
	return errs
}

// validateLimitRangeItem checks each resource's bounds against each other:
// min ≤ defaultRequest ≤ default ≤ max, and 1 ≤ ratio ≤ max/min.
func validateLimitRangeItem(item corev1.LimitRangeItem, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	lists := []struct {
		name string
		list corev1.ResourceList
	}{{"max", item.Max}, {"min", item.Min}, {"default", item.Default}, {"defaultRequest", item.DefaultRequest}, {"maxLimitRequestRatio", item.MaxLimitRequestRatio}}
	for _, l := range lists {
		for name, q := range l.list {
			if q.Sign() < 0 {
				errs = append(errs, field.Invalid(p.Child(l.name).Key(string(name)), q.String(), "must be greater than or equal to 0"))
			}
		}
	}
	order := []struct {
		lowName, highName string
		low, high         corev1.ResourceList
		lowDesc, highDesc string
	}{
		{"min", "max", item.Min, item.Max, "min value", "max value"},
		{"min", "defaultRequest", item.Min, item.DefaultRequest, "min value", "default request value"},
		{"defaultRequest", "max", item.DefaultRequest, item.Max, "default request value", "max value"},
		{"min", "default", item.Min, item.Default, "min value", "default value"},
		{"default", "max", item.Default, item.Max, "default value", "max value"},
		{"defaultRequest", "default", item.DefaultRequest, item.Default, "default request value", "default limit value"},
	}
	for _, o := range order {
		for name, low := range o.low {
			if high, ok := o.high[name]; ok && low.Cmp(high) > 0 {
				errs = append(errs, field.Invalid(p.Child(o.highName).Key(string(name)), high.String(),
					fmt.Sprintf("%s %s is greater than %s %s", o.lowDesc, low.String(), o.highDesc, high.String())))
			}
		}
	}
	one := apiresource.MustParse("1")
	for name, ratio := range item.MaxLimitRequestRatio {
		rp := p.Child("maxLimitRequestRatio").Key(string(name))
		if ratio.Cmp(one) < 0 {
			errs = append(errs, field.Invalid(rp, ratio.String(), fmt.Sprintf("ratio %s is less than 1", ratio.String())))
		}
		lo, hasMin := item.Min[name]
		hi, hasMax := item.Max[name]
		if hasMin && hasMax && lo.Sign() > 0 {
			if most := float64(hi.MilliValue()) / float64(lo.MilliValue()); float64(ratio.MilliValue())/1000 > most {
				errs = append(errs, field.Invalid(rp, ratio.String(), fmt.Sprintf("ratio %s is greater than max/min = %f", ratio.String(), most)))
			}
		}
	}
	return errs
}

func (limitRangeStrategy) Columns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{nameColumn,
		{Name: "Created At", Type: "date", Description: "Time the object was created."}}
}

func (limitRangeStrategy) Row(obj runtime.Object) []any {
	m := ObjectMeta(obj)
	return []any{m.Name, m.CreationTimestamp.UTC().Format("2006-01-02T15:04:05Z")}
}
