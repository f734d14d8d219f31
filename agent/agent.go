// Package agent is skiff's node agent, a small kubelet: it runs the pods
// bound to its node through containerd (package cri) and CNI (package
// cni); package agent/node keeps the Node itself (registration, lease,
// status).
//
// Each pod is synced by one worker at a time: observe what the runtime has,
// computePodActions (pure) to plan, carry the plan out, then write the pod's
// status. Syncs are triggered by the API (pod changes), by the runtime
// (container exits), by back-off timers and by a periodic relist, so a
// missed trigger only delays a sync.
package agent

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/clock"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/skiff-lab/skiff/agent/node"
	"github.com/skiff-lab/skiff/cni"
	"github.com/skiff-lab/skiff/cri"
	"github.com/skiff-lab/skiff/dns"
	"github.com/skiff-lab/skiff/probes"
	"github.com/skiff-lab/skiff/proxy"
)

// runtimeService is what the agent needs of the container runtime
// (implemented by *cri.Runtime; fakes in tests).
type runtimeService interface {
	sandboxRuntime
	containerRuntime
	imageService
	podFiles
	exitWatcher
	streamRuntime
}

// exitWatcher calls fn with the pod of every container that exits, until
// ctx ends or the runtime's event stream breaks.
type exitWatcher interface {
	WatchExits(ctx context.Context, fn func(cri.PodRef)) error
}

type sandboxRuntime interface {
	RunSandbox(ctx context.Context, spec cri.SandboxSpec) error
	SetSandboxIPs(ctx context.Context, id string, ips []string) error
	StopContainer(ctx context.Context, id string, grace time.Duration) (cri.Stop, error)
	RemoveContainer(ctx context.Context, id string) error
}

type containerRuntime interface {
	CreateContainer(ctx context.Context, spec cri.ContainerSpec) (string, error)
	StartContainer(ctx context.Context, id string) error
	UpdateResources(ctx context.Context, id string, res cri.Resources) error
	List(ctx context.Context, podUID string) ([]cri.Container, error)
	Version(ctx context.Context) (string, error)
	containerExec
}

type imageService interface {
	Image(ctx context.Context, ref string) (cri.Image, error)
	Pull(ctx context.Context, ref string, creds cri.Credentials) (cri.Image, error)
	Images(ctx context.Context) ([]cri.Image, error)
	RemoveImage(ctx context.Context, ref string) error
	MountImage(ctx context.Context, podUID, volume, ref, dir string) error
}

type podFiles interface {
	WritePodFile(uid, name string, data []byte) (string, error)
	EmptyDir(uid, volume string) (string, error)
	EmptyDirPath(uid, volume string) string
	VolumeDir(uid, plugin, name string) (string, error)
	PodDir(uid string) string
	SetPodResources(uid string, res *specs.LinuxResources) error
	RemovePod(ctx context.Context, pod cri.PodRef) error
}

// network is what the agent needs of pod networking (implemented by *cni.Network).
type network interface {
	podNetwork
	netnsInventory
	nodeNetwork
	podDialer
}

// nodeNetwork sets up the node's side of the pod network once it has a
// pod CIDR.
type nodeNetwork interface {
	Configure(podCIDR string) error
	EnsureMasquerade(podCIDR, clusterCIDR string) error
}

type podNetwork interface {
	CreateNetNS(id string) (string, error)
	Setup(ctx context.Context, pod cni.Pod) (cni.Result, error)
	Teardown(ctx context.Context, id string) error
}

type netnsInventory interface {
	List() ([]string, error)
	NetNSPath(id string) string
}

var (
	_ runtimeService = (*cri.Runtime)(nil)
	_ network        = (*cni.Network)(nil)
)

// Agent runs one node. Build it with Run.
type Agent struct {
	cfg          Config
	tracing      *sdktrace.TracerProvider // the steps of the node's pods' journeys (tracing.go)
	client       kubernetes.Interface
	rt           runtimeService
	net          network
	node         *node.Node // registration, lease, status, image GC
	objects      *podObjects
	prober       *probes.Prober         // runs probes and lifecycle hooks
	health       *probes.Manager        // probe workers of running containers
	stopping     sync.Map               // IDs of unhealthy containers being stopped
	evictions    sync.Map               // pod UID → why it is evicted
	podCIDR      atomic.Pointer[string] // set once the pod network is configured
	recorder     record.EventRecorder
	clock        clock.Clock
	crashBackoff *flowcontrol.Backoff
	pullBackoff  *flowcontrol.Backoff
	waits        *podMemory
	pods         *podWorkers
	allocs       *allocations // what each pod's containers were given (resize.go)
	claims       sync.Map     // claimKey → the host path of a claim volume (claims.go)
	pauseImage   string
	nodeIP       string
	// savedDNS is the cluster DNS server started from the saved catalog
	// before the API server was reached (dnsSnapshot.go), if it was.
	savedDNS *dns.Server
	proxier  atomic.Pointer[proxy.Proxier] // the service proxy, once started (servicesview.go)
}

func (a *Agent) firstSeen(uid types.UID) time.Time { return a.waits.firstSeen(uid, a.clock.Now()) }

func (a *Agent) forget(uid types.UID) {
	a.waits.forget(uid)
	a.pods.starts.forget(uid)
	a.evictions.Delete(uid)
	a.allocs.forget(uid)
	a.forgetClaims(uid)
	if a.health != nil {
		a.health.Remove(uid)
	}
}

func (a *Agent) netnsPath(id string) string { return a.net.NetNSPath(id) }

func typesUID(s string) types.UID { return types.UID(s) }
