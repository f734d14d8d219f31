package controlplane

import (
	"cmp"
	"context"
	"log/slog"
	"os"
	"time"

	"github.com/google/uuid"
	"github.com/skiff-lab/skiff/controlplane/apiserver/authn"
	"github.com/skiff-lab/skiff/controlplane/component"
	"github.com/skiff-lab/skiff/controlplane/controllers/admissionpolicystatus"
	"github.com/skiff-lab/skiff/controlplane/controllers/clusterroleaggregation"
	"github.com/skiff-lab/skiff/controlplane/controllers/cronjob"
	"github.com/skiff-lab/skiff/controlplane/controllers/csrapproving"
	"github.com/skiff-lab/skiff/controlplane/controllers/csrsigning"
	"github.com/skiff-lab/skiff/controlplane/controllers/daemonset"
	"github.com/skiff-lab/skiff/controlplane/controllers/deployment"
	"github.com/skiff-lab/skiff/controlplane/controllers/disruption"
	"github.com/skiff-lab/skiff/controlplane/controllers/endpoints"
	"github.com/skiff-lab/skiff/controlplane/controllers/endpointslice"
	"github.com/skiff-lab/skiff/controlplane/controllers/endpointslicemirroring"
	"github.com/skiff-lab/skiff/controlplane/controllers/ephemeral"
	"github.com/skiff-lab/skiff/controlplane/controllers/garbagecollector"
	"github.com/skiff-lab/skiff/controlplane/controllers/job"
	"github.com/skiff-lab/skiff/controlplane/controllers/namespace"
	"github.com/skiff-lab/skiff/controlplane/controllers/nodelifecycle"
	"github.com/skiff-lab/skiff/controlplane/controllers/persistentvolume"
	"github.com/skiff-lab/skiff/controlplane/controllers/podautoscaler"
	"github.com/skiff-lab/skiff/controlplane/controllers/podgc"
	"github.com/skiff-lab/skiff/controlplane/controllers/replicaset"
	"github.com/skiff-lab/skiff/controlplane/controllers/resourcequota"
	"github.com/skiff-lab/skiff/controlplane/controllers/rootcacert"
	"github.com/skiff-lab/skiff/controlplane/controllers/serviceaccount"
	"github.com/skiff-lab/skiff/controlplane/controllers/servicelb"
	"github.com/skiff-lab/skiff/controlplane/controllers/statefulset"
	"github.com/skiff-lab/skiff/controlplane/controllers/storageversionmigration"
	"github.com/skiff-lab/skiff/controlplane/controllers/tokencleaner"
	"github.com/skiff-lab/skiff/controlplane/controllers/ttlafterfinished"
	"github.com/skiff-lab/skiff/controlplane/controllers/volumeprotection"
	"github.com/skiff-lab/skiff/controlplane/scheduler"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	saauth "k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
)

// leaseName is the control plane's leader Lease in kube-system.
const leaseName = "skiff-controlplane"

// Who the control plane's parts are to the API server, as in kubeadm's
// cluster: the API server's own loopback client (which reconciles the
// bootstrap policy) is system:apiserver in system:masters; the shared
// informers, the events and the leader election are
// system:kube-controller-manager; the scheduler is system:kube-scheduler;
// and each controller writes as its own kube-system service account (as
// kube-controller-manager's --use-service-account-credentials), so that
// RBAC gives every part only its system:controller:<name> role.
var (
	apiserverUser         = authn.User{Name: user.APIServerUser, Groups: []string{user.SystemPrivilegedGroup}}
	controllerManagerUser = authn.User{Name: user.KubeControllerManager}
	schedulerUser         = authn.User{Name: user.KubeScheduler}
)

// controllerUser is the user of the kube-system service account sa.
func controllerUser(sa string) authn.User {
	return authn.User{Name: saauth.MakeUsername(metav1.NamespaceSystem, sa),
		Groups: saauth.MakeGroupNames(metav1.NamespaceSystem)}
}

// runComponents runs the scheduler and the controllers against the API
// server through lb, under leader election when cfg.LeaderElect is set so
// that of several servers on one etcd only one acts. The election has a
// client of its own. It returns when ctx ends.
func runComponents(ctx context.Context, lb *loopback, cfg Config) {
	restCfg := lb.config(controllerManagerUser.Name)
	client := kubernetes.NewForConfigOrDie(restCfg)
	run := func(ctx context.Context) { runLeading(ctx, restCfg, client, lb, cfg) }
	if !cfg.LeaderElect {
		run(ctx)
		return
	}
	id := cfg.Identity
	if id == "" {
		host, _ := os.Hostname()
		id = host + "_" + uuid.NewString()
	}
	err := component.RunElected(ctx, component.Election{Config: lb.config(controllerManagerUser.Name),
		Namespace: metav1.NamespaceSystem, Name: leaseName, Identity: id}, run)
	if err != nil {
		slog.Error("leader election", "err", err)
	}
}

// runLeading runs everything a leader runs until ctx ends.
func runLeading(ctx context.Context, restCfg *rest.Config, client kubernetes.Interface, lb *loopback, cfg Config) {
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
		Tracing: cfg.tracing.provider,
	}
	all := map[string]component.Constructor{}
	for name, p := range parts(cfg) {
		all[name] = lb.as(p.user, p.build)
	}
	if err := component.Run(ctx, cc, all); err != nil && ctx.Err() == nil {
		slog.Error("controllers", "err", err)
	}
}

// nodeCertValidity is the default longest lifetime of nodes' certificates.
const nodeCertValidity = 365 * 24 * time.Hour

// part is a component a leader runs and who it is to the API server.
type part struct {
	build component.Constructor
	user  authn.User
}

// parts lists the control loops a leader runs, each with the identity
// whose role upstream gives its namesake (servicelb is the service
// controller of skiff's built-in load balancer).
func parts(cfg Config) map[string]part {
	sa := func(name string, build component.Constructor) part { return part{build, controllerUser(name)} }
	all := map[string]part{
		"scheduler":                        {scheduler.New(cfg.scheduler), schedulerUser},
		"namespace":                        sa("namespace-controller", namespace.New),
		"serviceaccount":                   sa("service-account-controller", serviceaccount.New),
		"root-ca-cert-publisher":           sa("root-ca-cert-publisher", rootcacert.New(cfg.caPEM())),
		"tokencleaner":                     sa("token-cleaner", tokencleaner.New),
		"clusterrole-aggregation":          sa("clusterrole-aggregation-controller", clusterroleaggregation.New),
		"validatingadmissionpolicy-status": sa("validatingadmissionpolicy-status-controller", admissionpolicystatus.New),
		"csrapproving":                     sa("certificate-controller", csrapproving.New),
		"csrsigning": sa("certificate-controller", csrsigning.New(csrsigning.Config{CA: cfg.ca,
			MaxValidity: cmp.Or(cfg.NodeCertValidity, nodeCertValidity)})),
		"endpoints":               sa("endpoint-controller", endpoints.New),
		"endpointslice":           sa("endpointslice-controller", endpointslice.New),
		"endpointslicemirroring":  sa("endpointslicemirroring-controller", endpointslicemirroring.New),
		"replicaset":              sa("replicaset-controller", replicaset.New),
		"replicationcontroller":   sa("replication-controller", replicaset.NewReplicationControllers),
		"deployment":              sa("deployment-controller", deployment.New),
		"disruption":              sa("disruption-controller", disruption.New),
		"daemonset":               sa("daemon-set-controller", daemonset.New),
		"statefulset":             sa("statefulset-controller", statefulset.New),
		"persistentvolume-binder": sa("persistent-volume-binder", persistentvolume.New),
		"pvc-protection":          sa("pvc-protection-controller", volumeprotection.NewClaims),
		"pv-protection":           sa("pv-protection-controller", volumeprotection.NewVolumes),
		"ephemeral-volume":        sa("ephemeral-volume-controller", ephemeral.New),
		"job":                     sa("job-controller", job.New),
		"cronjob":                 sa("cronjob-controller", cronjob.New),
		"ttl-after-finished":      sa("ttl-after-finished-controller", ttlafterfinished.New),
		"nodelifecycle":           sa("node-controller", nodelifecycle.New(nodeLifecycleConfig(cfg))),
		// A bound pod's node counts as gone once it has been missing as
		// long as a node may stay silent (kube's fixed 40 s equals the
		// default grace period).
		"podgc": sa("pod-garbage-collector", podgc.New(podgc.Config{
			TerminatedPodThreshold: cfg.TerminatedPodGCThreshold, Quarantine: cfg.NodeMonitorGracePeriod})),
		"garbagecollector":         sa("generic-garbage-collector", garbagecollector.New),
		"resourcequota":            sa("resourcequota-controller", resourcequota.New),
		"horizontalpodautoscaling": sa("horizontal-pod-autoscaler", podautoscaler.New),
		"storage-version-migrator": sa("storage-version-migrator-controller", storageversionmigration.New),
	}
	if !cfg.DisableServiceLB {
		all["servicelb"] = sa("service-controller", servicelb.New)
	}
	return all
}

// componentUsers are every identity the control plane's parts use.
func componentUsers(cfg Config) []authn.User {
	users := []authn.User{apiserverUser, controllerManagerUser}
	for _, p := range parts(cfg) {
		users = append(users, p.user)
	}
	return users
}

// caPEM is the cluster CA's certificate (none in tests without a CA).
func (cfg Config) caPEM() []byte {
	if cfg.ca == nil {
		return nil
	}
	return cfg.ca.CertPEM
}

func nodeLifecycleConfig(cfg Config) nodelifecycle.Config {
	return nodelifecycle.Config{ClusterCIDR: cfg.ClusterCIDR, NodeCIDRMaskSize: cfg.NodeCIDRMaskSize,
		MonitorGracePeriod: cfg.NodeMonitorGracePeriod}
}
