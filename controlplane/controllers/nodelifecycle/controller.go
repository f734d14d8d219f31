// Package nodelifecycle watches over nodes as kube-controller-manager's
// node IPAM, node lifecycle and taint eviction controllers do together:
//
//   - IPAM: every node without spec.podCIDR gets the lowest free subnet of
//     the cluster CIDR (a /24 of 10.244.0.0/16 by default), never one
//     another node holds; a deleted node's subnet is free again.
//   - Health: a node is heard from when its Lease in kube-node-lease is
//     renewed or its Ready condition gets a new heartbeat. A node not heard
//     from for the grace period gets its conditions set to Unknown
//     (NodeStatusUnknown, "Kubelet stopped posting node status."). The
//     Ready condition is mirrored in taints: not-ready for False,
//     unreachable for Unknown, both NoSchedule and NoExecute, removed when
//     the node is Ready again; pressure conditions and spec.unschedulable
//     get their NoSchedule taints. When a node stops being Ready its pods
//     are marked not Ready.
//   - Eviction: a pod on a node with a NoExecute taint it does not
//     tolerate is deleted at once; one that tolerates it for
//     tolerationSeconds is deleted that long after the taint's timeAdded;
//     one that tolerates it without a limit stays.
package nodelifecycle

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	coordinationlisters "k8s.io/client-go/listers/coordination/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/skiff-lab/skiff/controlplane/component"
)

// Event sources, as kube-controller-manager names them.
const (
	nodeComponent     = "node-controller"
	evictionComponent = "taint-eviction-controller"
)

const (
	nodeWorkers = 5
	podWorkers  = 5
	// podsByNodeIndex indexes the shared pod informer by spec.nodeName.
	podsByNodeIndex = "nodelifecycle.spec.nodeName"
)

// Config configures the controller; zero fields take the defaults noted.
type Config struct {
	// ClusterCIDR is cut into per-node pod CIDRs; default 10.244.0.0/16.
	ClusterCIDR string
	// NodeCIDRMaskSize is the size of each node's pod CIDR; default 24 for
	// IPv4 and 64 for IPv6.
	NodeCIDRMaskSize int
	// MonitorGracePeriod is how long a node that has posted a Ready
	// condition may stay silent; default 40s.
	MonitorGracePeriod time.Duration
	// StartupGracePeriod is how long a node that never posted a Ready
	// condition may stay silent, counted from its creation; default 60s,
	// and never less than MonitorGracePeriod.
	StartupGracePeriod time.Duration
	// MonitorPeriod is how often every node is looked at even without
	// events; default 5s.
	MonitorPeriod time.Duration
}

func (cfg Config) withDefaults() Config {
	if cfg.ClusterCIDR == "" {
		cfg.ClusterCIDR = "10.244.0.0/16"
	}
	if cfg.MonitorGracePeriod <= 0 {
		cfg.MonitorGracePeriod = 40 * time.Second
	}
	if cfg.StartupGracePeriod <= 0 {
		cfg.StartupGracePeriod = time.Minute
	}
	cfg.StartupGracePeriod = max(cfg.StartupGracePeriod, cfg.MonitorGracePeriod)
	if cfg.MonitorPeriod <= 0 {
		cfg.MonitorPeriod = 5 * time.Second
	}
	return cfg
}

// Controller is the node lifecycle loop. Nodes are synced by name on one
// queue (IPAM, health, taints, in that order), pods by namespace/name on
// another (eviction); each queue never hands one key to two workers.
type Controller struct {
	cfg      Config
	client   kubernetes.Interface
	clock    clock.Clock
	nodes    corelisters.NodeLister
	leases   coordinationlisters.LeaseLister
	pods     corelisters.PodLister
	podIndex cache.Indexer
	ipam     *ipam

	nodeRecorder     record.EventRecorder
	evictionRecorder record.EventRecorder
	nodeQueue        workqueue.TypedRateLimitingInterface[string]
	cidrQueue        workqueue.TypedRateLimitingInterface[string]
	podQueue         workqueue.TypedRateLimitingInterface[string]

	mu sync.Mutex
	// probes holds what has been seen of each node's heartbeats.
	probes map[string]*probe
	// evictions holds pods on nodes with NoExecute taints.
	evictions map[string]*podEviction
}

var _ component.Component = (*Controller)(nil)

// New returns a constructor for the controller with cfg.
func New(cfg Config) component.Constructor {
	return func(cc component.Context) (component.Component, error) {
		return newController(cc, cfg, clock.RealClock{})
	}
}

// Check reports whether cfg's cluster CIDR and node mask size can be
// used, so that a server can refuse them at start.
func (cfg Config) Check() error {
	_, err := cfg.withDefaults().cidrSet()
	return err
}

func (cfg Config) cidrSet() (*cidrSet, error) {
	cluster, err := netip.ParsePrefix(cfg.ClusterCIDR)
	if err != nil {
		return nil, fmt.Errorf("cluster CIDR: %w", err)
	}
	maskSize := cfg.NodeCIDRMaskSize
	if maskSize == 0 {
		maskSize = 24
		if cluster.Addr().Is6() {
			maskSize = 64
		}
	}
	return newCIDRSet(cluster, maskSize)
}

func newController(cc component.Context, cfg Config, clk clock.Clock) (*Controller, error) {
	cfg = cfg.withDefaults()
	set, err := cfg.cidrSet()
	if err != nil {
		return nil, err
	}
	nodeInformer := cc.Informers.Core().V1().Nodes()
	leaseInformer := cc.Informers.Coordination().V1().Leases()
	podInformer := cc.Informers.Core().V1().Pods()
	if err := podInformer.Informer().AddIndexers(cache.Indexers{podsByNodeIndex: podNodeName}); err != nil {
		return nil, err
	}
	c := &Controller{
		cfg: cfg, client: cc.Client, clock: clk,
		nodes: nodeInformer.Lister(), leases: leaseInformer.Lister(), pods: podInformer.Lister(),
		podIndex:         podInformer.Informer().GetIndexer(),
		ipam:             newIPAM(set),
		nodeRecorder:     cc.Recorder(nodeComponent),
		evictionRecorder: cc.Recorder(evictionComponent),
		nodeQueue:        component.NewQueue("nodelifecycle"),
		cidrQueue:        component.NewQueue("nodeipam", component.WithBackoff(cidrRetryBase, cidrRetryMax)),
		podQueue:         component.NewQueue("taint-eviction"),
		probes:           map[string]*probe{},
		evictions:        map[string]*podEviction{},
	}
	if err := c.addHandlers(nodeInformer.Informer(), leaseInformer.Informer(), podInformer.Informer()); err != nil {
		return nil, err
	}
	return c, nil
}

// Run marks the pod CIDRs nodes already hold as used, then syncs pod
// CIDRs, nodes and pods until ctx ends, looking at every node's health
// each MonitorPeriod.
func (c *Controller) Run(ctx context.Context) {
	nodes, _ := c.nodes.List(labelsEverything) // a cache lister does not fail
	c.ipam.rebuild(nodes)
	slog.Info("node pod CIDRs", "clusterCIDR", c.cfg.ClusterCIDR, "maskSize", c.ipam.maskSize(), "nodes", c.ipam.size())
	for _, n := range nodes {
		if n.Spec.PodCIDR == "" {
			c.cidrQueue.Add(n.Name)
		}
	}
	go wait.UntilWithContext(ctx, func(context.Context) { c.enqueueAllNodes() }, c.cfg.MonitorPeriod)
	var wg sync.WaitGroup
	run := func(name string, q workqueue.TypedRateLimitingInterface[string], n int, sync component.SyncFunc) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			component.RunWorkers(ctx, name, q, n, sync)
		}()
	}
	run("nodeipam", c.cidrQueue, cidrWorkers, c.syncPodCIDR)
	run("nodelifecycle", c.nodeQueue, nodeWorkers, c.syncNode)
	run("taint-eviction", c.podQueue, podWorkers, c.syncPod)
	wg.Wait()
}

func (c *Controller) enqueueAllNodes() {
	nodes, err := c.nodes.List(labelsEverything)
	if err != nil {
		return
	}
	for _, n := range nodes {
		c.nodeQueue.Add(n.Name)
	}
}

// podsOnNode are the pods bound to node name, from the informer cache.
func (c *Controller) podsOnNode(name string) []*corev1.Pod {
	objs, err := c.podIndex.ByIndex(podsByNodeIndex, name)
	if err != nil {
		return nil
	}
	pods := make([]*corev1.Pod, 0, len(objs))
	for _, o := range objs {
		if p, ok := o.(*corev1.Pod); ok {
			pods = append(pods, p)
		}
	}
	return pods
}

func podNodeName(obj any) ([]string, error) {
	if p, ok := obj.(*corev1.Pod); ok && p.Spec.NodeName != "" {
		return []string{p.Spec.NodeName}, nil
	}
	return nil, nil
}
