package node

import (
	"context"
	"fmt"
	"runtime"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
)

// newNode is the Node the agent registers.
func (n *Node) newNode() *v1.Node {
	labels := map[string]string{
		v1.LabelHostname: n.cfg.Name, v1.LabelOSStable: runtime.GOOS, v1.LabelArchStable: runtime.GOARCH,
	}
	for k, v := range n.cfg.Labels {
		labels[k] = v
	}
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: n.cfg.Name, Labels: labels},
		Spec:       v1.NodeSpec{Taints: n.cfg.Taints},
	}
}

// Register creates the Node, or adopts an existing one (keeping its spec,
// adding our labels), and takes its allocatable resources.
func (n *Node) Register(ctx context.Context) (*v1.Node, error) {
	nodes := n.client.CoreV1().Nodes()
	node, err := nodes.Create(ctx, n.newNode(), metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		node, err = nodes.Get(ctx, n.cfg.Name, metav1.GetOptions{})
		if err == nil {
			node, err = n.mergeLabels(ctx, node)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("register node %s: %w", n.cfg.Name, err)
	}
	n.setAllocatable(node.Status.Allocatable)
	return node, nil
}

func (n *Node) mergeLabels(ctx context.Context, node *v1.Node) (*v1.Node, error) {
	want := n.newNode().Labels
	changed := false
	for k, v := range want {
		if node.Labels[k] != v {
			if node.Labels == nil {
				node.Labels = map[string]string{}
			}
			node.Labels[k], changed = v, true
		}
	}
	if !changed {
		return node, nil
	}
	return n.client.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{})
}

// WaitForPodCIDR waits until the node controller has given the Node a
// pod CIDR, and returns the Node then.
func (n *Node) WaitForPodCIDR(ctx context.Context) (*v1.Node, error) {
	sel := fields.OneTermEqualSelector("metadata.name", n.cfg.Name).String()
	lw := &cache.ListWatch{
		ListFunc: func(o metav1.ListOptions) (k8sruntime.Object, error) {
			o.FieldSelector = sel
			return n.client.CoreV1().Nodes().List(ctx, o)
		},
		WatchFunc: func(o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = sel
			return n.client.CoreV1().Nodes().Watch(ctx, o)
		},
	}
	ev, err := watchtools.UntilWithSync(ctx, lw, &v1.Node{}, nil, func(e watch.Event) (bool, error) {
		n, ok := e.Object.(*v1.Node)
		return ok && n.Spec.PodCIDR != "", nil
	})
	if err != nil {
		return nil, fmt.Errorf("wait for the pod CIDR of node %s: %w", n.cfg.Name, err)
	}
	return ev.Object.(*v1.Node), nil
}
