package apiserver

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"

	"github.com/skiff-lab/skiff/controlplane/apiserver/registry"
	"github.com/skiff-lab/skiff/podtrace"
)

// createTrace is the first part of a pod's journey: its create request,
// timed phase by phase. The phases become spans once the pod has its UID,
// which every span of the journey carries. A graceful delete request
// starts the pod's deletion trace the same way, without phases.
type createTrace struct {
	ctx        context.Context // holds the root span
	span       trace.Span
	annotation string // where the trace's context goes in the pod
	phases     []phase
	mutated    []string // "Plugin: field, field" for each admission plugin that changed the pod
}

type phase struct {
	name       string
	start, end time.Time
}

// The phases of a create request.
const (
	phaseAdmission  = "apiserver.admission"  // mutating admission and defaults
	phaseValidation = "apiserver.validation" // validation and validating admission
	phaseWrite      = "etcd.write"
)

type createTraceKey struct{}

// startCreateTrace begins the trace of a pod's creation, from when the
// request arrived, continuing the trace a traceparent header names (as
// kube-apiserver's tracing does). Requests other than a pod's create get
// nil, and ctx as it is.
func (s *Server) startCreateTrace(r *http.Request, req request) (context.Context, *createTrace) {
	ctx := r.Context()
	if req.res.GroupResource() != corev1.Resource("pods") || req.subresource != "" {
		return ctx, nil
	}
	parent := propagation.TraceContext{}.Extract(ctx, propagation.HeaderCarrier(r.Header))
	t := s.startPodTrace(ctx, parent, "apiserver.create", podtrace.Annotation)
	if t == nil {
		return ctx, nil
	}
	return context.WithValue(ctx, createTraceKey{}, t), t
}

// startDeleteTrace begins the trace of a pod's graceful deletion (nil for
// other objects, or a pod not sampled).
func (s *Server) startDeleteTrace(ctx context.Context, res *registry.Resource) *createTrace {
	if res.GroupResource() != corev1.Resource("pods") {
		return nil
	}
	return s.startPodTrace(ctx, ctx, "apiserver.delete", podtrace.DeletionAnnotation)
}

// startPodTrace starts a trace of a request on a pod, with who made it
// and why it was allowed; the trace's context is to go into annotation.
func (s *Server) startPodTrace(ctx, parent context.Context, name, annotation string) *createTrace {
	if s.cfg.Tracing == nil {
		return nil
	}
	start := time.Now()
	attrs := []attribute.KeyValue{attribute.String(podtrace.AttrComponent, "apiserver")}
	if info, ok := ctx.Value(requestInfoKey{}).(*requestInfo); ok {
		start = info.received
		if info.authorized != "" {
			attrs = append(attrs, attribute.String("authorized", info.authorized))
		}
	}
	if u, ok := UserFrom(ctx); ok {
		attrs = append(attrs, attribute.String("user", u.GetName()), attribute.String("groups", strings.Join(u.GetGroups(), ",")))
	}
	spanCtx, span := s.cfg.Tracing.Tracer("skiff/apiserver").Start(parent, name, trace.WithTimestamp(start), trace.WithAttributes(attrs...))
	if !span.IsRecording() {
		span.End()
		return nil
	}
	return &createTrace{ctx: spanCtx, span: span, annotation: annotation}
}

// traceOf is ctx's create trace, or nil.
func traceOf(ctx context.Context) *createTrace {
	t, _ := ctx.Value(createTraceKey{}).(*createTrace)
	return t
}

// timed runs fn as the phase name of ctx's create trace, if it has one.
func timed(ctx context.Context, name string, fn func() error) error {
	t := traceOf(ctx)
	if t == nil {
		return fn()
	}
	start := time.Now()
	err := fn()
	t.phases = append(t.phases, phase{name: name, start: start, end: time.Now()})
	return err
}

// inject writes the trace's context into the pod (the annotation the
// other components continue it from).
func (t *createTrace) inject(obj runtime.Object) {
	if pod, ok := obj.(*corev1.Pod); ok && t != nil {
		podtrace.Inject(t.ctx, pod, t.annotation)
	}
}

// end ends the trace of the request that made obj (nil if it failed): the
// phases as child spans, then the root, each naming the pod.
func (t *createTrace) end(obj runtime.Object, err error) {
	if t == nil {
		return
	}
	var podAttrs []attribute.KeyValue
	var rv string
	if pod, ok := obj.(*corev1.Pod); ok && err == nil {
		podAttrs, rv = podtrace.PodAttributes(pod), pod.ResourceVersion
		t.span.SetAttributes(attribute.String("resourceVersion", rv))
	}
	if len(t.mutated) > 0 {
		t.span.SetAttributes(attribute.String("admission.mutated", strings.Join(t.mutated, "; ")))
	}
	tracer := t.span.TracerProvider().Tracer("skiff/apiserver")
	component := attribute.String(podtrace.AttrComponent, "apiserver")
	for _, p := range t.phases {
		attrs := append(slices.Clone(podAttrs), component)
		if p.name == phaseWrite {
			attrs = append(slices.Clone(podAttrs), attribute.String(podtrace.AttrComponent, "etcd"), attribute.String("revision", rv))
		}
		_, span := tracer.Start(t.ctx, p.name, trace.WithTimestamp(p.start), trace.WithAttributes(attrs...))
		span.End(trace.WithTimestamp(p.end))
	}
	t.span.SetAttributes(podAttrs...)
	podtrace.End(t.span, time.Time{}, err)
}

// TraceMutations wraps a mutating admission plugin so that a traced pod
// create records which of the pod's fields it changed.
func TraceMutations(name string, p admission.Interface) admission.Interface {
	m, ok := p.(admission.MutationInterface)
	if !ok {
		return p
	}
	return tracedMutation{MutationInterface: m, name: name}
}

type tracedMutation struct {
	admission.MutationInterface
	name string
}

func (p tracedMutation) Admit(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	t := traceOf(ctx)
	pod, isPod := a.GetObject().(*corev1.Pod)
	if t == nil || !isPod {
		return p.MutationInterface.Admit(ctx, a, o)
	}
	before := pod.DeepCopy()
	err := p.MutationInterface.Admit(ctx, a, o)
	if changed := changedFields(before, pod); len(changed) > 0 {
		t.mutated = append(t.mutated, p.name+": "+strings.Join(changed, ", "))
	}
	return err
}

// Validate passes on to the plugin's validation, if it has one.
func (p tracedMutation) Validate(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	if v, ok := p.MutationInterface.(admission.ValidationInterface); ok {
		return v.Validate(ctx, a, o)
	}
	return nil
}

// changedFields names the metadata and spec fields that differ.
func changedFields(before, after *corev1.Pod) []string {
	var changed []string
	diff := func(prefix string, b, a reflect.Value) {
		for i := range b.NumField() {
			if !equality.Semantic.DeepEqual(b.Field(i).Interface(), a.Field(i).Interface()) {
				name, _, _ := strings.Cut(b.Type().Field(i).Tag.Get("json"), ",")
				changed = append(changed, prefix+name)
			}
		}
	}
	diff("metadata.", reflect.ValueOf(before.ObjectMeta), reflect.ValueOf(after.ObjectMeta))
	diff("spec.", reflect.ValueOf(before.Spec), reflect.ValueOf(after.Spec))
	return changed
}

// explainPod answers GET pods/{name}/explain: the pod's journey as the
// server's store holds it, and where the pod stands (podtrace.Explain);
// for a pod that is gone, the newest journey of that name, if kept.
func (s *Server) explainPod(w http.ResponseWriter, r *http.Request, req request) error {
	if req.verb != "get" {
		return apierrors.NewMethodNotSupported(corev1.Resource("pods/explain"), req.verb)
	}
	journeys := s.cfg.Journeys
	if journeys == nil {
		journeys = podtrace.NewStore(1)
	}
	var e podtrace.Explanation
	pod, err := s.pod(r.Context(), req)
	switch {
	case err == nil:
		j, _ := journeys.Get(string(pod.UID))
		e = podtrace.Explain(pod, j)
	case apierrors.IsNotFound(err):
		j, ok := journeys.Find(req.namespace, req.name)
		if !ok {
			return err
		}
		e = podtrace.ExplainDeleted(j)
	default:
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	return json.NewEncoder(w).Encode(e)
}
