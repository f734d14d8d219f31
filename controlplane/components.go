package controlplane

import (
	"cmp"
	"context"
	"log/slog"
	"os"
	"time"

	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"

	"github.com/skiff-lab/skiff/controlplane/apiserver"
	"github.com/skiff-lab/skiff/controlplane/component"
	"github.com/skiff-lab/skiff/controlplane/controllers/clusterroleaggregation"
	"github.com/skiff-lab/skiff/controlplane/controllers/csrapproving"
	"github.com/skiff-lab/skiff/controlplane/controllers/csrsigning"
	"github.com/skiff-lab/skiff/controlplane/controllers/deployment"
	"github.com/skiff-lab/skiff/controlplane/controllers/endpoints"
	"github.com/skiff-lab/skiff/controlplane/controllers/endpointslice"
	"github.com/skiff-lab/skiff/controlplane/controllers/garbagecollector"
	"github.com/skiff-lab/skiff/controlplane/controllers/namespace"
	"github.com/skiff-lab/skiff/controlplane/controllers/nodelifecycle"
	"github.com/skiff-lab/skiff/controlplane/controllers/podgc"
	"github.com/skiff-lab/skiff/controlplane/controllers/replicaset"
	"github.com/skiff-lab/skiff/controlplane/controllers/serviceaccount"
	"github.com/skiff-lab/skiff/controlplane/controllers/servicelb"
	"github.com/skiff-lab/skiff/controlplane/controllers/tokencleaner"
	"github.com/skiff-lab/skiff/controlplane/scheduler"
)

// leaseName is the control plane's leader Lease in kube-system.
const leaseName = "skiff-controlplane"

// componentsUser is who the scheduler and the controllers are to the API
// server.
var componentsUser = apiserver.User{Name: "system:skiff-controlplane", Groups: []string{"system:masters"}}

// runComponents runs the scheduler and the controllers against the API
// server through lb, under leader election when cfg.LeaderElect is set so
// that of several servers on one etcd only one acts. The election has a
// client of its own. It returns when ctx ends.
func runComponents(ctx context.Context, lb *loopback, cfg Config) {
	restCfg := lb.config(componentsUser.Name)
	client := kubernetes.NewForConfigOrDie(restCfg)
	run := func(ctx context.Context) { runLeading(ctx, restCfg, client, cfg) }
	if !cfg.LeaderElect {
		run(ctx)
		return
	}
	id := cfg.Identity
	if id == "" {
		host, _ := os.Hostname()
		id = host + "_" + uuid.NewString()
	}
	err := component.RunElected(ctx, component.Election{Config: lb.config(componentsUser.Name),
		Namespace: metav1.NamespaceSystem, Name: leaseName, Identity: id}, run)
	if err != nil {
		slog.Error("leader election", "err", err)
	}
}

// runLeading runs everything a leader runs until ctx ends.
func runLeading(ctx context.Context, restCfg *rest.Config, client kubernetes.Interface, cfg Config) {
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	defer broadcaster.Shutdown()
	cc := component.Context{
		Client:    client,
		Dynamic:   dynamic.NewForConfigOrDie(restCfg),
		Metadata:  metadata.NewForConfigOrDie(restCfg),
		Informers: informers.NewSharedInformerFactory(client, 0),
		Recorder: func(component string) record.EventRecorder {
			return broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: component})
		},
	}
	if err := component.Run(ctx, cc, constructors(cfg)); err != nil && ctx.Err() == nil {
		slog.Error("controllers", "err", err)
	}
}

// nodeCertValidity is the default longest lifetime of nodes' certificates.
const nodeCertValidity = 365 * 24 * time.Hour

// constructors lists the control loops a leader runs.
func constructors(cfg Config) map[string]component.Constructor {
	all := map[string]component.Constructor{
		"scheduler":               scheduler.New(cfg.scheduler),
		"namespace":               namespace.New,
		"serviceaccount":          serviceaccount.New,
		"tokencleaner":            tokencleaner.New,
		"clusterrole-aggregation": clusterroleaggregation.New,
		"csrapproving":            csrapproving.New,
		"csrsigning":              csrsigning.New(csrsigning.Config{CA: cfg.ca, MaxValidity: cmp.Or(cfg.NodeCertValidity, nodeCertValidity)}),
		"endpoints":               endpoints.New,
		"endpointslice":           endpointslice.New,
		"replicaset":              replicaset.New,
		"replicationcontroller":   replicaset.NewReplicationControllers,
		"deployment":              deployment.New,
		"nodelifecycle":           nodelifecycle.New(nodeLifecycleConfig(cfg)),
		// A bound pod's node counts as gone once it has been missing as
		// long as a node may stay silent (kube's fixed 40 s equals the
		// default grace period).
		"podgc": podgc.New(podgc.Config{
			TerminatedPodThreshold: cfg.TerminatedPodGCThreshold, Quarantine: cfg.NodeMonitorGracePeriod}),
		"garbagecollector": garbagecollector.New,
	}
	if !cfg.DisableServiceLB {
		all["servicelb"] = servicelb.New
	}
	return all
}

func nodeLifecycleConfig(cfg Config) nodelifecycle.Config {
	return nodelifecycle.Config{ClusterCIDR: cfg.ClusterCIDR, NodeCIDRMaskSize: cfg.NodeCIDRMaskSize,
		MonitorGracePeriod: cfg.NodeMonitorGracePeriod}
}
