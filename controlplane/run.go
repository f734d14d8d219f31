// Package controlplane runs skiff's control plane: the etcd store (embedded
// or external), the API server, and, under leader election, the scheduler
// and the controllers (components.go), which reach the API server through
// in-process loopback connections. With a node configured it also runs
// that node's agent in the same process.
package controlplane

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/containerd/continuity"
	"github.com/skiff-lab/skiff/controlplane/apiserver"
	"github.com/skiff-lab/skiff/controlplane/apiserver/authn"
	"github.com/skiff-lab/skiff/controlplane/apiserver/codec"
	"github.com/skiff-lab/skiff/controlplane/apiserver/registry"
	"github.com/skiff-lab/skiff/controlplane/dynadmission"
	"github.com/skiff-lab/skiff/controlplane/embedded"
	"github.com/skiff-lab/skiff/controlplane/encryption"
	"github.com/skiff-lab/skiff/controlplane/etcdsnapshot"
	"github.com/skiff-lab/skiff/controlplane/pki"
	"github.com/skiff-lab/skiff/controlplane/satoken"
	"github.com/skiff-lab/skiff/controlplane/scheduler"
	"github.com/skiff-lab/skiff/controlplane/store"
	"github.com/skiff-lab/skiff/host"
	"github.com/skiff-lab/skiff/jointoken"
	"github.com/skiff-lab/skiff/localpath"
	clientv3 "go.etcd.io/etcd/client/v3"
	apiserverconfig "k8s.io/apiserver/pkg/apis/apiserver"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/server/healthz"
	utilflowcontrol "k8s.io/apiserver/pkg/util/flowcontrol"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	aggregatorclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset/typed/apiregistration/v1"
)

// compactionInterval is how often etcd's history is compacted, keeping at
// least this much of it (as kube-apiserver does).
const compactionInterval = 5 * time.Minute

// Config is the control plane's configuration; the zero value of each
// field means its default as documented on the `skiff server` flags.
type Config struct {
	DataDir          string
	BindAddress      string
	SecurePort       int
	AdvertiseAddress string
	KubeconfigPath   string
	KubeconfigMode   os.FileMode // of KubeconfigPath; default 0600
	EtcdServers      []string
	// EtcdClient is how the server authenticates to EtcdServers.
	EtcdClient     EtcdClientFiles
	EtcdClientPort int
	EtcdPeerPort   int
	ServiceCIDR    string
	NodePortRange  string
	TokenAuthFile  string
	// OIDC is the --oidc-* flags (an issuer when IssuerURL is set);
	// AuthenticationConfig, kube-apiserver's --authentication-config file,
	// excludes them. Their ID tokens are bearer tokens.
	OIDC                 authn.OIDC
	AuthenticationConfig string
	// AuthorizationMode lists the authorizers, in order, comma-separated:
	// AuthorizationNode, AuthorizationRBAC (the bootstrap policy
	// reconciled, then RBAC) or AuthorizationAlwaysAllow (alone: every
	// authenticated user may do everything but a bootstrapper's limits).
	// Empty means DefaultAuthorizationMode.
	AuthorizationMode string
	// ServiceAccountIssuer is the iss of the service account tokens the
	// server issues (default satoken.DefaultIssuer); APIAudiences are the
	// audiences it accepts them for (default: the issuer).
	ServiceAccountIssuer string
	APIAudiences         []string
	// Audit is the audit policy and log (none when unset).
	Audit AuditLog
	// EncryptionProviderConfig is an EncryptionConfiguration file: the
	// resources it names are encrypted in etcd (package encryption).
	EncryptionProviderConfig string
	// DisableAdmissionPlugins names admission plugins (of
	// AdmissionPlugins) not to run.
	DisableAdmissionPlugins []string
	// NoAnonymous refuses requests without credentials (401) instead of
	// authorizing them as system:anonymous (--anonymous-auth=false).
	NoAnonymous bool
	// authorizers is what Run parsed from AuthorizationMode.
	authorizers []string
	// BookmarkInterval is how often the embedded etcd reports progress to
	// idle watches, which reach clients that allow them as bookmarks (an
	// external etcd uses its own --experimental-watch-progress-notify-interval).
	BookmarkInterval time.Duration
	// LeaderElect runs the scheduler and controllers only while this
	// server holds the kube-system/skiff-controlplane Lease.
	LeaderElect bool
	// Identity names this server in the leader Lease (default:
	// hostname_random).
	Identity string
	// SchedulerConfigFile is the scheduler's configuration file (see
	// scheduler.LoadConfig); empty means the defaults.
	SchedulerConfigFile string
	// scheduler is what Run loaded from SchedulerConfigFile.
	scheduler scheduler.Config
	// NodeCertValidity is the longest lifetime of the certificates the
	// cluster CA signs for nodes (default one year).
	NodeCertValidity time.Duration
	// ca is the cluster CA, which signs nodes' certificate requests.
	ca *pki.CA
	// ClusterCIDR is the range pod IPs come from; the node lifecycle
	// controller gives every node a subnet of it as its spec.podCIDR.
	// Empty means 10.244.0.0/16.
	ClusterCIDR string
	// NodeCIDRMaskSize is the prefix length of each node's subnet; zero
	// means 24 for IPv4 and 64 for IPv6.
	NodeCIDRMaskSize int
	// NodeMonitorGracePeriod is how long a node may go without renewing its
	// Lease (or posting status) before the node lifecycle controller marks
	// it Unknown and taints it unreachable; it is also how long the pod
	// garbage collector waits before it treats a missing node as gone.
	// Zero means 40s.
	NodeMonitorGracePeriod time.Duration
	// TerminatedPodGCThreshold is how many Succeeded or Failed pods are
	// kept before the pod garbage collector deletes the oldest. Zero means
	// 12500; negative keeps them all.
	TerminatedPodGCThreshold int
	// DisableServiceLB leaves LoadBalancer services without ingress
	// addresses (servicelb), for another implementation to give them.
	DisableServiceLB bool
	// DisableLocalStorage does not make the default StorageClass,
	// local-path (package localpath), at start.
	DisableLocalStorage bool
	// DisableComponents runs the API server alone (no scheduler, no
	// controllers); for tests of the API server itself.
	DisableComponents bool
	// ClusterInit makes the embedded etcd the first member of a cluster
	// of servers: its peer listener on the advertised address, and other
	// servers may join (JoinServer).
	ClusterInit bool
	// JoinServer and JoinToken, on a server's first start, join it to the
	// cluster of the server at JoinServer (https://host:port) with a
	// server token (<data-dir>/server/server-token of any server): it
	// takes the servers' shared keys and becomes a member of their etcd.
	JoinServer, JoinToken string
	// EtcdSnapshots is when the embedded etcd is snapshotted, into
	// <data-dir>/server/db/snapshots unless its Dir says; a zero Cron
	// takes none.
	EtcdSnapshots etcdsnapshot.Schedule
	// TLSSANs are more names and addresses for the serving certificate
	// (a load balancer's, a virtual IP).
	TLSSANs []string
	// Tracing is how pods' journeys are traced (tracing.go).
	Tracing Tracing
	tracing tracing
	// etcdPeerHost and etcdJoin are how Run runs the embedded etcd: on
	// loopback alone, or as a member of a cluster of servers.
	etcdPeerHost string
	etcdJoin     *serverJoin
	etcdLost     func(error)
	// Ready, if set, is closed once the API server accepts requests.
	Ready chan<- struct{}
	// Answering, if set, is closed once /readyz answers ok: the
	// authorizer is installed (systemd's READY=1).
	Answering chan<- struct{}
	// Node, if set, runs in the server process once the API server serves:
	// the in-process node agent, with NodeCredentials. It is stopped (its
	// ctx ends) before the API server on shutdown.
	Node     func(ctx context.Context, creds NodeCredentials) error
	NodeName string
}

// NodeCredentials are how the in-process node agent joins the cluster,
// the way every other node does (package agent/join).
type NodeCredentials struct {
	Server string // the API server's URL
	Token  string // the join token of <data-dir>/server/token
}

// KubeletClientName is the common name of the API server's client
// certificate for nodes' APIs; agents accept only it (agent's
// DefaultAPIServerClient).
const KubeletClientName = "skiff-apiserver-kubelet-client"

// Run starts the control plane and serves until ctx ends.
func Run(ctx context.Context, cfg Config) error {
	// A server whose etcd member is removed from its cluster stops.
	ctx, lost := context.WithCancelCause(ctx)
	defer lost(nil)
	cfg.etcdLost = lost
	err := run(ctx, cfg)
	if cause := context.Cause(ctx); err == nil && cause != nil && !errors.Is(cause, context.Canceled) {
		err = cause
	}
	return err
}

func run(ctx context.Context, cfg Config) error {
	if err := nodeLifecycleConfig(cfg).Check(); err != nil {
		return fmt.Errorf("--cluster-cidr, --node-cidr-mask-size: %w", err)
	}
	var err error
	if cfg.authorizers, err = parseAuthorizationModes(cfg.AuthorizationMode); err != nil {
		return err
	}
	if cfg.scheduler, err = scheduler.LoadConfig(cfg.SchedulerConfigFile); err != nil {
		return fmt.Errorf("--scheduler-config: %w", err)
	}
	dir := filepath.Join(cfg.DataDir, "server")
	if err := secureDataDir(cfg.DataDir); err != nil {
		return fmt.Errorf("--data-dir: %w", err)
	}
	advertise, err := advertiseAddress(cfg)
	if err != nil {
		return err
	}
	if err := clusterServers(ctx, &cfg, dir, advertise); err != nil {
		return err
	}
	ca, err := pki.LoadOrCreateCA(filepath.Join(dir, "tls"), "skiff-ca")
	if err != nil {
		return err
	}
	cfg.ca = ca
	client, etcdAccess, stop, err := openEtcd(ctx, cfg, dir)
	if err != nil {
		return err
	}
	defer stop()
	cluster := &clusterAPI{dir: dir, encryption: cfg.EncryptionProviderConfig}
	if cfg.etcdPeerHost != "" && len(cfg.EtcdServers) == 0 {
		cluster.etcd = client
	}
	if err := scheduleSnapshots(ctx, cfg, client, dir); err != nil {
		return err
	}
	st := store.New(client, codec.Scheme)
	lb := newLoopback()
	for _, u := range componentUsers(cfg) {
		lb.register(u)
	}
	// The server's own caches (the Node authorizer's, RBAC's, the
	// admission plugins'), filled through its loopback as system:apiserver.
	self := kubernetes.NewForConfigOrDie(lb.config(apiserverUser.Name))
	caches := informers.NewSharedInformerFactory(self, 0)
	audit, auditLog, err := auditor(cfg.Audit)
	if err != nil {
		return err
	}
	defer auditLog.Close()
	jwts, jwtChecks, err := jwtAuthenticators(ctx, cfg)
	if err != nil {
		return err
	}
	if cfg.tracing, err = startTracing(cfg.Tracing, ca); err != nil {
		return err
	}
	defer cfg.tracing.shutdown()
	srv, err := newAPIServer(cfg, st, ca, lb, audit, cluster, jwts)
	if err != nil {
		return err
	}
	srv.AddReadyzChecks(append(jwtChecks, healthz.NewInformerSyncHealthz(caches))...)
	if err := cluster.watchDeletedServers(caches); err != nil {
		return err
	}
	services, err := dynadmission.NewServiceResolver(caches)
	if err != nil {
		return err
	}
	dyn, err := dynadmission.NewPlugins(ctx, dynadmission.Config{Loopback: lb.config(apiserverUser.Name), Informers: caches,
		Authorizer: srv, Services: services})
	if err != nil {
		return err
	}
	chain, err := admissionChain(caches, self, srv, dyn, cfg.DisableAdmissionPlugins)
	if err != nil {
		return err
	}
	srv.SetAdmission(chain)
	flowControl := utilflowcontrol.New(caches, self.FlowcontrolV1(), serverConcurrencyLimit)
	srv.SetFlowControl(flowControl)
	go apiserver.RunFlowControl(ctx, flowControl)
	go st.RunCompactor(ctx, compactionInterval)
	embed := embedded.Config{Etcd: etcdAccess, Loopback: lb.config(apiserverUser.Name), Informers: caches, Services: services,
		Authorizer: srv, Admission: chain, NotFound: srv.NotFound(), Discovery: srv.AggregatedDiscovery(), ExternalAddress: net.JoinHostPort(advertise, strconv.Itoa(cfg.SecurePort))}
	ext, err := extensions(embed, filepath.Join(dir, "tls", "front-proxy"))
	if err != nil {
		return err
	}
	srv.SetExtensions(ext)
	if err := srv.Bootstrap(ctx, advertise, cfg.SecurePort); err != nil {
		return fmt.Errorf("bootstrap: %w", err)
	}
	if !cfg.DisableLocalStorage {
		if err := srv.EnsureStorageClass(ctx, localpath.Class()); err != nil {
			return fmt.Errorf("bootstrap: %w", err)
		}
	}
	if err := srv.PublishAuthenticationInfo(ctx, ca.CertPEM, ext.requestHeaderCA, []string{FrontProxyClientName}); err != nil {
		return fmt.Errorf("authentication info: %w", err)
	}
	if err := ensureJoinToken(ctx, srv, ca, filepath.Join(dir, joinTokenFile), nil); err != nil {
		return fmt.Errorf("join token: %w", err)
	}
	if err := ensureJoinToken(ctx, srv, ca, filepath.Join(dir, serverTokenFile), []string{jointoken.ServersGroup}); err != nil {
		return fmt.Errorf("server token: %w", err)
	}
	return serve(ctx, cfg, srv, ext, ca, advertise, lb, caches)
}

// scheduleSnapshots takes the embedded etcd's scheduled snapshots.
func scheduleSnapshots(ctx context.Context, cfg Config, client *clientv3.Client, dir string) error {
	s := cfg.EtcdSnapshots
	if s.Cron == "" || len(cfg.EtcdServers) > 0 {
		return nil
	}
	s.Dir = cmp.Or(s.Dir, filepath.Join(dir, "db", "snapshots"))
	if s.Node == "" {
		s.Node, _ = os.Hostname()
	}
	return etcdsnapshot.Run(ctx, client, s)
}

// serverConcurrencyLimit is how many requests priority and fairness lets
// run at once, shared among the priority levels: kube-apiserver's default
// (--max-requests-inflight 400 and --max-mutating-requests-inflight 200).
const serverConcurrencyLimit = 600

// jwtAuthenticators are the JWT issuers cfg names (--oidc-*, or those of
// --authentication-config) and their readiness checks.
func jwtAuthenticators(ctx context.Context, cfg Config) ([]authenticator.Token, []healthz.HealthChecker, error) {
	var jwts []apiserverconfig.JWTAuthenticator
	switch {
	case cfg.AuthenticationConfig != "" && cfg.OIDC.IssuerURL != "":
		return nil, nil, errors.New("--authentication-config and --oidc-* exclude each other")
	case cfg.AuthenticationConfig != "":
		var err error
		if jwts, err = authn.LoadAuthenticationConfig(cfg.AuthenticationConfig); err != nil {
			return nil, nil, err
		}
	case cfg.OIDC.IssuerURL != "" || cfg.OIDC.ClientID != "":
		jwt, err := cfg.OIDC.JWTAuthenticator()
		if err != nil {
			return nil, nil, err
		}
		jwts = append(jwts, jwt)
	}
	return authn.NewJWT(ctx, jwts, cfg.OIDC.SigningAlgs)
}

func newAPIServer(cfg Config, st *store.Store, ca *pki.CA, lb *loopback, audit *apiserver.Audit, cluster http.Handler, jwts []authenticator.Token) (*apiserver.Server, error) {
	_, cidr, err := net.ParseCIDR(cfg.ServiceCIDR)
	if err != nil {
		return nil, fmt.Errorf("--service-cidr: %w", err)
	}
	ports, err := registry.ParsePortRange(cfg.NodePortRange)
	if err != nil {
		return nil, fmt.Errorf("--service-node-port-range: %w", err)
	}
	kubeletClient, err := issuePair(ca, KubeletClientName, []string{"system:masters"}, nil, x509.ExtKeyUsageClientAuth)
	if err != nil {
		return nil, fmt.Errorf("node API client certificate: %w", err)
	}
	key, err := satoken.LoadOrCreateKey(filepath.Join(cfg.DataDir, "server", "tls", "service-account.key"))
	if err != nil {
		return nil, fmt.Errorf("service account key: %w", err)
	}
	issuer, err := satoken.New(cmp.Or(cfg.ServiceAccountIssuer, satoken.DefaultIssuer), key, cfg.APIAudiences)
	if err != nil {
		return nil, err
	}
	var enc *encryption.Config
	if cfg.EncryptionProviderConfig != "" {
		if enc, err = encryption.Load(cfg.EncryptionProviderConfig); err != nil {
			return nil, fmt.Errorf("--encryption-provider-config: %w", err)
		}
	}
	acfg := apiserver.Config{Store: st, CA: ca, ServiceAccounts: issuer, Encryption: enc, Audit: audit, ServiceCIDR: cidr, NodePorts: ports,
		KubeletTLS: &tls.Config{Certificates: []tls.Certificate{kubeletClient}, RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12},
		Tokens:     maps.Clone(lb.tokens), TokenAuthFile: cfg.TokenAuthFile, TokenAuthenticators: jwts,
		Authorize: authorizes(cfg.authorizers), NoAnonymous: cfg.NoAnonymous, Cluster: cluster,
		Tracing: cfg.tracing.provider, Journeys: cfg.tracing.journeys, JourneyPeers: cfg.tracing.peers}
	return apiserver.New(acfg)
}

func serve(ctx context.Context, cfg Config, srv *apiserver.Server, ext *servers, ca *pki.CA, advertise string, lb *loopback, caches informers.SharedInformerFactory) error {
	addr := net.JoinHostPort(cfg.BindAddress, strconv.Itoa(cfg.SecurePort))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	names := servingNames(cfg, advertise, srv.FirstServiceIP())
	dir := filepath.Join(cfg.DataDir, "server", "tls")
	cert, err := ca.LoadOrIssueServing(filepath.Join(dir, "serving.crt"), filepath.Join(dir, "serving.key"), "skiff-apiserver", names)
	if err != nil {
		ln.Close()
		return err
	}
	// The chain ends with the CA, so that a joining node can pin it to the
	// hash its token carries.
	cert.Certificate = append(cert.Certificate, ca.Cert.Raw)
	url := "https://" + net.JoinHostPort(clientHost(cfg.BindAddress), strconv.Itoa(cfg.SecurePort))
	if cfg.KubeconfigPath != "" {
		if err := ca.WriteKubeconfig(cfg.KubeconfigPath, cmp.Or(cfg.KubeconfigMode, 0o600), url, "skiff-admin", []string{"system:masters"}); err != nil {
			ln.Close()
			return fmt.Errorf("write kubeconfig: %w", err)
		}
	}
	slog.Info("API server listening", "address", ln.Addr().String(), "kubeconfig", cfg.KubeconfigPath)
	if cfg.Ready != nil {
		close(cfg.Ready)
	}
	// On shutdown the components and the embedded servers stop first,
	// while the API server still answers, so that the leader can release
	// its Lease and the embedded servers finish starting.
	serverCtx, stopServer := context.WithCancel(context.WithoutCancel(ctx))
	defer stopServer()
	caches.Start(ctx.Done())
	extDone := ext.run(ctx)
	go registerAPIServices(ctx, aggregatorclient.NewForConfigOrDie(lb.config(apiserverUser.Name)), srv.GroupVersions())
	go func() {
		if runAuthorizer(ctx, cfg.authorizers, srv, lb, caches) && cfg.Answering != nil {
			close(cfg.Answering)
		}
	}()
	componentsDone := make(chan struct{})
	go func() {
		defer close(componentsDone)
		if !cfg.DisableComponents {
			runComponents(ctx, lb, cfg)
		}
	}()
	nodeDone := runNode(ctx, cfg, url)
	endpointsDone := srv.RunEndpointReconciler(ctx, advertise, cfg.SecurePort)
	go func() {
		<-ctx.Done()
		<-componentsDone
		<-nodeDone
		<-extDone
		<-endpointsDone
		stopServer()
	}()
	err = srv.Serve(serverCtx, ln, cert, lb.listener)
	<-componentsDone
	<-endpointsDone
	return err
}

// runNode runs cfg.Node, if any, in the background, with the join token
// and the server's URL; the channel closes when it has returned. A
// failing agent is logged; the control plane goes on.
func runNode(ctx context.Context, cfg Config, url string) <-chan struct{} {
	done := make(chan struct{})
	if cfg.Node == nil {
		close(done)
		return done
	}
	go func() {
		defer close(done)
		tok, err := os.ReadFile(filepath.Join(cfg.DataDir, "server", "token"))
		if err == nil {
			err = cfg.Node(ctx, NodeCredentials{Server: url, Token: strings.TrimSpace(string(tok))})
		}
		if err != nil && ctx.Err() == nil {
			slog.Error("node agent stopped", "node", cfg.NodeName, "err", err)
		}
	}()
	return done
}

// clientHost is the host a local client dials to reach a server bound to bind.
func clientHost(bind string) string {
	if ip := net.ParseIP(bind); bind == "" || (ip != nil && ip.IsUnspecified()) {
		return "127.0.0.1"
	}
	return bind
}

func servingNames(cfg Config, advertise, serviceIP string) []string {
	names := []string{"localhost", "127.0.0.1", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
		"kubernetes.default.svc.cluster.local", serviceIP, advertise}
	names = append(names, cfg.TLSSANs...)
	if host, err := os.Hostname(); err == nil {
		names = append(names, host)
	}
	if ip := net.ParseIP(cfg.BindAddress); ip != nil && !ip.IsUnspecified() {
		names = append(names, cfg.BindAddress)
	}
	return names
}

// advertiseAddress is the address other members of the cluster reach this
// server at: the flag, the bind address, or the address of the interface
// that holds the default route (package host's ChooseAddress), never one
// that a node agent manages itself, so that a restart advertises what the
// first start did.
func advertiseAddress(cfg Config) (string, error) {
	if cfg.AdvertiseAddress != "" {
		if net.ParseIP(cfg.AdvertiseAddress) == nil {
			return "", fmt.Errorf("--advertise-address %q is not an IP address", cfg.AdvertiseAddress)
		}
		return cfg.AdvertiseAddress, nil
	}
	if ip := net.ParseIP(cfg.BindAddress); ip != nil && !ip.IsUnspecified() {
		return cfg.BindAddress, nil
	}
	exclude, err := host.ManagedPrefixes(cfg.ServiceCIDR, cmp.Or(cfg.ClusterCIDR, "10.244.0.0/16"))
	if err != nil {
		return "", fmt.Errorf("--service-cidr, --cluster-cidr: %w", err)
	}
	ip, err := host.DefaultAddress(exclude...)
	if err != nil {
		return "", fmt.Errorf("advertise address: %w", err)
	}
	return ip.String(), nil
}

// issuePair signs a new key pair with the CA, ready for TLS.
func issuePair(ca *pki.CA, commonName string, orgs, names []string, usages ...x509.ExtKeyUsage) (tls.Certificate, error) {
	certPEM, keyPEM, err := ca.Issue(commonName, orgs, names, usages...)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.X509KeyPair(certPEM, keyPEM)
}

// ensureJoinToken makes, at first start, a join token: a bootstrap token
// in the extra groups that does not expire (until `skiff token delete`),
// and the CA's hash, written to path (mode 0600). Later starts, and
// servers that joined (they have the first one's), keep it. Nodes join
// with <data-dir>/server/token; servers, or nodes, with server-token.
func ensureJoinToken(ctx context.Context, srv *apiserver.Server, ca *pki.CA, path string, groups []string) error {
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	tok, err := jointoken.New(ca.Cert)
	if err != nil {
		return err
	}
	secret := jointoken.Secret(tok.ID, tok.Secret, "the join token of "+path, time.Time{}, groups)
	if err := srv.CreateSecret(ctx, secret); err != nil {
		return err
	}
	return continuity.AtomicWriteFile(path, []byte(tok.String()+"\n"), 0o600)
}
