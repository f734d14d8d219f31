// Package node keeps a node agent's Node: it registers the Node, waits for
// its pod CIDR, keeps its Lease in kube-node-lease and its status
// (capacity, allocatable, addresses, conditions from the machine's
// readings), and removes unused images while the node's disk is under
// pressure. The pods on the node are package agent's.
package node

import (
	"context"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/skiff-lab/skiff/cri"
)

// Config is the node as the agent was told to run it.
type Config struct {
	Name           string
	Labels         map[string]string // added to the well-known ones
	Taints         []v1.Taint        // registered with a new Node
	IP             string            // its InternalIP
	ExternalIP     string            // its ExternalIP, if it has one
	MaxPods        int               // pods it takes; default 110, the kubelet's
	APIPort        int               // of the node API; 0 when not served
	DataDir        string            // on the filesystem whose space the node reports
	SystemReserved v1.ResourceList   // taken from capacity for allocatable
	PauseImage     string            // never collected
}

// Runtime is what the node needs of the container runtime.
type Runtime interface {
	Version(ctx context.Context) (string, error)
	Images(ctx context.Context) ([]cri.Image, error)
	RemoveImage(ctx context.Context, ref string) error
}

// Node keeps one Node object. Build it with New.
type Node struct {
	cfg         Config
	client      kubernetes.Interface
	rt          Runtime
	clock       clock.Clock
	allocatable atomic.Pointer[v1.ResourceList]
}

// New returns the keeper of the Node cfg names.
func New(cfg Config, client kubernetes.Interface, rt Runtime, clk clock.Clock) *Node {
	return &Node{cfg: cfg, client: client, rt: rt, clock: clk}
}

// Allocatable is the node's allocatable resources as last computed (nil
// before the Node is registered).
func (n *Node) Allocatable() v1.ResourceList {
	if l := n.allocatable.Load(); l != nil {
		return *l
	}
	return nil
}

func (n *Node) setAllocatable(l v1.ResourceList) { n.allocatable.Store(&l) }
