package registry

import (
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// events.k8s.io/v1 Events are the core Events seen through the newer API,
// as kube-apiserver serves them: one object under one key, whichever API
// wrote it. The store converts what it reads to the type asked for with
// the conversions below, registered in Scheme.

// AddEventConversions registers in s the conversions between core/v1
// and events.k8s.io/v1 Events.
func AddEventConversions(s *runtime.Scheme) error {
	if err := s.AddConversionFunc((*corev1.Event)(nil), (*eventsv1.Event)(nil), func(a, b any, _ conversion.Scope) error {
		coreToEventsV1(a.(*corev1.Event), b.(*eventsv1.Event))
		return nil
	}); err != nil {
		return err
	}
	return s.AddConversionFunc((*eventsv1.Event)(nil), (*corev1.Event)(nil), func(a, b any, _ conversion.Scope) error {
		eventsV1ToCore(a.(*eventsv1.Event), b.(*corev1.Event))
		return nil
	})
}

func coreToEventsV1(in *corev1.Event, out *eventsv1.Event) {
	*out = eventsv1.Event{
		TypeMeta:   out.TypeMeta,
		ObjectMeta: *in.ObjectMeta.DeepCopy(), EventTime: in.EventTime,
		ReportingController: in.ReportingController, ReportingInstance: in.ReportingInstance,
		Action: in.Action, Reason: in.Reason, Regarding: in.InvolvedObject, Related: in.Related.DeepCopy(),
		Note: in.Message, Type: in.Type, DeprecatedSource: in.Source,
		DeprecatedFirstTimestamp: in.FirstTimestamp, DeprecatedLastTimestamp: in.LastTimestamp, DeprecatedCount: in.Count,
	}
	if in.Series != nil {
		out.Series = &eventsv1.EventSeries{Count: in.Series.Count, LastObservedTime: in.Series.LastObservedTime}
	}
}

func eventsV1ToCore(in *eventsv1.Event, out *corev1.Event) {
	*out = corev1.Event{
		TypeMeta:   out.TypeMeta,
		ObjectMeta: *in.ObjectMeta.DeepCopy(), EventTime: in.EventTime,
		ReportingController: in.ReportingController, ReportingInstance: in.ReportingInstance,
		Action: in.Action, Reason: in.Reason, InvolvedObject: in.Regarding, Related: in.Related.DeepCopy(),
		Message: in.Note, Type: in.Type, Source: in.DeprecatedSource,
		FirstTimestamp: in.DeprecatedFirstTimestamp, LastTimestamp: in.DeprecatedLastTimestamp, Count: in.DeprecatedCount,
	}
	if in.Series != nil {
		out.Series = &corev1.EventSeries{Count: in.Series.Count, LastObservedTime: in.Series.LastObservedTime}
	}
}

// eventsV1Strategy checks what the events.k8s.io API requires of a new
// event (kube-apiserver's rules for it): who reported it, what happened
// and when.
type eventsV1Strategy struct{ BaseStrategy }

func (eventsV1Strategy) Validate(obj runtime.Object) field.ErrorList {
	ev := obj.(*eventsv1.Event)
	var errs field.ErrorList
	if ev.EventTime.IsZero() {
		errs = append(errs, field.Required(field.NewPath("eventTime"), ""))
	}
	for name, v := range map[string]string{"reportingController": ev.ReportingController, "reportingInstance": ev.ReportingInstance,
		"action": ev.Action, "reason": ev.Reason} {
		switch {
		case v == "":
			errs = append(errs, field.Required(field.NewPath(name), ""))
		case len(v) > 128:
			errs = append(errs, field.TooLong(field.NewPath(name), "", 128))
		}
	}
	if len(ev.Note) > 1024 {
		errs = append(errs, field.TooLong(field.NewPath("note"), "", 1024))
	}
	if ns := ev.Regarding.Namespace; ns != "" && ns != ev.Namespace {
		errs = append(errs, field.Invalid(field.NewPath("regarding", "namespace"), ns, "does not match event.namespace"))
	}
	if ev.Type != "" {
		errs = append(errs, validateOneOf(ev.Type, field.NewPath("type"), corev1.EventTypeNormal, corev1.EventTypeWarning)...)
	}
	return errs
}

// eventsV1Fields are the field selectors of events.k8s.io: the core
// API's fields under this API's names.
var eventsV1Fields = map[string]string{
	"reason": "reason", "type": "type", "reportingController": "reportingComponent",
	"regarding.kind": "involvedObject.kind", "regarding.namespace": "involvedObject.namespace",
	"regarding.name": "involvedObject.name", "regarding.uid": "involvedObject.uid",
	"regarding.apiVersion": "involvedObject.apiVersion", "regarding.resourceVersion": "involvedObject.resourceVersion",
	"regarding.fieldPath": "involvedObject.fieldPath",
}

// Fields are those of the one stored object, named as this API names them.
func (eventsV1Strategy) Fields(obj runtime.Object) fields.Set {
	var core corev1.Event
	eventsV1ToCore(obj.(*eventsv1.Event), &core)
	coreFields := EventStrategy{}.Fields(&core)
	out := fields.Set{}
	for name, coreName := range eventsV1Fields {
		out[name] = coreFields[coreName]
	}
	return out
}
