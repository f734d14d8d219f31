package scheduler

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// cachedNode is what a test checks of a node in the cache.
type cachedNode struct {
	Pods     []string // UIDs, sorted
	MilliCPU int64    // requested
}

// contents reads the cache: every node by name.
func contents(c *Cache) map[string]cachedNode {
	out := map[string]cachedNode{}
	c.Read(func(snap Snapshot) {
		nodes := snap.Nodes
		for _, ni := range nodes {
			pods := slices.Sorted(maps.Keys(ni.Pods))
			out[ni.Node.Name] = cachedNode{Pods: pods, MilliCPU: ni.Requested.MilliCPU}
		}
	})
	return out
}

func TestCachePods(t *testing.T) {
	web := testPod("web", "500m")
	empty := cachedNode{}
	withWeb := cachedNode{Pods: []string{"web"}, MilliCPU: 500}
	tests := []struct {
		name  string
		steps func(c *Cache) // on a cache with empty nodes a and b
		want  map[string]cachedNode
	}{
		{
			name:  "a bound pod is counted on its node",
			steps: func(c *Cache) { c.SetPod(boundTo(web, "a")) },
			want:  map[string]cachedNode{"a": withWeb, "b": empty},
		},
		{
			name:  "an unbound pod is not counted",
			steps: func(c *Cache) { c.SetPod(web) },
			want:  map[string]cachedNode{"a": empty, "b": empty},
		},
		{
			name:  "an assumed pod is counted at once",
			steps: func(c *Cache) { c.Assume(web, "a") },
			want:  map[string]cachedNode{"a": withWeb, "b": empty},
		},
		{
			name: "confirming an assumed pod does not count it twice",
			steps: func(c *Cache) {
				c.Assume(web, "a")
				c.SetPod(boundTo(web, "a"))
			},
			want: map[string]cachedNode{"a": withWeb, "b": empty},
		},
		{
			name: "Forget drops an assumed pod",
			steps: func(c *Cache) {
				c.Assume(web, "a")
				c.Forget(web)
			},
			want: map[string]cachedNode{"a": empty, "b": empty},
		},
		{
			name: "Forget after confirmation keeps the pod",
			steps: func(c *Cache) {
				c.Assume(web, "a")
				c.SetPod(boundTo(web, "a"))
				c.Forget(web)
			},
			want: map[string]cachedNode{"a": withWeb, "b": empty},
		},
		{
			name: "Forget ignores a pod that was never assumed",
			steps: func(c *Cache) {
				c.SetPod(boundTo(web, "a"))
				c.Forget(web)
			},
			want: map[string]cachedNode{"a": withWeb, "b": empty},
		},
		{
			name: "a pod bound elsewhere than assumed moves",
			steps: func(c *Cache) {
				c.Assume(web, "a")
				c.SetPod(boundTo(web, "b"))
			},
			want: map[string]cachedNode{"a": empty, "b": withWeb},
		},
		{
			name: "SetPod moves a pod between nodes",
			steps: func(c *Cache) {
				c.SetPod(boundTo(web, "a"))
				c.SetPod(boundTo(web, "b"))
			},
			want: map[string]cachedNode{"a": empty, "b": withWeb},
		},
		{
			name: "an updated pod replaces its old requests",
			steps: func(c *Cache) {
				c.SetPod(boundTo(web, "a"))
				c.SetPod(boundTo(testPod("web", "2"), "a"))
			},
			want: map[string]cachedNode{"a": {Pods: []string{"web"}, MilliCPU: 2000}, "b": empty},
		},
		{
			name: "RemovePod stops counting",
			steps: func(c *Cache) {
				c.SetPod(boundTo(web, "a"))
				c.SetPod(boundTo(testPod("db", "1"), "a"))
				c.RemovePod(web.UID)
			},
			want: map[string]cachedNode{"a": {Pods: []string{"db"}, MilliCPU: 1000}, "b": empty},
		},
		{
			name: "pods on unknown nodes are ignored",
			steps: func(c *Cache) {
				c.SetPod(boundTo(web, "ghost"))
				c.Assume(testPod("db", "1"), "ghost")
			},
			want: map[string]cachedNode{"a": empty, "b": empty},
		},
		{
			name: "RemoveNode forgets the node and the pods on it",
			steps: func(c *Cache) {
				c.SetPod(boundTo(web, "a"))
				c.SetPod(boundTo(testPod("db", "1"), "b"))
				c.RemoveNode("a")
				c.SetPod(boundTo(web, "b")) // counted once, on b only
			},
			want: map[string]cachedNode{"b": {Pods: []string{"db", "web"}, MilliCPU: 1500}},
		},
		{
			name: "removing an unknown node changes nothing",
			steps: func(c *Cache) {
				c.SetPod(boundTo(web, "a"))
				c.RemoveNode("ghost")
			},
			want: map[string]cachedNode{"a": withWeb, "b": empty},
		},
		{
			name: "updating a node keeps its pods",
			steps: func(c *Cache) {
				c.SetPod(boundTo(web, "a"))
				c.SetNode(testNode("a", "8"))
			},
			want: map[string]cachedNode{"a": withWeb, "b": empty},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewCache()
			c.SetNode(testNode("a", "4"))
			c.SetNode(testNode("b", "4"))
			tt.steps(c)
			if got := contents(c); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("cache = %+v\nwant    %+v", got, tt.want)
			}
		})
	}
}

func TestCacheAssumeLeavesThePodAlone(t *testing.T) {
	c := NewCache()
	c.SetNode(testNode("a", "4"))
	pod := testPod("web", "500m")
	c.Assume(pod, "a")
	if pod.Spec.NodeName != "" {
		t.Errorf("Assume set the caller's pod nodeName to %q", pod.Spec.NodeName)
	}
}

func TestCacheSetNodeUpdatesAllocatable(t *testing.T) {
	c := NewCache()
	c.SetNode(testNode("a", "4"))
	c.SetNode(testNode("a", "8"))
	c.Read(func(snap Snapshot) {
		nodes := snap.Nodes
		if len(nodes) != 1 || nodes[0].Allocatable.MilliCPU != 8000 {
			t.Errorf("after an update: %d nodes, first with %d mcpu; want 1 node with 8000", len(nodes), nodes[0].Allocatable.MilliCPU)
		}
	})
}

func TestCacheReadSortsNodesByName(t *testing.T) {
	tests := []struct {
		name   string
		add    []string
		remove []string
		want   []string
	}{
		{name: "empty", want: []string{}},
		{name: "added out of order", add: []string{"c", "a", "b"}, want: []string{"a", "b", "c"}},
		{name: "names sort as strings", add: []string{"node-10", "node-9", "node-1"}, want: []string{"node-1", "node-10", "node-9"}},
		{name: "after a removal", add: []string{"c", "a", "b"}, remove: []string{"b"}, want: []string{"a", "c"}},
		{name: "added twice", add: []string{"b", "a", "b"}, want: []string{"a", "b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewCache()
			for _, n := range tt.add {
				c.SetNode(testNode(n, "4"))
			}
			for _, n := range tt.remove {
				c.RemoveNode(n)
			}
			got := []string{}
			c.Read(func(snap Snapshot) {
				nodes := snap.Nodes
				for _, ni := range nodes {
					got = append(got, ni.Node.Name)
				}
			})
			if !slices.Equal(got, tt.want) {
				t.Errorf("Read order = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestCacheClasses: the snapshot's classes follow nodes that come, go and
// change taints.
func TestCacheClasses(t *testing.T) {
	c := NewCache()
	c.SetNode(testNode("a", "4"))
	c.SetNode(testNode("b", "4"))
	classes := func() []string {
		var out []string
		c.Read(func(snap Snapshot) {
			for _, cl := range snap.Classes {
				out = append(out, fmt.Sprintf("%q:%d", cl.Key, len(cl.Nodes)))
			}
		})
		return out
	}
	if got := classes(); !slices.Equal(got, []string{`"":2`}) {
		t.Errorf("two untainted nodes: classes %v", got)
	}
	c.SetNode(testNode("b", "4", func(n *corev1.Node) {
		n.Spec.Taints = []corev1.Taint{{Key: "k", Value: "v", Effect: corev1.TaintEffectNoSchedule},
			{Key: "soft", Effect: corev1.TaintEffectPreferNoSchedule}}
	}))
	if got := classes(); !slices.Equal(got, []string{`"":1`, `"k=v:NoSchedule":1`}) {
		t.Errorf("b tainted: classes %v", got)
	}
	c.RemoveNode("b")
	if got := classes(); !slices.Equal(got, []string{`"":1`}) {
		t.Errorf("b removed: classes %v", got)
	}
}
