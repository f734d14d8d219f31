package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/clock"

	"github.com/skiff-lab/skiff/agent/eviction"
	"github.com/skiff-lab/skiff/agent/node"
	"github.com/skiff-lab/skiff/agent/stats"
	"github.com/skiff-lab/skiff/cni"
	"github.com/skiff-lab/skiff/cri"
	"github.com/skiff-lab/skiff/cri/imagetar"
	"github.com/skiff-lab/skiff/cri/supervisor"
	"github.com/skiff-lab/skiff/host"
	"github.com/skiff-lab/skiff/localpath"
	"github.com/skiff-lab/skiff/version"
)

// relistEvery is how often the runtime is listed for changes.
const relistEvery = 10 * time.Second

// Run runs the node agent until ctx ends. Start-up, in order: without
// cfg.REST, the join and the connection to the API server (Config.Server),
// the kernel modules and sysctls a node needs, containerd
// (ours, unless an address is given), images (pause, then the air-gapped
// tarballs), the Node, the CNI config for its pod CIDR (in the background
// when it has none yet), then the lease, node status, pod workers, exit
// watch and relist loops, and the node's local-path provisioner (its
// volumes under DataDir/storage). On return containers keep running: a restarted
// agent adopts them.
func Run(ctx context.Context, cfg Config) error {
	cfg.setDefaults()
	if err := cfg.connect(ctx); err != nil {
		return err
	}
	if cfg.REST == nil || cfg.NodeName == "" || len(cfg.PauseBinary) == 0 {
		return errors.New("agent: REST config (or a server), node name and pause binary are required")
	}
	if err := host.Prepare(host.System, cfg.PodNetwork == PodNetworkVXLAN); err != nil {
		return fmt.Errorf("agent: this machine cannot run pods: %w", err)
	}
	// The node's keys, pods' secrets and containerd's socket are under
	// the data dir: root's only.
	if err := host.PrivateDir(cfg.DataDir); err != nil {
		return fmt.Errorf("agent: --data-dir: %w", err)
	}
	a, err := newAgent(ctx, cfg)
	if err != nil {
		return err
	}
	defer a.stopTracing()
	collector := stats.New(stats.Config{NodeName: cfg.NodeName, CgroupRoot: cfg.CgroupRoot, Pods: a.statsPods})
	go collector.Run(ctx)
	if err := a.serveCRI(ctx, collector); err != nil {
		return fmt.Errorf("agent: CRI socket: %w", err)
	}
	if err := a.serveSavedDNS(ctx); err != nil {
		return fmt.Errorf("agent: cluster DNS: %w", err)
	}
	var self *v1.Node
	err = untilReachable(ctx, a.clock, "node registration", func() (err error) {
		self, err = a.node.Register(ctx)
		return err
	})
	if err != nil {
		return err
	}
	if self.Spec.PodCIDR == "" {
		go a.awaitPodCIDR(ctx)
	} else if err := a.configureNetwork(ctx, self.Spec.PodCIDR); err != nil {
		return err
	}
	if a.objects, err = watchPodObjects(ctx, a.client, cfg.NodeName, a.objectChanged, a.queuePod); err != nil {
		return err
	}
	slog.Info("agent ready", "node", cfg.NodeName, "podCIDR", self.Spec.PodCIDR, "ip", a.nodeIP)
	go a.node.RenewLease(ctx, self)
	go a.node.PostStatus(ctx)
	// The pods bound here are known before anything on the node is judged:
	// until then every running pod would look like an orphan, and the
	// relist would remove pods a restarted agent should adopt.
	if synced, err := a.watchPods(ctx); err != nil || !synced {
		return err // !synced: ctx ended first
	}
	if cfg.Registered != nil {
		close(cfg.Registered)
	}
	go a.watchExits(ctx)
	go a.relist(ctx)
	go eviction.WatchVolumeUsage(ctx, a.clock, evictionHost{a})
	provisioner, err := localpath.NewNodeProvisioner(a.client, newRecorder(ctx, a.client, localpath.Provisioner+"_"+cfg.NodeName, cfg.NodeName),
		cfg.NodeName, filepath.Join(cfg.DataDir, "storage"))
	if err != nil {
		return err
	}
	go provisioner.Run(ctx)
	if err := a.serveNodeAPI(ctx, collector); err != nil {
		return err
	}
	a.runWorkers(ctx, cfg.Workers)
	return nil
}

func newAgent(ctx context.Context, cfg Config) (*Agent, error) {
	registerMetrics(cfg.NodeName)
	rc := rest.CopyConfig(cfg.REST)
	if rc.QPS == 0 {
		rc.QPS, rc.Burst = 50, 100 // the kubelet's defaults
	}
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("agent client: %w", err)
	}
	rt, err := startRuntime(ctx, cfg)
	if err != nil {
		return nil, err
	}
	cfg.Port = nodeAPIPort(cfg)
	a := &Agent{
		cfg: cfg, client: client, rt: rt, clock: clock.RealClock{},
		crashBackoff: flowcontrol.NewBackOff(10*time.Second, 5*time.Minute),
		pullBackoff:  flowcontrol.NewBackOff(10*time.Second, 5*time.Minute),
		waits:        newPodMemory(), pods: newPodWorkers(), allocs: newAllocations(), nodeIP: cfg.NodeIP,
		recorder: newRecorder(ctx, client, "kubelet", cfg.NodeName),
	}
	if err := a.startTracing(rc); err != nil {
		return nil, err
	}
	a.startProbes(rt)
	ncfg := cniConfig(cfg)
	if ncfg.MTU, err = podMTU(cfg); err != nil {
		return nil, err
	}
	a.net = cni.New(ncfg)
	if a.pauseImage, err = importImages(ctx, rt, cfg); err != nil {
		return nil, err
	}
	a.node = node.New(node.Config{
		Name: cfg.NodeName, Labels: cfg.NodeLabels, Taints: cfg.Taints, IP: cfg.NodeIP, ExternalIP: cfg.NodeExternalIP, MaxPods: cfg.MaxPods, APIPort: cfg.Port,
		DataDir: cfg.DataDir, SystemReserved: cfg.SystemReserved, PauseImage: a.pauseImage,
	}, client, rt, a.clock)
	return a, nil
}

// configureNetwork writes the CNI config for the pod CIDR and the node's
// masquerade rule and starts keeping the routes to the other nodes' pods;
// from then on pods get the pod network.
func (a *Agent) configureNetwork(ctx context.Context, podCIDR string) error {
	if err := a.net.Configure(podCIDR); err != nil {
		return fmt.Errorf("configure pod network: %w", err)
	}
	if err := a.net.EnsureMasquerade(podCIDR, a.cfg.ClusterCIDR); err != nil {
		return fmt.Errorf("pod masquerade: %w", err)
	}
	routes, err := a.podRoutes(ctx, podCIDR)
	if err != nil {
		return fmt.Errorf("pod network %s: %w", a.cfg.PodNetwork, err)
	}
	go a.routePods(ctx, routes)
	a.podCIDR.Store(&podCIDR)
	return a.startServices(ctx, podCIDR)
}

// awaitPodCIDR waits for the node controller to give the node a pod CIDR,
// then configures the pod network and wakes the pods that waited for it.
// Until then host-network pods run; the others fail their sandbox with
// errNoPodCIDR (an event each) and are retried with back-off.
func (a *Agent) awaitPodCIDR(ctx context.Context) {
	slog.Warn("the node has no pod CIDR yet: pods on the pod network wait for one (see the node's NetworkUnavailable condition)",
		"node", a.cfg.NodeName)
	self, err := a.node.WaitForPodCIDR(ctx)
	if err != nil {
		return // ctx ended
	}
	podCIDR := self.Spec.PodCIDR
	if err := a.configureNetwork(ctx, podCIDR); err != nil {
		slog.Error("pod network", "node", a.cfg.NodeName, "podCIDR", podCIDR, "err", err)
		return
	}
	slog.Info("pod network configured", "node", a.cfg.NodeName, "podCIDR", podCIDR)
	a.pods.enqueueAll()
}

// errNoPodCIDR fails the sandbox of a pod on the pod network while the
// node has no pod CIDR to give it an IP from.
var errNoPodCIDR = errors.New("the node has no pod CIDR yet, so the pod cannot get an IP: " +
	"the node controller gives one when the cluster CIDR has a subnet free (see the node's NetworkUnavailable condition)")

// startRuntime connects to containerd, starting our own if no address is given.
func startRuntime(ctx context.Context, cfg Config) (*cri.Runtime, error) {
	address, d, err := startContainerd(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if d != nil {
		go d.Supervise(ctx)
	}
	return connectRuntime(ctx, cfg, address)
}

// startContainerd starts (or adopts) the agent's own containerd, unless
// cfg names one; it returns the address to reach containerd at.
func startContainerd(ctx context.Context, cfg Config) (string, *supervisor.Daemon, error) {
	if cfg.ContainerdAddress != "" {
		return cfg.ContainerdAddress, nil, nil
	}
	d, err := supervisor.Start(ctx, supervisor.Config{Dir: cfg.dir("containerd"), Binary: cfg.ContainerdBinary})
	if err != nil {
		return "", nil, fmt.Errorf("start containerd: %w", err)
	}
	return d.Address(), d, nil
}

func connectRuntime(ctx context.Context, cfg Config, address string) (*cri.Runtime, error) {
	return cri.Connect(ctx, cri.Config{Address: address, Namespace: cfg.Namespace, StateDir: cfg.dir("pods"),
		PodLogDir: cfg.PodLogDir, CgroupRoot: cfg.CgroupRoot, Insecure: cfg.InsecureRegistries, Mirrors: cfg.RegistryMirrors, Registries: cfg.Registries,
		LogRotation: cfg.LogRotation})
}

// cniConfig is the pod network's configuration for cfg.
func cniConfig(cfg Config) cni.Config {
	return cni.Config{PluginDirs: cfg.CNIPluginDirs, ConfDir: cfg.dir("cni", "net.d"),
		CacheDir: cfg.dir("cni", "cache"), NetNSDir: cfg.NetNSDir, Bridge: cfg.Bridge}
}

// importImages imports the built-in pause image and every tarball in the
// images directory, and then those that appear there, returning the pause
// image's reference.
func importImages(ctx context.Context, rt *cri.Runtime, cfg Config) (string, error) {
	ref := "skiff.local/pause:" + version.Version
	var tar bytes.Buffer
	files := []imagetar.File{{Path: "/pause", Mode: 0o755, Data: cfg.PauseBinary}}
	if err := imagetar.Write(&tar, ref, files, imagetar.Config{Entrypoint: []string{"/pause"}}); err != nil {
		return "", fmt.Errorf("build pause image: %w", err)
	}
	if _, err := rt.Import(ctx, &tar); err != nil {
		return "", fmt.Errorf("import pause image: %w", err)
	}
	images := &imageDir{dir: cfg.dir("images"), rt: rt, clock: clock.RealClock{}, seen: map[string]fileStamp{}}
	images.scan(ctx, 0)
	go images.watch(ctx)
	return ref, nil
}

// newRecorder reports events as component on node.
func newRecorder(ctx context.Context, client kubernetes.Interface, component, node string) record.EventRecorder {
	b := record.NewBroadcaster(record.WithContext(ctx))
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	return b.NewRecorder(scheme.Scheme, v1.EventSource{Component: component, Host: node})
}

// watchPods starts the informer for the pods bound to this node and waits
// until it has listed them; synced is false if ctx ended first.
func (a *Agent) watchPods(ctx context.Context) (synced bool, err error) {
	sel := fields.OneTermEqualSelector("spec.nodeName", a.cfg.NodeName).String()
	factory := informers.NewSharedInformerFactoryWithOptions(a.client, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.FieldSelector = sel }))
	inf := factory.Core().V1().Pods().Informer()
	if _, err := inf.AddEventHandler(a.objects.handlers()); err != nil {
		return false, err
	}
	reg, err := inf.AddEventHandler(a.pods.handlers())
	if err != nil {
		return false, err
	}
	factory.Start(ctx.Done())
	return cache.WaitForCacheSync(ctx.Done(), reg.HasSynced), nil
}

// watchExits syncs a pod as soon as one of its containers exits.
func (a *Agent) watchExits(ctx context.Context) {
	for ctx.Err() == nil {
		err := a.rt.WatchExits(ctx, func(ref cri.PodRef) { a.pods.queue.Add(typesUID(ref.UID)) })
		if err != nil && ctx.Err() == nil {
			slog.Warn("watch container exits", "err", err)
		}
		select {
		case <-ctx.Done():
		case <-a.clock.After(time.Second):
		}
	}
}

// relist notices what changed in the runtime without an event (a missed
// exit, a container gone), syncs the pods concerned, and finds pods the API
// forgot. Every pod is synced every resyncEvery regardless.
func (a *Agent) relist(ctx context.Context) {
	var last map[string]string
	for round := 0; ; round++ {
		last = a.relistOnce(ctx, last, round%int(resyncEvery/relistEvery) == 0)
		select {
		case <-ctx.Done():
			return
		case <-a.clock.After(relistEvery):
		}
	}
}

// resyncEvery is how often every pod is synced even if nothing changed.
const resyncEvery = time.Minute

func (a *Agent) relistOnce(ctx context.Context, last map[string]string, all bool) map[string]string {
	if all {
		a.pods.enqueueAll()
	}
	start := time.Now()
	containers, err := a.rt.List(ctx, "")
	if err != nil {
		slog.Warn("relist", "err", err)
		return last
	}
	observeRelist(containers, time.Since(start))
	prints, refs := fingerprints(containers)
	for _, uid := range changedPods(last, prints) {
		a.pods.queue.Add(typesUID(uid))
	}
	a.pods.adoptOrphans(refs)
	a.cleanupNetworks(ctx, containers)
	a.node.CollectImages(ctx, containers)
	a.crashBackoff.GC()
	a.pullBackoff.GC()
	return prints
}
