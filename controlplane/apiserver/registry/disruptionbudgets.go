package registry

import (
	"regexp"
	"strconv"

	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// PodDisruptionBudgets (policy/v1) are kube-apiserver's: at most one of
// minAvailable and maxUnavailable, each a count or a percentage; the
// disruption controller writes their status, the eviction subresource
// reads it.

type disruptionBudgetStrategy struct{ BaseStrategy }

var _ SubresourceValidator = disruptionBudgetStrategy{}

func (disruptionBudgetStrategy) PrepareForCreate(obj runtime.Object) {
	obj.(*policyv1.PodDisruptionBudget).Status = policyv1.PodDisruptionBudgetStatus{}
}

func (disruptionBudgetStrategy) Validate(obj runtime.Object) field.ErrorList {
	return validateDisruptionBudgetSpec(&obj.(*policyv1.PodDisruptionBudget).Spec)
}

func (disruptionBudgetStrategy) ValidateSubresourceUpdate(_ string, obj, _ runtime.Object) field.ErrorList {
	return validateDisruptionBudgetStatus(&obj.(*policyv1.PodDisruptionBudget).Status)
}

func validateDisruptionBudgetSpec(spec *policyv1.PodDisruptionBudgetSpec) field.ErrorList {
	path := field.NewPath("spec")
	var errs field.ErrorList
	if spec.MinAvailable != nil && spec.MaxUnavailable != nil {
		errs = append(errs, field.Invalid(path, spec, "minAvailable and maxUnavailable cannot be both set"))
	}
	for name, v := range map[string]*intstr.IntOrString{"minAvailable": spec.MinAvailable, "maxUnavailable": spec.MaxUnavailable} {
		if v != nil {
			errs = append(errs, validateCountOrPercent(*v, path.Child(name))...)
		}
	}
	if spec.Selector != nil {
		errs = append(errs, validateLabelSelector(spec.Selector, path.Child("selector"))...)
	}
	if p := spec.UnhealthyPodEvictionPolicy; p != nil {
		errs = append(errs, validateOneOf(*p, path.Child("unhealthyPodEvictionPolicy"), policyv1.AlwaysAllow, policyv1.IfHealthyBudget)...)
	}
	return errs
}

var percent = regexp.MustCompile(`^[0-9]+%$`)

// validateCountOrPercent checks a non-negative count or a percentage of
// at most 100.
func validateCountOrPercent(v intstr.IntOrString, path *field.Path) field.ErrorList {
	if v.Type == intstr.Int {
		return validateNonNegative(int64(v.IntVal), path)
	}
	if !percent.MatchString(v.StrVal) {
		return field.ErrorList{field.Invalid(path, v, "must be an integer or percentage (e.g '5%')")}
	}
	if n, _ := strconv.Atoi(v.StrVal[:len(v.StrVal)-1]); n > 100 {
		return field.ErrorList{field.Invalid(path, v, "must not be greater than 100%")}
	}
	return nil
}

func validateDisruptionBudgetStatus(st *policyv1.PodDisruptionBudgetStatus) field.ErrorList {
	path := field.NewPath("status")
	errs := metav1validation.ValidateConditions(st.Conditions, path.Child("conditions"))
	for name, v := range map[string]int32{"disruptionsAllowed": st.DisruptionsAllowed, "currentHealthy": st.CurrentHealthy,
		"desiredHealthy": st.DesiredHealthy, "expectedPods": st.ExpectedPods} {
		errs = append(errs, validateNonNegative(int64(v), path.Child(name))...)
	}
	return errs
}

func (disruptionBudgetStrategy) Columns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		nameColumn,
		column("Min Available", "string", "The minimum number of pods that must be available."),
		column("Max Unavailable", "string", "The maximum number of pods that may be unavailable."),
		column("Allowed Disruptions", "integer", "Calculated number of pods that may be disrupted at this time."),
		ageColumn,
	}
}

func (disruptionBudgetStrategy) Row(obj runtime.Object) []any {
	pdb := obj.(*policyv1.PodDisruptionBudget)
	cell := func(v *intstr.IntOrString) string {
		if v == nil {
			return "N/A"
		}
		return v.String()
	}
	return []any{pdb.Name, cell(pdb.Spec.MinAvailable), cell(pdb.Spec.MaxUnavailable), int64(pdb.Status.DisruptionsAllowed), age(pdb.CreationTimestamp)}
}
