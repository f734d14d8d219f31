package podtrace

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"slices"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"
	"k8s.io/apimachinery/pkg/util/wait"
)

// How a server forwards spans to its peers: in batches of at most
// maxBatch, gathered for forwardEvery; a peer that does not take them is
// retried with back-off, keeping its newest maxQueued spans.
const (
	forwardEvery   = 100 * time.Millisecond
	maxBatch       = 1000
	maxQueued      = 10000
	forwardTimeout = 10 * time.Second
	// stopFlush is how long a server that stops gives its senders to
	// forward what they hold.
	stopFlush = 2 * time.Second
	// maxCatchUp bounds the journeys read from a peer at start (1000 pods
	// of 30 steps are about 10 MiB as JSON).
	maxCatchUp = 64 << 20
)

// PeerUser is the user a server forwards spans to its peers as: its
// client certificate's common name.
const PeerUser = "skiff-apiserver-peer"

// Peers sends the spans of pods a server takes (its own components' and
// its agents') to the cluster's other servers, each at its ReportPath,
// marked forwarded (AttrForwarded). So every server keeps whole journeys,
// whichever server a pod was created through, which one's scheduler
// placed it and which one its node reports to. A nil *Peers sends
// nothing.
type Peers struct {
	client *http.Client
	mu     sync.Mutex
	peers  map[string]*peer // by the URL of the peer's ReportPath
}

// NewPeers returns Peers sending with client (its TLS and credentials);
// it has no peers until Set.
func NewPeers(client *http.Client) *Peers {
	return &Peers{client: client, peers: map[string]*peer{}}
}

// Set makes the servers at urls (their ReportPath) the peers: a sender
// starts for each new one, and stops for each one gone, trying once to
// send what it holds.
func (p *Peers) Set(urls []string) { p.set(urls) }

// set is Set; it returns the senders it stopped.
func (p *Peers) set(urls []string) []*peer {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, u := range urls {
		if p.peers[u] == nil {
			slog.Info("forwarding pods' journeys to a server", "server", u)
			p.peers[u] = startPeer(p.client, u)
		}
	}
	var stopped []*peer
	for u, q := range p.peers {
		if !slices.Contains(urls, u) {
			q.stop()
			delete(p.peers, u)
			stopped = append(stopped, q)
		}
	}
	return stopped
}

// Stop stops every sender, once each has sent what it holds (or given up
// after stopFlush): a server that stops forwards the steps it took last.
func (p *Peers) Stop() {
	for _, q := range p.set(nil) {
		<-q.done
	}
}

// URLs are the peers', sorted.
func (p *Peers) URLs() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]string, 0, len(p.peers))
	for u := range p.peers {
		out = append(out, u)
	}
	slices.Sort(out)
	return out
}

// CatchUp merges into store the journeys a peer keeps, read from url (a
// JSON list of journeys, newest first, as a server's /ui/journeys
// answers), and returns how many. It is how a server that starts learns
// the journeys the others kept.
func (p *Peers) CatchUp(ctx context.Context, store *Store, url string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, forwardTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return 0, fmt.Errorf("%s: %s", resp.Status, bytes.TrimSpace(msg))
	}
	var journeys []Journey
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxCatchUp)).Decode(&journeys); err != nil {
		return 0, fmt.Errorf("journeys from %s: %w", url, err)
	}
	for _, j := range slices.Backward(journeys) {
		store.Merge(j)
	}
	return len(journeys), nil
}

// Send queues spans for every peer.
func (p *Peers) Send(spans []Span) {
	if p == nil || len(spans) == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, q := range p.peers {
		q.queue(spans)
	}
}

// peer is one server's queue and its sender.
type peer struct {
	url     string
	client  *http.Client
	mu      sync.Mutex
	spans   []Span
	dropped int // since the last successful send
	wake    chan struct{}
	ctx     context.Context
	stop    context.CancelFunc
	done    chan struct{} // closed when run has returned
}

func startPeer(client *http.Client, url string) *peer {
	ctx, stop := context.WithCancel(context.Background())
	q := &peer{url: url, client: client, wake: make(chan struct{}, 1), ctx: ctx, stop: stop, done: make(chan struct{})}
	go func() {
		defer close(q.done)
		q.run()
		q.flush()
	}()
	return q
}

// queue adds spans after those waiting, dropping the oldest past
// maxQueued.
func (q *peer) queue(spans []Span) {
	q.mu.Lock()
	q.spans = append(q.spans, spans...)
	q.trim()
	q.mu.Unlock()
	q.poke()
}

// trim drops the oldest spans past maxQueued; q.mu is held.
func (q *peer) trim() {
	if over := len(q.spans) - maxQueued; over > 0 {
		q.spans = slices.Delete(q.spans, 0, over)
		q.dropped += over
	}
}

func (q *peer) poke() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// run sends what is queued until stopped: after forwardEvery, a batch;
// after a failure, again once the back-off step has passed (logged once a
// step).
func (q *peer) run() {
	backoff := forwardBackoff()
	for {
		select {
		case <-q.ctx.Done():
			return
		case <-q.wake:
		}
		if !sleep(q.ctx, forwardEvery) {
			return
		}
		batch, more := q.take()
		if err := q.post(q.ctx, batch); err != nil {
			dropped := q.requeue(batch)
			retry := backoff.Step()
			slog.Warn("pods' journey steps not forwarded to a server", "server", q.url, "waiting", len(batch), "dropped", dropped, "err", err, "retry", retry)
			if !sleep(q.ctx, retry) {
				return
			}
			more = true
		} else {
			backoff = forwardBackoff()
		}
		if more {
			q.poke()
		}
	}
}

// flush sends what is queued, within stopFlush, once the sender has
// stopped.
func (q *peer) flush() {
	ctx, cancel := context.WithTimeout(context.Background(), stopFlush)
	defer cancel()
	for {
		batch, more := q.take()
		if len(batch) == 0 {
			return
		}
		if err := q.post(ctx, batch); err != nil {
			q.mu.Lock()
			dropped := len(batch) + len(q.spans)
			q.mu.Unlock()
			slog.Warn("pods' journey steps not forwarded to a server before stopping", "server", q.url, "dropped", dropped, "err", err)
			return
		}
		if !more {
			return
		}
	}
}

func forwardBackoff() wait.Backoff {
	return wait.Backoff{Duration: 500 * time.Millisecond, Factor: 2, Cap: 30 * time.Second, Steps: math.MaxInt32}
}

// take removes up to maxBatch spans from the queue; more says whether
// others wait.
func (q *peer) take() (batch []Span, more bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := min(len(q.spans), maxBatch)
	batch = slices.Clone(q.spans[:n])
	q.spans = slices.Delete(q.spans, 0, n)
	return batch, len(q.spans) > 0
}

// requeue puts a batch not sent back in front; it returns how many spans
// were dropped since the last send.
func (q *peer) requeue(batch []Span) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.spans = append(batch, q.spans...)
	q.trim()
	return q.dropped
}

// post sends batch to the peer as an OTLP/HTTP export.
func (q *peer) post(ctx context.Context, batch []Span) error {
	if len(batch) == 0 {
		return nil
	}
	body, err := proto.Marshal(forwardedExport(batch))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, forwardTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, q.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	resp, err := q.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", resp.Status, bytes.TrimSpace(msg))
	}
	q.mu.Lock()
	q.dropped = 0
	q.mu.Unlock()
	return nil
}

// sleep waits d, or reports false once ctx ends.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
