// Package proxy is skiff's kube-proxy, run by every agent: it makes the
// Services of the cluster reachable on its node with iptables, the way
// kube-proxy's iptables mode does.
//
// Informers on Services and EndpointSlices feed a change tracker
// (changes.go) that records which services changed; a bounded-frequency
// loop (loop.go) syncs at most once per MinSyncPeriod and fully every
// SyncPeriod. A sync turns the changes into per-port diffs (state.go),
// computes the whole rule text from plain data (rules.go, pure) and
// applies it with one iptables-restore --noflush (iptables.go). A partial
// sync rewrites the top-level chains and only the chains of the ports that
// changed; a failed restore is counted and followed at once by a full
// sync. UDP flows an endpoint change leaves stale are deleted through
// netlink (conntrack.go). Rules stay in the kernel while the agent
// restarts; the restarted proxy's first, full sync adopts them and deletes
// what it no longer needs. Cleanup removes everything.
package proxy

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/skiff-lab/skiff/informer"
)

// Config is what a node's proxy needs.
type Config struct {
	NodeName string // required
	// PodCIDR is this node's pod CIDR: traffic from it is the node's pods'.
	PodCIDR string
	// ServiceCIDR is the cluster's service CIDR; default 10.96.0.0/16.
	ServiceCIDR string
	// ClusterDNS is the cluster DNS address, answered on the node itself:
	// neither proxied nor rejected. Empty: none.
	ClusterDNS string
	// MinSyncPeriod spaces syncs (default 1 s); SyncPeriod is how often a
	// full sync runs anyway (default 1 h).
	MinSyncPeriod, SyncPeriod time.Duration
	// HealthzAddress serves /healthz and /livez (kube-proxy's
	// 0.0.0.0:10256); empty serves none.
	HealthzAddress string
	// Clock paces the sync loop and its back-off and dates the syncs for
	// the health endpoints; default the real one (tests step a fake).
	Clock clock.WithTicker
	// Synced, if set, is told after each sync that put pods' endpoints
	// into the rules as ready, with when the sync began and ended (the
	// agent records it as a step of each pod's journey).
	Synced func(pods []ReadyPod, start, end time.Time)
}

// ReadyPod is a pod whose endpoint of a Service port a sync made ready in
// the rules.
type ReadyPod struct {
	UID             types.UID
	Namespace, Name string
	Service         string // namespace/name:port
}

func (c *Config) setDefaults() error {
	if c.ServiceCIDR == "" {
		c.ServiceCIDR = "10.96.0.0/16"
	}
	if _, err := netip.ParsePrefix(c.ServiceCIDR); err != nil {
		return fmt.Errorf("service CIDR: %w", err)
	}
	if c.MinSyncPeriod == 0 {
		c.MinSyncPeriod = time.Second
	}
	if c.SyncPeriod == 0 {
		c.SyncPeriod = time.Hour
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	return nil
}

// kernelOps is what the proxier needs of the kernel (kernel in iptables.go;
// a recording fake in tests).
type kernelOps interface {
	ensureBase() error
	restore(ctx context.Context, payload []byte) error
	serviceChains(ctx context.Context) (map[string]bool, error)
}

// Proxier keeps one node's service rules. Its state is the sync loop's
// alone; only changes is shared with the informers.
type Proxier struct {
	cfg     Config
	rules   ruleConfig
	changes *changes
	trigger chan struct{}
	kernel  kernelOps
	forget  func([]staleFlow) error

	st       *state
	ports    map[portName]portOutput // what each service port has in the kernel after the last sync
	needFull bool
	known    bool // ports is what the kernel holds: a sync succeeded, none failed since
	health   *health
	views    views // what the rules hold, for readers other than the loop

	synced []cache.InformerSynced
}

// New returns a proxier for cfg fed by the shared informers on Services and
// EndpointSlices, on which it registers its handlers; start them before
// Run. With nil informers the changes are fed directly (tests).
func New(cfg Config, services, slices cache.SharedIndexInformer) (*Proxier, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	p := &Proxier{
		cfg:      cfg,
		rules:    ruleConfig{podCIDR: cfg.PodCIDR, serviceCIDR: cfg.ServiceCIDR, localDNS: cfg.ClusterDNS},
		trigger:  make(chan struct{}, 1),
		kernel:   kernel{},
		forget:   forget,
		st:       newState(),
		ports:    map[portName]portOutput{},
		needFull: true,
		health:   newHealth(2*cfg.SyncPeriod, cfg.Clock),
	}
	p.changes = newChanges(p.kick)
	if services != nil && slices != nil {
		err := informer.AddHandlers(
			informer.Handler{Name: "service", Informer: services, Funcs: recordFuncs(p.changes.service)},
			informer.Handler{Name: "endpointslice", Informer: slices, Funcs: recordFuncs(p.changes.slice)},
		)
		if err != nil {
			return nil, err
		}
		p.synced = []cache.InformerSynced{services.HasSynced, slices.HasSynced}
	}
	registerMetrics()
	return p, nil
}

// kick asks the loop for a sync; never blocks.
func (p *Proxier) kick() {
	select {
	case p.trigger <- struct{}{}:
	default:
	}
}

// Run keeps the rules until ctx ends, once the informers have synced.
// Rules stay in place when it returns.
func (p *Proxier) Run(ctx context.Context) error {
	if !cache.WaitForCacheSync(ctx.Done(), p.synced...) {
		return ctx.Err()
	}
	slog.Info("proxy started", "node", p.cfg.NodeName, "serviceCIDR", p.cfg.ServiceCIDR, "podCIDR", p.cfg.PodCIDR)
	if addr := p.cfg.HealthzAddress; addr != "" {
		go func() {
			if err := p.health.serve(ctx, addr); err != nil {
				slog.Error("proxy healthz not served", "addr", addr, "err", err)
			}
		}()
	}
	defer p.health.close()
	p.loop(ctx)
	return nil
}

// recordFuncs calls record with the object of every event, gone for a
// delete.
func recordFuncs[T any](record func(obj T, gone bool)) cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { callWith(obj, false, record) },
		UpdateFunc: func(_, obj any) { callWith(obj, false, record) },
		DeleteFunc: func(obj any) { callWith(obj, true, record) },
	}
}

func callWith[T any](obj any, gone bool, record func(T, bool)) {
	if o, ok := informer.FromTombstone[T](obj); ok {
		record(o, gone)
	}
}
