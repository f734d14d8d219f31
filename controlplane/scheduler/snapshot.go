package scheduler

import (
	"sort"

	"github.com/skiff-lab/skiff/controlplane/scheduler/framework"
)

// Snapshot is what one decision reads: every node, sorted by name, and
// the same nodes grouped by class (framework.ClassOf). In a cluster where
// many nodes are cordoned or tainted alike (not ready, no pod network), a
// pod that does not tolerate them is turned away from the whole class at
// once instead of node by node.
type Snapshot struct {
	Nodes   []*framework.NodeInfo
	Classes []*NodeClass
}

// NodeClass is the nodes that share a class key, sorted by name.
type NodeClass struct {
	Key   string
	Nodes []*framework.NodeInfo
}

// newSnapshot groups nodes (sorted by name) by class; the classes are
// sorted by key, so the untainted nodes ("") come first.
func newSnapshot(nodes []*framework.NodeInfo) Snapshot {
	byKey := map[string]*NodeClass{}
	var classes []*NodeClass
	for _, ni := range nodes {
		c, ok := byKey[ni.Class]
		if !ok {
			c = &NodeClass{Key: ni.Class}
			byKey[ni.Class] = c
			classes = append(classes, c)
		}
		c.Nodes = append(c.Nodes, ni)
	}
	sort.Slice(classes, func(i, j int) bool { return classes[i].Key < classes[j].Key })
	return Snapshot{Nodes: nodes, Classes: classes}
}
