package registry

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// EventStrategy is core/v1 Event.
type EventStrategy struct{ BaseStrategy }

func (EventStrategy) Validate(obj runtime.Object) field.ErrorList {
	ev := obj.(*corev1.Event)
	var errs field.ErrorList
	if ns := ev.InvolvedObject.Namespace; ns != "" && ns != ev.Namespace {
		errs = append(errs, field.Invalid(field.NewPath("involvedObject", "namespace"), ns, "does not match event.namespace"))
	}
	if ev.Type != "" {
		errs = append(errs, validateOneOf(ev.Type, field.NewPath("type"), corev1.EventTypeNormal, corev1.EventTypeWarning)...)
	}
	return errs
}

func (EventStrategy) Fields(obj runtime.Object) fields.Set {
	ev := obj.(*corev1.Event)
	o := ev.InvolvedObject
	source := ev.Source.Component
	if source == "" { // an event of the newer API: its reporter
		source = ev.ReportingController
	}
	return fields.Set{
		"involvedObject.kind":            o.Kind,
		"involvedObject.namespace":       o.Namespace,
		"involvedObject.name":            o.Name,
		"involvedObject.uid":             string(o.UID),
		"involvedObject.apiVersion":      o.APIVersion,
		"involvedObject.resourceVersion": o.ResourceVersion,
		"involvedObject.fieldPath":       o.FieldPath,
		"reason":                         ev.Reason,
		"reportingComponent":             ev.ReportingController,
		"source":                         source,
		"type":                           ev.Type,
	}
}

func (EventStrategy) Columns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		column("Last Seen", "string", "Time since the event was last seen."),
		column("Type", "string", "The type of the event."),
		column("Reason", "string", "Why the event happened."),
		column("Object", "string", "The object the event is about."),
		wideColumn("Subobject", "string", "The part of the object the event is about."),
		wideColumn("Source", "string", "Who reported the event."),
		column("Message", "string", "A human-readable description of the event."),
		wideColumn("First Seen", "string", "Time since the event was first seen."),
		wideColumn("Count", "string", "How often the event was seen."),
		{Name: "Name", Type: "string", Format: "name", Priority: 1, Description: nameColumn.Description},
	}
}

func (EventStrategy) Row(obj runtime.Object) []any {
	ev := obj.(*corev1.Event)
	first := ev.FirstTimestamp
	if first.IsZero() {
		first = metav1.NewTime(ev.EventTime.Time)
	}
	firstSeen := age(first)
	lastSeen := firstSeen
	if !ev.LastTimestamp.IsZero() {
		lastSeen = age(ev.LastTimestamp)
	}
	count := int64(ev.Count)
	if ev.Series != nil {
		lastSeen, count = age(metav1.NewTime(ev.Series.LastObservedTime.Time)), int64(ev.Series.Count)
	}
	if count == 0 {
		count = 1
	}
	object := strings.ToLower(ev.InvolvedObject.Kind)
	if ev.InvolvedObject.Name != "" {
		object += "/" + ev.InvolvedObject.Name
	}
	return []any{lastSeen, ev.Type, ev.Reason, object, ev.InvolvedObject.FieldPath, eventSource(ev),
		strings.TrimSpace(ev.Message), firstSeen, count, ev.Name}
}

func eventSource(ev *corev1.Event) string {
	src := ev.Source.Component
	if src == "" {
		src = ev.ReportingController
	}
	host := ev.Source.Host
	if host == "" {
		host = ev.ReportingInstance
	}
	if host != "" {
		src += ", " + host
	}
	return src
}
