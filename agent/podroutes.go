package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	listersv1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"

	"github.com/skiff-lab/skiff/cni"
)

// routeResync is how often the routes are checked even if no Node changed
// (someone may have deleted one).
const routeResync = time.Minute

// routeSyncer keeps the node's routes to the other nodes' pods.
type routeSyncer interface {
	SyncRoutes(want []cni.PeerRoute) (unreachable []cni.PeerRoute, err error)
}

// hostGW is the host-gw pod network across nodes, done with netlink.
type hostGW struct{}

func (hostGW) SyncRoutes(want []cni.PeerRoute) ([]cni.PeerRoute, error) { return cni.SyncRoutes(want) }

// podMTU is the MTU of pods' interfaces: the bridge's default, or room
// for the encapsulation with VXLAN.
func podMTU(cfg Config) (int, error) {
	switch cfg.PodNetwork {
	case PodNetworkHostGW:
		return 0, nil
	case PodNetworkVXLAN:
		ip, err := netip.ParseAddr(cfg.NodeIP)
		if err != nil {
			return 0, fmt.Errorf("pod network vxlan: node IP %q: %w", cfg.NodeIP, err)
		}
		return cni.VXLANMTU(ip)
	}
	return 0, fmt.Errorf("pod network %q: want %s or %s", cfg.PodNetwork, PodNetworkHostGW, PodNetworkVXLAN)
}

// podRoutes sets up the node's side of the pod network backend and
// returns it: with VXLAN, the device, whose MAC goes on the Node for the
// other nodes (and comes off it with host-gw).
func (a *Agent) podRoutes(ctx context.Context, podCIDR string) (routeSyncer, error) {
	var routes routeSyncer = hostGW{}
	var mac *string
	if a.cfg.PodNetwork == PodNetworkVXLAN {
		ip, err := netip.ParseAddr(a.nodeIP)
		cidr, cerr := netip.ParsePrefix(podCIDR)
		if err = errors.Join(err, cerr); err != nil {
			return nil, err
		}
		v, err := cni.EnsureVXLAN(ip, cidr)
		if err != nil {
			return nil, err
		}
		routes, mac = v, ptr.To(v.MAC().String())
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]*string{cni.VtepMACAnnotation: mac}}})
	_, err := a.client.CoreV1().Nodes().Patch(ctx, a.cfg.NodeName, types.MergePatchType, patch, metav1.PatchOptions{})
	return routes, err
}

// routePods keeps, through routes (host-gw or VXLAN), a route to every
// other node's pod CIDR by its InternalIP, following the Nodes: added when
// a node gets its pod CIDR, changed when its address (or VTEP) changes,
// removed when it is deleted. A node the backend cannot reach (host-gw:
// not on a connected subnet) gets no route and a Warning event on this
// node (once per change), instead of a route that would blackhole its
// pods' traffic.
func (a *Agent) routePods(ctx context.Context, routes routeSyncer) {
	inf := informers.NewSharedInformerFactory(a.client, 0)
	nodes := inf.Core().V1().Nodes()
	queue := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "agent_pod_routes"})
	go func() { <-ctx.Done(); queue.ShutDown() }()
	enqueue := func(any) { queue.Add("routes") }
	_, _ = nodes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: enqueue, DeleteFunc: enqueue,
		UpdateFunc: func(old, cur any) {
			if routeChanged(old.(*v1.Node), cur.(*v1.Node)) {
				enqueue(cur)
			}
		}})
	inf.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), nodes.Informer().HasSynced) {
		return
	}
	var reported string
	for {
		key, quit := queue.Get()
		if quit {
			return
		}
		unreachable, err := routes.SyncRoutes(peerRoutes(nodes.Lister(), a.cfg.NodeName))
		if err != nil {
			slog.Warn("pod routes", "node", a.cfg.NodeName, "err", err, "retry", queue.NumRequeues(key))
			queue.AddRateLimited(key)
		} else {
			queue.Forget(key)
			queue.AddAfter(key, routeResync)
		}
		reported = a.reportUnreachable(unreachable, reported)
		queue.Done(key)
	}
}

// peerRoutes are the routes to the pods of every other node that has a
// pod CIDR and an InternalIP, sorted by node.
func peerRoutes(nodes listersv1.NodeLister, self string) []cni.PeerRoute {
	all, _ := nodes.List(labels.Everything())
	var out []cni.PeerRoute
	for _, n := range all {
		if n.Name == self {
			continue
		}
		cidr, err := netip.ParsePrefix(n.Spec.PodCIDR)
		via, ok := internalIP(n)
		if err != nil || !ok || !cidr.Addr().Is4() {
			continue
		}
		mac, _ := net.ParseMAC(n.Annotations[cni.VtepMACAnnotation])
		out = append(out, cni.PeerRoute{Node: n.Name, PodCIDR: cidr.Masked(), Via: via, VtepMAC: mac})
	}
	slices.SortFunc(out, func(x, y cni.PeerRoute) int { return strings.Compare(x.Node, y.Node) })
	return out
}

// routeChanged reports whether a Node's update changes the route to its
// pods (most updates are status heartbeats that do not).
func routeChanged(old, cur *v1.Node) bool {
	oldIP, _ := internalIP(old)
	curIP, _ := internalIP(cur)
	return old.Spec.PodCIDR != cur.Spec.PodCIDR || oldIP != curIP ||
		old.Annotations[cni.VtepMACAnnotation] != cur.Annotations[cni.VtepMACAnnotation]
}

func internalIP(n *v1.Node) (netip.Addr, bool) {
	for _, a := range n.Status.Addresses {
		if ip, err := netip.ParseAddr(a.Address); a.Type == v1.NodeInternalIP && err == nil && ip.Is4() {
			return ip, true
		}
	}
	return netip.Addr{}, false
}

// reportUnreachable records a Warning event on this node naming the nodes
// it cannot route to, when that list differs from the one reported last.
func (a *Agent) reportUnreachable(unreachable []cni.PeerRoute, last string) string {
	var names []string
	for _, r := range unreachable {
		names = append(names, fmt.Sprintf("%s (%s, pods %s)", r.Node, r.Via, r.PodCIDR))
	}
	now := strings.Join(names, ", ")
	if now == last || now == "" {
		return now
	}
	msg := "no route to the pods of " + now + ": the address is not on a network this node is connected to " +
		"(host-gw needs the nodes on one L2 segment)"
	slog.Warn("pod routes", "node", a.cfg.NodeName, "err", msg)
	a.recorder.Event(a.nodeRef(), v1.EventTypeWarning, "PodRouteUnreachable", msg)
	return now
}

// nodeRef is this node as the object of its events (the kubelet's: the
// node's name as its UID).
func (a *Agent) nodeRef() *v1.ObjectReference {
	return &v1.ObjectReference{Kind: "Node", Name: a.cfg.NodeName, UID: typesUID(a.cfg.NodeName)}
}
