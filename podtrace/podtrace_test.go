package podtrace

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// TestExporterAndTimeline: spans from a tracer provider whose exporter is
// the store become one journey per pod, in the order their steps began,
// printed as the golden timeline; spans without a pod are left out.
func TestExporterAndTimeline(t *testing.T) {
	store := NewStore(10)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(Exporter{Store: store}), sdktrace.WithIDGenerator(fixedIDs{}))
	tracer := tp.Tracer("test")
	t0 := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	pod := []attribute.KeyValue{attribute.String(AttrPodUID, "uid-1"), attribute.String(AttrPodName, "web"), attribute.String(AttrNamespace, "shop")}
	span := func(name string, start, took time.Duration, attrs ...attribute.KeyValue) {
		_, s := tracer.Start(context.Background(), name, trace.WithTimestamp(t0.Add(start)))
		s.SetAttributes(append(pod, attrs...)...)
		if name == "agent.pull" {
			s.SetStatus(codes.Error, "pull docker.io/library/nope: not found")
		}
		s.End(trace.WithTimestamp(t0.Add(start + took)))
	}
	// Out of order, as spans from several processes arrive.
	span("scheduler.schedule", 14*time.Millisecond, 2*time.Millisecond, attribute.String(AttrComponent, "scheduler"),
		attribute.String("node", "node-2"), attribute.Int("feasible", 2))
	span("apiserver.create", 0, 9*time.Millisecond, attribute.String(AttrComponent, "apiserver"), attribute.String("user", "alice"))
	span("agent.pull", 40*time.Millisecond, 1500*time.Millisecond, attribute.String(AttrComponent, "agent"), attribute.String(AttrNode, "node-2"))
	span("agent.sandbox", 30*time.Millisecond, 800*time.Microsecond, attribute.String(AttrComponent, "agent"), attribute.String(AttrNode, "node-2"),
		attribute.String("ip", "10.244.2.7"))
	_, other := tracer.Start(context.Background(), "not a pod's")
	other.End()

	j, ok := store.Get("uid-1")
	if !ok || store.Len() != 1 {
		t.Fatalf("journeys: %d, uid-1 found %v", store.Len(), ok)
	}
	var out bytes.Buffer
	if err := WriteTimeline(&out, j); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "testdata/timeline.golden", out.Bytes())
}

// checkGolden compares got with the golden file (go test -args -update
// rewrites it).
func checkGolden(t *testing.T, golden string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("%s (%v): got\n%s\nwant\n%s", golden, err, got, want)
	}
}

// fixedIDs gives every trace the same ID, so that the golden timeline is
// stable.
type fixedIDs struct{}

func (fixedIDs) NewIDs(context.Context) (trace.TraceID, trace.SpanID) {
	return trace.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36}, trace.SpanID{1}
}

func (fixedIDs) NewSpanID(context.Context, trace.TraceID) trace.SpanID { return trace.SpanID{2} }

// TestStoreBounds: the store keeps the newest pods' journeys, and tells
// subscribers of each step.
func TestStoreBounds(t *testing.T) {
	store := NewStore(3)
	var told []string
	cancel := store.Subscribe(func(j Journey, s Step) { told = append(told, j.Name+"/"+s.Name) })
	for i := range 5 {
		store.Add(fmt.Sprint("uid-", i), "ns", fmt.Sprint("pod-", i), "", Step{Name: "create", Start: time.Unix(int64(i), 0)})
	}
	cancel()
	store.Add("uid-4", "ns", "pod-4", "", Step{Name: "schedule"})
	if store.Len() != 3 {
		t.Errorf("%d journeys, want 3", store.Len())
	}
	for i, want := range []bool{false, false, true, true, true} {
		if _, ok := store.Get(fmt.Sprint("uid-", i)); ok != want {
			t.Errorf("uid-%d kept %v, want %v", i, ok, want)
		}
	}
	if len(told) != 5 || told[4] != "pod-4/create" {
		t.Errorf("subscriber told %v", told)
	}
	if j, _ := store.Get("uid-4"); len(j.Steps) != 2 || j.Steps[0].Name != "schedule" {
		t.Errorf("uid-4's steps in order of start: %+v", j.Steps)
	}
	var recent []string
	for _, j := range store.Recent(2) {
		recent = append(recent, j.Name)
	}
	if !slices.Equal(recent, []string{"pod-4", "pod-3"}) {
		t.Errorf("the 2 most recent journeys: %v", recent)
	}
}

// TestReceiver: spans exported by OpenTelemetry's OTLP/HTTP exporter, as
// an agent's provider exports them, reach the store through the receiver
// on 127.0.0.1.
func TestReceiver(t *testing.T) {
	store := NewStore(10)
	srv := httptest.NewServer(Receiver{Store: store})
	defer srv.Close()
	exp, err := otlptracehttp.New(context.Background(), otlptracehttp.WithEndpointURL(srv.URL+"/v1/traces"))
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	_, span := tp.Tracer("agent").Start(context.Background(), "agent.sandbox")
	span.SetAttributes(attribute.String(AttrPodUID, "uid-9"), attribute.String(AttrPodName, "db"), attribute.String(AttrNamespace, "shop"),
		attribute.String(AttrComponent, "agent"), attribute.String(AttrNode, "node-1"), attribute.String("ip", "10.244.1.9"), attribute.Int("attempt", 1))
	span.End()
	if err := tp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	j, ok := store.Get("uid-9")
	if !ok || len(j.Steps) != 1 {
		t.Fatalf("journey: %+v %v", j, ok)
	}
	if s := j.Steps[0]; s.Name != "agent.sandbox" || s.Component != "agent" || s.Node != "node-1" || s.Attrs["ip"] != "10.244.1.9" ||
		s.Attrs["attempt"] != "1" || j.Name != "db" || j.TraceID != span.SpanContext().TraceID().String() {
		t.Errorf("step: %+v of %+v", s, j)
	}
	for _, bad := range []struct{ method, ctype, body string }{{"GET", "", ""}, {"POST", "application/json", "{}"}, {"POST", "application/x-protobuf", "\xff\xff"}} {
		req, _ := http.NewRequest(bad.method, srv.URL, strings.NewReader(bad.body))
		req.Header.Set("Content-Type", bad.ctype)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode < 400 {
			t.Errorf("%s %s %q: %d, want a refusal", bad.method, bad.ctype, bad.body, resp.StatusCode)
		}
	}
}

// TestProviderExports: a provider with a store and an OTLP/HTTP export
// (to a receiver on 127.0.0.1) puts a sampled pod's steps in both, and
// writes the trace's context into the pod; with a sampling rate of 0 it
// records nothing, and the pod gets no annotation.
func TestProviderExports(t *testing.T) {
	collected := NewStore(10)
	srv := httptest.NewServer(Receiver{Store: collected})
	defer srv.Close()
	for _, rate := range []float64{1, 0} {
		own := NewStore(10)
		tp, err := NewProvider(Options{Service: "skiff-server", SamplingRate: rate, Store: own,
			Exports: []Export{{URL: srv.URL + ReportPath, Every: time.Millisecond}}})
		if err != nil {
			t.Fatal(err)
		}
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("web-", rate), Namespace: "shop", UID: types.UID(fmt.Sprint("uid-", rate))}}
		ctx, root := tp.Tracer("apiserver").Start(context.Background(), "apiserver.create", trace.WithAttributes(PodAttributes(pod)...))
		Inject(ctx, pod, Annotation)
		root.End()
		NewTracer(tp, "scheduler", "").Step(pod, "scheduler.bind", time.Now(), time.Now(), nil)
		if err := tp.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		for what, store := range map[string]*Store{"store": own, "collector": collected} {
			j, _ := store.Get(string(pod.UID))
			if want := map[float64]int{1: 2, 0: 0}[rate]; len(j.Steps) != want {
				t.Errorf("rate %v: the %s has %d steps of the pod, want %d", rate, what, len(j.Steps), want)
			}
		}
		if got := pod.Annotations[Annotation] != ""; got != (rate == 1) {
			t.Errorf("rate %v: annotation %q", rate, pod.Annotations[Annotation])
		}
	}
}

// TestJoinedSteps: a step recorded without the pod's trace context (a
// proxy's) reaches the server from an agent whose sampling rate is 0, and
// joins the journey of its pod's UID; a step of a pod whose journey the
// server does not keep is dropped.
func TestJoinedSteps(t *testing.T) {
	server := NewStore(10)
	server.Add("traced", "shop", "web", "t1", Step{Name: "apiserver.create", Start: time.Unix(1, 0)})
	srv := httptest.NewServer(Receiver{Store: server})
	defer srv.Close()
	tp, err := NewProvider(Options{Service: "skiff-agent", Exports: []Export{{URL: srv.URL + ReportPath}}})
	if err != nil {
		t.Fatal(err)
	}
	proxy := NewTracer(tp, "proxy", "node-a")
	for _, uid := range []string{"traced", "untraced"} {
		proxy.Joined(PodRef{UID: uid, Namespace: "shop", Name: uid}, "proxy.synced", time.Unix(2, 0), time.Unix(3, 0), attribute.String("service", "shop/web"))
	}
	if err := tp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	j, _ := server.Get("traced")
	if len(j.Steps) != 2 || j.TraceID != "t1" {
		t.Fatalf("journey %+v, want the create and the proxy's step, in trace t1", j)
	}
	want := Step{Name: "proxy.synced", Component: "proxy", Node: "node-a", Start: time.Unix(2, 0), End: time.Unix(3, 0),
		Attrs: map[string]string{"service": "shop/web"}}
	if got := j.Steps[1]; !reflect.DeepEqual(got, want) {
		t.Errorf("joined step %+v, want %+v", got, want)
	}
	if _, ok := server.Get("untraced"); ok || server.Len() != 1 {
		t.Errorf("a journey was made for a step to join (%d journeys)", server.Len())
	}
}

// TestProviderRefusesBadEndpoints: an endpoint that is not an http(s) URL
// with a host is an error, not an export to somewhere else.
func TestProviderRefusesBadEndpoints(t *testing.T) {
	for _, bad := range []string{"collector:4318", "/v1/traces", "ftp://collector/v1/traces", "http://"} {
		if _, err := NewProvider(Options{Exports: []Export{{URL: bad}}}); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("endpoint %q: %v, want an error naming it", bad, err)
		}
	}
}

// TestStoreMemoryBound: the default store, given the journeys of 10,000
// pods of 20 steps each, keeps the newest 1000 and stays under 16 MiB.
func TestStoreMemoryBound(t *testing.T) {
	const pods, steps, bound = 10000, 20, 16 << 20
	before := heapInUse()
	store := NewStore(1000)
	t0 := time.Now()
	for i := range pods {
		uid := fmt.Sprintf("%08d-0000-0000-0000-000000000000", i)
		for k := range steps {
			store.Add(uid, "default", fmt.Sprint("web-", i), "4bf92f3577b34da6a3ce929d0e0e4736", Step{
				Name: fmt.Sprint("agent.step-", k), Component: "agent", Node: "node-1",
				Start: t0.Add(time.Duration(k) * time.Millisecond), End: t0.Add(time.Duration(k+1) * time.Millisecond),
				Attrs: map[string]string{"container": "web", "image": "registry.example/web:1.2.3", "pulled": "false"}})
		}
	}
	used := heapInUse() - before
	if store.Len() != 1000 {
		t.Errorf("%d journeys kept, want 1000", store.Len())
	}
	if used > bound {
		t.Errorf("the store holds %d MiB, want under %d MiB", used>>20, bound>>20)
	}
	t.Logf("1000 journeys of %d steps: %.1f MiB", steps, float64(used)/(1<<20))
	runtime.KeepAlive(store)
}

func heapInUse() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapInuse)
}

// TestWriteWorkload: one line per pod with where it stands, and what
// holds the slowest pod back, for pods Ready, on their way, failed and
// unschedulable (golden output).
func TestWriteWorkload(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	step := func(name string, from, took time.Duration, err string) Step {
		return Step{Name: name, Component: "agent", Node: "node-a", Start: t0.Add(from), End: t0.Add(from + took), Error: err,
			Attrs: map[string]string{"container": "web"}}
	}
	ready := Explanation{Journey: Journey{Name: "web-a", Steps: []Step{step("apiserver.create", 0, 5*time.Millisecond, ""),
		step("agent.image", 10*time.Millisecond, 2*time.Second, ""), step(ReadyStep, 2100*time.Millisecond, 10*time.Millisecond, "")}},
		Phase: "Running", Node: "node-a"}
	slow := Explanation{Journey: Journey{Name: "web-b", Steps: []Step{step("apiserver.create", 0, 5*time.Millisecond, ""),
		step("agent.sandbox", 10*time.Millisecond, 300*time.Millisecond, "")}}, Phase: "Pending", Node: "node-a"}
	failed := Explanation{Journey: Journey{Name: "web-c", Steps: []Step{step("apiserver.create", 0, 5*time.Millisecond, ""),
		step("agent.image", 10*time.Millisecond, time.Second, "pull: not found")}}, Phase: "Pending", Node: "node-a"}
	pending := Explanation{Journey: Journey{Name: "web-d", Steps: []Step{step("apiserver.create", -10*time.Second, 5*time.Millisecond, "")}},
		Phase: "Pending", Unschedulable: "0/2 nodes are available: 2 Insufficient cpu."}
	now := t0.Add(time.Minute)
	var out bytes.Buffer
	for _, pods := range [][]Explanation{{ready}, {ready, slow}, {ready, failed}, {ready, slow, pending}, {}} {
		wl := Workload{Kind: "Deployment", Namespace: "shop", Name: "web", Status: fmt.Sprintf("%d pods", len(pods)), Pods: pods}
		if err := WriteWorkload(&out, wl, now); err != nil {
			t.Fatal(err)
		}
	}
	checkGolden(t, "testdata/workload.golden", out.Bytes())
}
