package apiserver

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/skiff-lab/skiff/controlplane/apiserver/codec"
	"github.com/skiff-lab/skiff/controlplane/apiserver/proxy"
	"github.com/skiff-lab/skiff/controlplane/apiserver/registry"
	"github.com/skiff-lab/skiff/controlplane/store"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
)

// The metrics API (metrics.k8s.io/v1beta1, what kubectl top reads) is
// served here from the nodes' stats summaries, read when asked, as
// metrics-server would serve it from its last scrape; nothing is stored.

// metricsWindow is the window usage rates are over: the agents' sampling
// interval.
const metricsWindow = 10 * time.Second

// metricsResources are the metrics API's two read-only resources.
func metricsResources() []*registry.Resource {
	gv := metricsv1beta1.SchemeGroupVersion
	return []*registry.Resource{
		{GVK: gv.WithKind("PodMetrics"), Plural: "pods", Namespaced: true, ReadOnly: true,
			NewObj: func() runtime.Object { return &metricsv1beta1.PodMetrics{} }, NewList: func() runtime.Object { return &metricsv1beta1.PodMetricsList{} },
			Strategy: registry.BaseStrategy{}},
		{GVK: gv.WithKind("NodeMetrics"), Plural: "nodes", ReadOnly: true,
			NewObj: func() runtime.Object { return &metricsv1beta1.NodeMetrics{} }, NewList: func() runtime.Object { return &metricsv1beta1.NodeMetricsList{} },
			Strategy: registry.BaseStrategy{}},
	}
}

// serveMetrics answers get and list of PodMetrics and NodeMetrics.
func (s *Server) serveMetrics(w http.ResponseWriter, r *http.Request, req request) error {
	if req.verb != "get" && req.verb != "list" {
		return apierrors.NewMethodNotSupported(req.res.GroupResource(), req.verb)
	}
	sel, err := labels.Parse(r.URL.Query().Get("labelSelector"))
	if err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("labelSelector: %v", err))
	}
	var items []runtime.Object
	if req.res.GVK.Kind == "NodeMetrics" {
		items, err = s.nodeMetrics(r.Context(), req.name, sel)
	} else {
		items, err = s.podMetrics(r.Context(), req.namespace, req.name, sel)
	}
	if err != nil {
		return err
	}
	if req.verb == "get" {
		if len(items) == 0 {
			return apierrors.NewNotFound(req.res.GroupResource(), req.name)
		}
		writeObject(w, r, http.StatusOK, items[0], req.res.GVK)
		return nil
	}
	list := req.res.NewList()
	if err := setList(list, items); err != nil {
		return err
	}
	writeObject(w, r, http.StatusOK, list, req.res.ListGVK())
	return nil
}

// nodeMetrics are the usage of the nodes matching name (all if empty) and
// sel whose summary could be read.
func (s *Server) nodeMetrics(ctx context.Context, name string, sel labels.Selector) ([]runtime.Object, error) {
	nodes, err := s.nodesMatching(ctx, name, sel)
	if err != nil {
		return nil, err
	}
	var items []runtime.Object
	for _, sum := range s.summaries(ctx, nodes) {
		n := sum.Node
		if n.CPU == nil || n.CPU.UsageNanoCores == nil || n.Memory == nil || n.Memory.WorkingSetBytes == nil {
			continue // not two samples yet
		}
		items = append(items, &metricsv1beta1.NodeMetrics{
			ObjectMeta: metav1.ObjectMeta{Name: n.NodeName, Labels: sum.labels, CreationTimestamp: metav1.Now()},
			Timestamp:  n.CPU.Time, Window: metav1.Duration{Duration: metricsWindow},
			Usage: corev1.ResourceList{corev1.ResourceCPU: nanoCores(*n.CPU.UsageNanoCores),
				corev1.ResourceMemory: *apiresource.NewQuantity(int64(*n.Memory.WorkingSetBytes), apiresource.BinarySI)},
		})
	}
	return items, nil
}

// podMetrics are the usage of the pods in namespace (all if empty)
// matching name (all if empty) and sel, with their containers', from the
// summaries of the nodes they run on.
func (s *Server) podMetrics(ctx context.Context, namespace, name string, sel labels.Selector) ([]runtime.Object, error) {
	pods, err := s.podsMatching(ctx, namespace, name, sel)
	if err != nil {
		return nil, err
	}
	byUID := map[string]*corev1.Pod{}
	onNode := map[string]bool{}
	for _, p := range pods {
		byUID[string(p.UID)] = p
		onNode[p.Spec.NodeName] = true
	}
	all, err := s.nodesMatching(ctx, "", labels.Everything())
	if err != nil {
		return nil, err
	}
	var nodes []*corev1.Node
	for _, n := range all {
		if onNode[n.Name] {
			nodes = append(nodes, n)
		}
	}
	var items []runtime.Object
	for _, sum := range s.summaries(ctx, nodes) {
		for _, ps := range sum.Pods {
			if pod := byUID[ps.PodRef.UID]; pod != nil {
				if m := podMetric(pod, ps); m != nil {
					items = append(items, m)
				}
			}
		}
	}
	return items, nil
}

// podMetric is one pod's usage, or nil while a container has no rate yet.
func podMetric(pod *corev1.Pod, ps statsapi.PodStats) *metricsv1beta1.PodMetrics {
	m := &metricsv1beta1.PodMetrics{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, Labels: pod.Labels, CreationTimestamp: metav1.Now()},
		Window:     metav1.Duration{Duration: metricsWindow},
	}
	for _, c := range ps.Containers {
		if c.CPU == nil || c.CPU.UsageNanoCores == nil || c.Memory == nil || c.Memory.WorkingSetBytes == nil {
			return nil
		}
		m.Timestamp = c.CPU.Time
		m.Containers = append(m.Containers, metricsv1beta1.ContainerMetrics{Name: c.Name, Usage: corev1.ResourceList{
			corev1.ResourceCPU:    nanoCores(*c.CPU.UsageNanoCores),
			corev1.ResourceMemory: *apiresource.NewQuantity(int64(*c.Memory.WorkingSetBytes), apiresource.BinarySI),
		}})
	}
	if len(m.Containers) == 0 {
		return nil
	}
	return m
}

func nanoCores(n uint64) apiresource.Quantity {
	return *apiresource.NewScaledQuantity(int64(n), apiresource.Nano)
}

// summary is one node's stats summary and the node's labels.
type summary struct {
	statsapi.Summary
	labels map[string]string
}

// summaries reads the stats summary of each named node in parallel; a node
// that cannot be read within proxy.DialTimeout is left out and logged, as
// metrics-server leaves out nodes it cannot scrape.
func (s *Server) summaries(ctx context.Context, nodes []*corev1.Node) []summary {
	ctx, cancel := context.WithTimeout(ctx, 2*proxy.DialTimeout)
	defer cancel()
	var mu sync.Mutex
	var wg sync.WaitGroup
	var out []summary
	for _, node := range nodes {
		wg.Go(func() {
			sum, err := s.readSummary(ctx, node)
			if err != nil {
				slog.Warn("node stats", "node", node.Name, "err", err)
				return
			}
			mu.Lock()
			out = append(out, sum)
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}

func (s *Server) readSummary(ctx context.Context, node *corev1.Node) (summary, error) {
	name := node.Name
	loc, err := s.nodes.APIURL(node, "/stats/summary", url.Values{})
	if err != nil {
		return summary{}, err
	}
	resp, err := s.nodes.Get(ctx, name, loc)
	if err != nil {
		return summary{}, err
	}
	defer resp.Body.Close()
	var sum summary
	if err := json.NewDecoder(resp.Body).Decode(&sum.Summary); err != nil {
		return summary{}, fmt.Errorf("node %q stats: %w", name, err)
	}
	sum.labels = node.Labels
	return sum, nil
}

// nodesMatching lists the nodes called name (all if empty) matching sel.
func (s *Server) nodesMatching(ctx context.Context, name string, sel labels.Selector) ([]*corev1.Node, error) {
	objs, err := s.listMatching(ctx, s.coreResource("nodes"), "", name, sel)
	var nodes []*corev1.Node
	for _, o := range objs {
		nodes = append(nodes, o.(*corev1.Node))
	}
	return nodes, err
}

// podsMatching lists the pods in namespace called name (all if empty)
// matching sel.
func (s *Server) podsMatching(ctx context.Context, namespace, name string, sel labels.Selector) ([]*corev1.Pod, error) {
	objs, err := s.listMatching(ctx, s.coreResource("pods"), namespace, name, sel)
	var pods []*corev1.Pod
	for _, o := range objs {
		pods = append(pods, o.(*corev1.Pod))
	}
	return pods, err
}

// listMatching reads one object (name set) or lists them, keeping those
// whose labels match sel.
func (s *Server) listMatching(ctx context.Context, res *registry.Resource, namespace, name string, sel labels.Selector) ([]runtime.Object, error) {
	var objs []runtime.Object
	if name != "" {
		obj := res.NewObj()
		if err := s.store.Get(ctx, res.Key(namespace, name), obj); err != nil {
			return nil, codec.StoreError(err, res.GroupResource(), name)
		}
		objs = []runtime.Object{obj}
	} else {
		page, err := s.store.List(ctx, res.Prefix(namespace), store.ListOptions{}, res.NewObj)
		if err != nil {
			return nil, codec.StoreError(err, res.GroupResource(), "")
		}
		objs = page.Items
	}
	var out []runtime.Object
	for _, o := range objs {
		if m, err := meta.Accessor(o); err == nil && sel.Matches(labels.Set(m.GetLabels())) {
			out = append(out, o)
		}
	}
	return out, nil
}

func (s *Server) coreResource(plural string) *registry.Resource {
	return s.byGroupVersion[corev1.SchemeGroupVersion][plural]
}
