package podtrace

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// testServer is a server's store, its peers and its receiver.
type testServer struct {
	store   *Store
	peers   *Peers
	http    *httptest.Server
	exports atomic.Int32
	refuse  atomic.Int32 // how many exports still to answer 503
}

func newTestServer(t *testing.T) *testServer {
	s := &testServer{store: NewStore(10), peers: NewPeers(http.DefaultClient)}
	receiver := Receiver{Store: s.store, Peers: s.peers}
	s.http = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.refuse.Add(-1) >= 0 {
			http.Error(w, "not yet", http.StatusServiceUnavailable)
			return
		}
		s.exports.Add(1)
		receiver.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { s.peers.Stop(); s.http.Close() })
	return s
}

func (s *testServer) url() string { return s.http.URL + ReportPath }

// stepNames are the names of the steps s keeps of uid.
func (s *testServer) stepNames(uid string) []string {
	j, _ := s.store.Get(uid)
	return j.StepNames()
}

// TestPeersForward: three servers, each forwarding to the other two. A
// server's own step, and an agent's reported to another, reach every
// server once (a forwarded export is not forwarded again); a step to join
// that reaches a server without the pod's journey joins it on the server
// that has it; a peer that refuses is sent the steps again once it takes
// them; a forwarded step is not its receiver's to count.
func TestPeersForward(t *testing.T) {
	servers := []*testServer{newTestServer(t), newTestServer(t), newTestServer(t)}
	a, b, c := servers[0], servers[1], servers[2]
	c.refuse.Store(2)
	for _, s := range servers {
		var others []string
		for _, o := range servers {
			if o != s {
				others = append(others, o.url())
			}
		}
		s.peers.Set(others)
		if got := s.peers.URLs(); len(got) != 2 {
			t.Fatalf("peers %v", got)
		}
	}
	pod := []attribute.KeyValue{attribute.String(AttrPodUID, "uid-1"), attribute.String(AttrPodName, "web"), attribute.String(AttrNamespace, "shop")}

	// a's API server takes the create.
	own := sdktrace.NewTracerProvider(sdktrace.WithSyncer(Exporter{Store: a.store, Peers: a.peers}))
	_, span := own.Tracer("test").Start(context.Background(), "apiserver.create", trace.WithTimestamp(time.Unix(1, 0)))
	span.SetAttributes(append(pod, attribute.String(AttrComponent, "apiserver"), attribute.Int("replicas", 3))...)
	span.End(trace.WithTimestamp(time.Unix(2, 0)))

	// b's agent reports a step; and a step to join for a pod only a
	// keeps.
	a.store.Add("uid-2", "shop", "db", "t2", Step{Name: "apiserver.create", Start: time.Unix(1, 0)})
	agent, err := NewProvider(Options{Service: "skiff-agent", Exports: []Export{{URL: b.url()}}})
	if err != nil {
		t.Fatal(err)
	}
	created := trace.ContextWithSpanContext(context.Background(), span.SpanContext())
	_, span = agent.Tracer("test").Start(created, "agent.ready", trace.WithTimestamp(time.Unix(3, 0)))
	span.SetAttributes(append(pod, attribute.String(AttrComponent, "agent"), attribute.String(AttrNode, "node-b"))...)
	span.End(trace.WithTimestamp(time.Unix(4, 0)))
	NewTracer(agent, "proxy", "node-b").Joined(PodRef{UID: "uid-2", Namespace: "shop", Name: "db"}, "proxy.synced", time.Unix(5, 0), time.Unix(6, 0))
	if err := agent.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}

	want := []string{"apiserver.create", "agent.ready"}
	deadline := time.Now().Add(10 * time.Second)
	for _, s := range servers {
		for !slices.Equal(s.stepNames("uid-1"), want) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
	}
	for !slices.Equal(a.stepNames("uid-2"), []string{"apiserver.create", "proxy.synced"}) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(3 * forwardEvery) // time for a duplicate to arrive
	for i, s := range servers {
		if got := s.stepNames("uid-1"); !slices.Equal(got, want) {
			t.Errorf("server %d keeps %v, want %v", i, got, want)
		}
	}
	if got := a.stepNames("uid-2"); !slices.Equal(got, []string{"apiserver.create", "proxy.synced"}) {
		t.Errorf("the joined step on the server with the journey: %v", got)
	}
	if b.store.Len() != 1 || c.store.Len() != 1 {
		t.Errorf("a step to join made journeys on servers without one: %d, %d", b.store.Len(), c.store.Len())
	}
	// a's and b's forwards, c's agent none: one export each from the two
	// others (three steps in two exports at most).
	if n := c.exports.Load(); n < 2 || n > 3 {
		t.Errorf("c took %d exports, want 2 or 3: one batch from each peer, sent again after refusals", n)
	}

	ja, _ := a.store.Get("uid-1")
	jc, _ := c.store.Get("uid-1")
	if ja.Steps[0].fromPeer || !ja.Steps[1].fromPeer || !jc.Steps[0].fromPeer || !jc.Steps[1].fromPeer {
		t.Errorf("steps from peers: a %+v, c %+v", ja.Steps, jc.Steps)
	}
	if got := jc.Steps[0].Attrs["replicas"]; got != "3" || jc.TraceID != ja.TraceID || jc.Name != "web" {
		t.Errorf("forwarded step %+v of journey %s/%s %s, want replicas=3 in trace %s", jc.Steps[0], jc.Namespace, jc.Name, jc.TraceID, ja.TraceID)
	}
}

// TestPeersStopSendsWhatIsLeft: a server that stops forwards the steps it
// holds before Stop returns.
func TestPeersStopSendsWhatIsLeft(t *testing.T) {
	a, b := newTestServer(t), newTestServer(t)
	a.peers.Set([]string{b.url()})
	a.peers.Send([]Span{{Name: "apiserver.create", Attrs: []attribute.KeyValue{attribute.String(AttrPodUID, "u")}}})
	a.peers.Stop()
	if got := b.stepNames("u"); !slices.Equal(got, []string{"apiserver.create"}) {
		t.Errorf("the peer has %v once the sender stopped, want the step it held", got)
	}
}

// TestPeersSet: a peer no longer listed is not sent to.
func TestPeersSet(t *testing.T) {
	a, b := newTestServer(t), newTestServer(t)
	a.peers.Set([]string{b.url()})
	a.peers.Set(nil)
	a.peers.Send([]Span{{Name: "apiserver.create", Attrs: []attribute.KeyValue{attribute.String(AttrPodUID, "u")}}})
	time.Sleep(3 * forwardEvery)
	if n := b.exports.Load(); n != 0 || len(a.peers.URLs()) != 0 {
		t.Errorf("a removed peer took %d exports; peers %v", n, a.peers.URLs())
	}
}

// TestExportRetriesLostConnections: an export whose connection is lost (a
// server killed, the agent's balancer moving to another) is sent again,
// not dropped.
func TestExportRetriesLostConnections(t *testing.T) {
	store := NewStore(10)
	receiver := Receiver{Store: store}
	var lost atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if lost.Add(1) == 1 {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		receiver.ServeHTTP(w, r)
	}))
	defer srv.Close()
	tp, err := NewProvider(Options{Service: "skiff-agent", SamplingRate: 1, Exports: []Export{{URL: srv.URL + ReportPath, Client: &http.Client{}}}})
	if err != nil {
		t.Fatal(err)
	}
	_, span := tp.Tracer("test").Start(context.Background(), "apiserver.create", trace.WithAttributes(attribute.String(AttrPodUID, "u")))
	span.End()
	if err := tp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if j, _ := store.Get("u"); len(j.Steps) != 1 || lost.Load() != 2 {
		t.Errorf("after a lost connection the receiver has %v, in %d requests; want the step, sent twice", j.StepNames(), lost.Load())
	}
}

// TestStoreTakesAStepOnce: a step reported again adds nothing; the same
// step of another node at the same time is another step.
func TestStoreTakesAStepOnce(t *testing.T) {
	store := NewStore(1)
	step := Step{Name: "proxy.synced", Node: "a", Start: time.Unix(5, 0), End: time.Unix(6, 0)}
	other := step
	other.Node = "b"
	for _, s := range []Step{step, other, step, {Name: "agent.ready", Start: time.Unix(5, 0)}, other} {
		store.Add("u", "ns", "p", "t", s)
	}
	j, _ := store.Get("u")
	if got := j.StepNames(); !slices.Equal(got, []string{"proxy.synced", "proxy.synced", "agent.ready"}) {
		t.Errorf("steps %v", got)
	}
}

// TestPeersCatchUp: a server reads the journeys a peer keeps (newest
// first, as /ui/journeys answers): each takes its place by when it began,
// steps it has already are not added twice, and its own steps stay its
// own.
func TestPeersCatchUp(t *testing.T) {
	peer := NewStore(10)
	for i, uid := range []string{"old", "mid", "new"} {
		peer.Add(uid, "ns", uid, "t", Step{Name: "apiserver.create", Start: time.Unix(int64(10*i), 0)})
		peer.Add(uid, "ns", uid, "t", Step{Name: "agent.ready", Start: time.Unix(int64(10*i+5), 0)})
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(peer.Recent(10))
	}))
	defer srv.Close()
	local := NewStore(3)
	local.Add("mid", "ns", "mid", "t", Step{Name: "agent.ready", Start: time.Unix(15, 0)})
	local.Add("newest", "ns", "newest", "t", Step{Name: "apiserver.create", Start: time.Unix(30, 0)})

	n, err := NewPeers(http.DefaultClient).CatchUp(context.Background(), local, srv.URL)
	if err != nil || n != 3 {
		t.Fatalf("caught up %d journeys: %v", n, err)
	}
	var order []string
	for _, j := range local.Recent(10) {
		order = append(order, j.UID)
	}
	// Full at 3: the journey that began first, "old", is dropped.
	if !slices.Equal(order, []string{"newest", "new", "mid"}) {
		t.Errorf("journeys newest first %v, want newest new mid", order)
	}
	mid, _ := local.Get("mid")
	if got := mid.StepNames(); !slices.Equal(got, []string{"apiserver.create", "agent.ready"}) || mid.Steps[1].fromPeer || !mid.Steps[0].fromPeer {
		t.Errorf("mid's steps %v (%+v), want the create from the peer and its own ready once", got, mid.Steps)
	}
	if _, err := NewPeers(http.DefaultClient).CatchUp(context.Background(), local, srv.URL+"/nope\x00"); err == nil {
		t.Error("a bad URL caught up")
	}
}
