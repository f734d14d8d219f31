package podtrace

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	corev1 "k8s.io/api/core/v1"
)

// Annotation holds the W3C traceparent of a pod's creation trace. The API
// server writes it on create (for sampled pods); the scheduler, the
// controllers and the agent continue that trace from it.
const Annotation = "trace.skiff.io/traceparent"

// DeletionAnnotation holds the traceparent of a pod's deletion trace: the
// API server starts it when it marks the pod deleted, and the agent
// continues it as it stops the pod.
const DeletionAnnotation = "trace.skiff.io/deletion-traceparent"

var traceContext = propagation.TraceContext{}

// Inject writes ctx's span context into the pod's annotation key
// (Annotation or DeletionAnnotation), if the span is sampled.
func Inject(ctx context.Context, pod *corev1.Pod, key string) {
	if !trace.SpanContextFromContext(ctx).IsSampled() {
		return
	}
	carrier := propagation.MapCarrier{}
	traceContext.Inject(ctx, carrier)
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[key] = carrier.Get("traceparent")
}

// parent is the span context the pod's annotation key carries, if valid.
func parent(pod *corev1.Pod, key string) (trace.SpanContext, bool) {
	tp := pod.Annotations[key]
	if tp == "" {
		return trace.SpanContext{}, false
	}
	ctx := traceContext.Extract(context.Background(), propagation.MapCarrier{"traceparent": tp})
	sc := trace.SpanContextFromContext(ctx)
	return sc, sc.IsValid()
}

// Tracer makes the steps of pods' journeys for one component (on one
// node, for an agent). The zero Tracer makes none.
type Tracer struct {
	tracer          trace.Tracer
	component, node string
	annotation      string // the trace it continues: Annotation unless Deletion
}

// NewTracer returns component's tracer from tp; node names the node an
// agent's steps happen on ("" elsewhere).
func NewTracer(tp trace.TracerProvider, component, node string) Tracer {
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	return Tracer{tracer: tp.Tracer("skiff/" + component), component: component, node: node, annotation: Annotation}
}

// Deletion is the tracer of pods' deletion traces.
func (t Tracer) Deletion() Tracer {
	t.annotation = DeletionAnnotation
	return t
}

// Traces says whether pod's steps are recorded: it carries a sampled
// trace and the tracer has a provider. Callers skip building a step's
// attributes when it does not.
func (t Tracer) Traces(pod *corev1.Pod) bool {
	_, ok := parent(pod, t.annotation)
	return ok && t.tracer != nil
}

// Start begins a step of pod's journey, in the trace its annotation
// carries. A pod without one (created untraced, or not sampled) gets a
// span that records nothing.
func (t Tracer) Start(pod *corev1.Pod, name string, opts ...trace.SpanStartOption) trace.Span {
	sc, ok := parent(pod, t.annotation)
	if !ok || t.tracer == nil {
		return noop.Span{}
	}
	ctx := trace.ContextWithRemoteSpanContext(context.Background(), sc)
	_, span := t.tracer.Start(ctx, name, append(opts, trace.WithAttributes(t.podAttrs(pod)...))...)
	return span
}

// Step records a finished step of pod's journey, from start to end, with
// its result; err, if not nil, marks it failed.
func (t Tracer) Step(pod *corev1.Pod, name string, start, end time.Time, err error, attrs ...attribute.KeyValue) {
	span := t.Start(pod, name, trace.WithTimestamp(start), trace.WithAttributes(attrs...))
	End(span, end, err)
}

// End ends span at end (now if zero), failed if err is not nil.
func End(span trace.Span, end time.Time, err error) {
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
	if end.IsZero() {
		end = time.Now()
	}
	span.End(trace.WithTimestamp(end))
}

// PodRef names a pod known without its object: from an EndpointSlice
// endpoint's target, say.
type PodRef struct{ UID, Namespace, Name string }

// Joined records a finished step of the pod ref's journey without the
// pod's trace context: the server joins it to the journey it keeps of
// that UID (AttrJoin), and drops it if it keeps none.
func (t Tracer) Joined(ref PodRef, name string, start, end time.Time, attrs ...attribute.KeyValue) {
	if t.tracer == nil {
		return
	}
	attrs = append(t.attrs(ref), append(attrs, attribute.Bool(AttrJoin, true))...)
	_, span := t.tracer.Start(context.Background(), name, trace.WithTimestamp(start), trace.WithAttributes(attrs...))
	span.End(trace.WithTimestamp(end))
}

// PodAttributes name pod in a span, as every step of its journey does.
func PodAttributes(pod *corev1.Pod) []attribute.KeyValue {
	return refAttributes(PodRef{UID: string(pod.UID), Namespace: pod.Namespace, Name: pod.Name})
}

func refAttributes(ref PodRef) []attribute.KeyValue {
	return []attribute.KeyValue{attribute.String(AttrPodUID, ref.UID),
		attribute.String(AttrPodName, ref.Name), attribute.String(AttrNamespace, ref.Namespace)}
}

func (t Tracer) podAttrs(pod *corev1.Pod) []attribute.KeyValue {
	return t.attrs(PodRef{UID: string(pod.UID), Namespace: pod.Namespace, Name: pod.Name})
}

// attrs are the attributes of each step t records of the pod ref.
func (t Tracer) attrs(ref PodRef) []attribute.KeyValue {
	attrs := append(refAttributes(ref), attribute.String(AttrComponent, t.component))
	if t.node != "" {
		attrs = append(attrs, attribute.String(AttrNode, t.node))
	}
	return attrs
}
