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

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

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
	// not proxied. Default: the tenth address of ServiceCIDR.
	ClusterDNS string
	// MinSyncPeriod spaces syncs (default 1 s); SyncPeriod is how often a
	// full sync runs anyway (default 1 h).
	MinSyncPeriod, SyncPeriod time.Duration
}

func (c *Config) setDefaults() error {
	if c.ServiceCIDR == "" {
		c.ServiceCIDR = "10.96.0.0/16"
	}
	if c.ClusterDNS == "" {
		prefix, err := netip.ParsePrefix(c.ServiceCIDR)
		if err != nil {
			return fmt.Errorf("service CIDR: %w", err)
		}
		a := prefix.Masked().Addr()
		for range 10 {
			a = a.Next()
		}
		c.ClusterDNS = a.String()
	}
	if c.MinSyncPeriod == 0 {
		c.MinSyncPeriod = time.Second
	}
	if c.SyncPeriod == 0 {
		c.SyncPeriod = time.Hour
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
	chains   map[string]bool // service chains in the kernel after the last sync
	needFull bool
	lastOK   time.Time
}

// New returns a proxier for cfg.
func New(cfg Config) (*Proxier, error) {
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
		chains:   map[string]bool{},
		needFull: true,
	}
	p.changes = newChanges(p.kick)
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

// Run watches Services and EndpointSlices through client and keeps the
// rules until ctx ends. Rules stay in place when it returns.
func (p *Proxier) Run(ctx context.Context, client kubernetes.Interface) error {
	// As kube-proxy: services another proxy claims are not ours, and
	// headless services have nothing to proxy.
	inf := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.LabelSelector = "!service.kubernetes.io/service-proxy-name,!" + corev1.IsHeadlessService
	}))
	services, slices := inf.Core().V1().Services().Informer(), inf.Discovery().V1().EndpointSlices().Informer()
	err := informer.AddHandlers(
		informer.Handler{Name: "service", Informer: services, Funcs: recordFuncs(p.changes.service)},
		informer.Handler{Name: "endpointslice", Informer: slices, Funcs: recordFuncs(p.changes.slice)},
	)
	if err != nil {
		return err
	}
	inf.Start(ctx.Done())
	defer inf.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), services.HasSynced, slices.HasSynced) {
		return ctx.Err()
	}
	slog.Info("proxy started", "node", p.cfg.NodeName, "serviceCIDR", p.cfg.ServiceCIDR, "podCIDR", p.cfg.PodCIDR)
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
