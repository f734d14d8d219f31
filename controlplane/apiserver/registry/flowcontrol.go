package registry

import (
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// FlowSchemas and PriorityLevelConfigurations are served as the API
// objects of API priority and fairness; skiff's API server does not queue
// requests by them (yet).

type flowSchemaStrategy struct{ BaseStrategy }

func (flowSchemaStrategy) PrepareForCreate(obj runtime.Object) {
	fs := obj.(*flowcontrolv1.FlowSchema)
	fs.Status = flowcontrolv1.FlowSchemaStatus{}
	defaultFlowSchema(fs)
}

func (flowSchemaStrategy) PrepareForUpdate(obj, _ runtime.Object) {
	defaultFlowSchema(obj.(*flowcontrolv1.FlowSchema))
}

func defaultFlowSchema(fs *flowcontrolv1.FlowSchema) {
	if fs.Spec.MatchingPrecedence == 0 {
		fs.Spec.MatchingPrecedence = 1000
	}
}

func (flowSchemaStrategy) Validate(obj runtime.Object) field.ErrorList {
	s := obj.(*flowcontrolv1.FlowSchema).Spec
	path := field.NewPath("spec")
	var errs field.ErrorList
	if s.MatchingPrecedence < 1 || s.MatchingPrecedence > 10000 {
		errs = append(errs, field.Invalid(path.Child("matchingPrecedence"), s.MatchingPrecedence, "must be between 1 and 10000, inclusive"))
	}
	if s.PriorityLevelConfiguration.Name == "" {
		errs = append(errs, field.Required(path.Child("priorityLevelConfiguration", "name"), "must reference a priority level"))
	}
	if d := s.DistinguisherMethod; d != nil {
		errs = append(errs, validateOneOf(d.Type, path.Child("distinguisherMethod", "type"),
			flowcontrolv1.FlowDistinguisherMethodByUserType, flowcontrolv1.FlowDistinguisherMethodByNamespaceType)...)
	}
	for i, r := range s.Rules {
		rp := path.Child("rules").Index(i)
		if len(r.Subjects) == 0 {
			errs = append(errs, field.Required(rp.Child("subjects"), "subjects must contain at least one value"))
		}
		for j, sub := range r.Subjects {
			errs = append(errs, validateOneOf(sub.Kind, rp.Child("subjects").Index(j).Child("kind"),
				flowcontrolv1.SubjectKindUser, flowcontrolv1.SubjectKindGroup, flowcontrolv1.SubjectKindServiceAccount)...)
		}
		if len(r.ResourceRules)+len(r.NonResourceRules) == 0 {
			errs = append(errs, field.Required(rp, "at least one of resourceRules and nonResourceRules has to be non-empty"))
		}
	}
	return errs
}

func (flowSchemaStrategy) Columns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{nameColumn, column("PriorityLevel", "string", "The priority level of its requests."),
		column("MatchingPrecedence", "integer", "Lower values match first."), ageColumn}
}

func (flowSchemaStrategy) Row(obj runtime.Object) []any {
	fs := obj.(*flowcontrolv1.FlowSchema)
	return []any{fs.Name, fs.Spec.PriorityLevelConfiguration.Name, int64(fs.Spec.MatchingPrecedence), age(fs.CreationTimestamp)}
}

type priorityLevelStrategy struct{ BaseStrategy }

func (priorityLevelStrategy) PrepareForCreate(obj runtime.Object) {
	pl := obj.(*flowcontrolv1.PriorityLevelConfiguration)
	pl.Status = flowcontrolv1.PriorityLevelConfigurationStatus{}
	defaultPriorityLevel(pl)
}

func (priorityLevelStrategy) PrepareForUpdate(obj, _ runtime.Object) {
	defaultPriorityLevel(obj.(*flowcontrolv1.PriorityLevelConfiguration))
}

// defaultPriorityLevel sets the v1 API's defaults of a Limited level.
func defaultPriorityLevel(pl *flowcontrolv1.PriorityLevelConfiguration) {
	l := pl.Spec.Limited
	if l == nil {
		return
	}
	if l.NominalConcurrencyShares == nil {
		l.NominalConcurrencyShares = ptr.To[int32](30)
	}
	if l.LendablePercent == nil {
		l.LendablePercent = ptr.To[int32](0)
	}
	if q := l.LimitResponse.Queuing; l.LimitResponse.Type == flowcontrolv1.LimitResponseTypeQueue && q != nil {
		for _, d := range []struct {
			v   *int32
			def int32
		}{{&q.Queues, 64}, {&q.HandSize, 8}, {&q.QueueLengthLimit, 50}} {
			if *d.v == 0 {
				*d.v = d.def
			}
		}
	}
}

func (priorityLevelStrategy) Validate(obj runtime.Object) field.ErrorList {
	s := obj.(*flowcontrolv1.PriorityLevelConfiguration).Spec
	path := field.NewPath("spec")
	errs := validateOneOf(s.Type, path.Child("type"), flowcontrolv1.PriorityLevelEnablementExempt, flowcontrolv1.PriorityLevelEnablementLimited)
	switch {
	case s.Type == flowcontrolv1.PriorityLevelEnablementLimited && s.Limited == nil:
		errs = append(errs, field.Required(path.Child("limited"), "must not be empty when type is Limited"))
	case s.Type == flowcontrolv1.PriorityLevelEnablementExempt && s.Limited != nil:
		errs = append(errs, field.Forbidden(path.Child("limited"), "must be nil if the type is not Limited"))
	case s.Limited != nil:
		l, lp := s.Limited, path.Child("limited")
		if l.LendablePercent != nil && (*l.LendablePercent < 0 || *l.LendablePercent > 100) {
			errs = append(errs, field.Invalid(lp.Child("lendablePercent"), *l.LendablePercent, "must be between 0 and 100, inclusive"))
		}
		errs = append(errs, validateOneOf(l.LimitResponse.Type, lp.Child("limitResponse", "type"),
			flowcontrolv1.LimitResponseTypeQueue, flowcontrolv1.LimitResponseTypeReject)...)
		if q := l.LimitResponse.Queuing; q != nil && q.HandSize > q.Queues {
			errs = append(errs, field.Invalid(lp.Child("limitResponse", "queuing", "handSize"), q.HandSize, "should not be greater than queues"))
		}
	}
	return errs
}

func (priorityLevelStrategy) Columns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{nameColumn, column("Type", "string", "Exempt or Limited."), ageColumn}
}

func (priorityLevelStrategy) Row(obj runtime.Object) []any {
	pl := obj.(*flowcontrolv1.PriorityLevelConfiguration)
	return []any{pl.Name, string(pl.Spec.Type), age(pl.CreationTimestamp)}
}
