package scheduler

import (
	"slices"
	"sort"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skiff-lab/skiff/controlplane/scheduler/framework"
)

// Cache is the scheduler's view of the nodes and the pods on them, fed by
// informers. A pod the scheduler has just bound is "assumed" on its node
// at once, so the next decision counts it before the informer reports the
// binding. It is safe for concurrent use.
type Cache struct {
	mu       sync.Mutex
	nodes    map[string]*framework.NodeInfo
	list     []*framework.NodeInfo // nodes sorted by name; rebuilt on add/remove
	snapshot Snapshot              // list by class; made again when stale
	stale    bool                  // a node came, went or changed class
	podNode  map[types.UID]string  // where each counted pod is counted
	assumed  map[types.UID]bool
}

// NewCache returns an empty cache.
func NewCache() *Cache {
	return &Cache{nodes: map[string]*framework.NodeInfo{}, podNode: map[types.UID]string{}, assumed: map[types.UID]bool{}}
}

// SetNode adds or updates a node.
func (c *Cache) SetNode(node *corev1.Node) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ni, ok := c.nodes[node.Name]; ok {
		class := ni.Class
		ni.SetNode(node)
		c.stale = c.stale || ni.Class != class
		return
	}
	c.stale = true
	ni := framework.NewNodeInfo(node)
	c.nodes[node.Name] = ni
	i := sort.Search(len(c.list), func(i int) bool { return c.list[i].Node.Name >= node.Name })
	c.list = slices.Insert(c.list, i, ni)
}

// RemoveNode forgets a node and the pods counted on it.
func (c *Cache) RemoveNode(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ni, ok := c.nodes[name]
	if !ok {
		return
	}
	for uid := range ni.Pods {
		delete(c.podNode, types.UID(uid))
		delete(c.assumed, types.UID(uid))
	}
	delete(c.nodes, name)
	c.rebuildList()
	c.stale = true
}

func (c *Cache) rebuildList() {
	c.list = c.list[:0]
	for _, ni := range c.nodes {
		c.list = append(c.list, ni)
	}
	sort.Slice(c.list, func(i, j int) bool { return c.list[i].Node.Name < c.list[j].Node.Name })
}

// SetPod records a bound pod as the informer reports it (confirming an
// assumed one). Pods on nodes the cache does not know are not counted.
func (c *Cache) SetPod(pod *corev1.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.removeLocked(pod.UID)
	delete(c.assumed, pod.UID)
	if ni, ok := c.nodes[pod.Spec.NodeName]; ok && pod.Spec.NodeName != "" {
		ni.AddPod(pod)
		c.podNode[pod.UID] = pod.Spec.NodeName
	}
}

// RemovePod stops counting a pod.
func (c *Cache) RemovePod(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.removeLocked(uid)
	delete(c.assumed, uid)
}

func (c *Cache) removeLocked(uid types.UID) {
	name, ok := c.podNode[uid]
	if !ok {
		return
	}
	if ni, ok := c.nodes[name]; ok {
		ni.RemovePod(&corev1.Pod{ObjectMeta: podMetaUID(uid)})
	}
	delete(c.podNode, uid)
}

// Assume counts pod on node before the binding is confirmed.
func (c *Cache) Assume(pod *corev1.Pod, node string) {
	assumed := pod.DeepCopy()
	assumed.Spec.NodeName = node
	c.SetPod(assumed)
	c.mu.Lock()
	c.assumed[pod.UID] = true
	c.mu.Unlock()
}

// Forget drops an assumed pod whose binding failed.
func (c *Cache) Forget(pod *corev1.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.assumed[pod.UID] {
		c.removeLocked(pod.UID)
		delete(c.assumed, pod.UID)
	}
}

// Read runs fn with the nodes (sorted by name, and by class) while no
// informer event can change them. fn must not keep or modify them.
func (c *Cache) Read(fn func(Snapshot)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stale || c.snapshot.Nodes == nil {
		c.snapshot, c.stale = newSnapshot(c.list), false
	}
	fn(c.snapshot)
}

func podMetaUID(uid types.UID) metav1.ObjectMeta { return metav1.ObjectMeta{UID: uid} }
