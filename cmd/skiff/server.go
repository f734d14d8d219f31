package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/skiff-lab/skiff/controlplane"
	"github.com/skiff-lab/skiff/controlplane/apiserver/authn"
	"github.com/skiff-lab/skiff/controlplane/satoken"
)

func serverCommand() *cobra.Command {
	cfg := controlplane.Config{}
	var etcdServers, tokenFile, kubeconfigMode string
	var disableAgent, anonymousAuth, leave bool
	node := &agentFlags{}
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Run the control plane (etcd store, API server, scheduler, controllers) and a node agent",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) (err error) {
			cfg.NoAnonymous = !anonymousAuth
			if err := readTokenFile(&cfg.JoinToken, tokenFile); err != nil {
				return err
			}
			if cfg.KubeconfigMode, err = parseFileMode(kubeconfigMode); err != nil {
				return fmt.Errorf("--write-kubeconfig-mode: %w", err)
			}
			if (cfg.JoinServer == "") != (cfg.JoinToken == "") {
				return errors.New("--server and --token go together")
			}
			cfg.Tracing.Endpoint = node.cfg.TracingEndpoint
			if etcdServers != "" {
				cfg.EtcdServers = strings.Split(etcdServers, ",")
			}
			if !disableAgent {
				node.dataDir, node.cfg.ServiceCIDR, node.cfg.ClusterCIDR = cfg.DataDir, cfg.ServiceCIDR, cfg.ClusterCIDR
				cfg.Node, cfg.NodeName = node.runAgent, node.cfg.NodeName
			}
			if leave {
				return controlplane.Leave(cfg)
			}
			cfg.Answering = readyNotifier(cmd.Context(), "skiff-server")
			return controlplane.Run(cmd.Context(), cfg)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.DataDir, "data-dir", "/var/lib/skiff", "state directory; the server keeps its state under <data-dir>/server")
	f.StringVar(&cfg.BindAddress, "bind-address", "0.0.0.0", "address the API server listens on")
	f.IntVar(&cfg.SecurePort, "secure-port", 6443, "HTTPS port of the API server")
	f.StringVar(&cfg.AdvertiseAddress, "advertise-address", "", "address the cluster reaches the API server at (default: bind address, or the host's first IPv4 address)")
	f.StringVar(&cfg.KubeconfigPath, "write-kubeconfig", "/etc/skiff/admin.kubeconfig", "where to write the admin kubeconfig (empty: don't)")
	f.StringVar(&kubeconfigMode, "write-kubeconfig-mode", "0600", "file mode of the admin kubeconfig, in octal (0644 lets every local user read the cluster admin's key)")
	f.StringVar(&etcdServers, "etcd-servers", "", "comma-separated URLs of an external etcd cluster; empty runs an embedded etcd (TLS with client certificates of its own CA, <data-dir>/server/tls/etcd)")
	f.StringVar(&cfg.EtcdClient.CAFile, "etcd-cafile", "", "CA bundle that verifies the --etcd-servers' certificates")
	f.StringVar(&cfg.EtcdClient.CertFile, "etcd-certfile", "", "client certificate the server presents to the --etcd-servers")
	f.StringVar(&cfg.EtcdClient.KeyFile, "etcd-keyfile", "", "key of --etcd-certfile")
	f.IntVar(&cfg.EtcdClientPort, "etcd-client-port", 0, "loopback port on which the embedded etcd serves other processes (etcdctl, snapshots), to client certificates of its CA only; 0: no client listener, the API server calls etcd in process")
	f.IntVar(&cfg.EtcdPeerPort, "etcd-peer-port", 2380, "loopback peer port of the embedded etcd (TLS, peer certificates of its CA only)")
	f.StringVar(&cfg.ServiceCIDR, "service-cidr", "10.96.0.0/16", "range ClusterIPs are allocated from")
	f.StringVar(&cfg.NodePortRange, "service-node-port-range", "30000-32767", "range NodePorts are allocated from")
	f.StringVar(&cfg.TokenAuthFile, "token-auth-file", "", "CSV file of bearer tokens: token,user,uid[,\"group1,group2\"]")
	oidcFlags(f, &cfg.OIDC)
	f.StringVar(&cfg.AuthenticationConfig, "authentication-config", "", "AuthenticationConfiguration file (apiserver.config.k8s.io/v1): JWT issuers whose tokens are taken, instead of --oidc-*")
	f.StringVar(&cfg.AuthorizationMode, "authorization-mode", controlplane.DefaultAuthorizationMode, `authorizers, in order, comma-separated: "Node" (a node may read only its own pods' Secrets, ConfigMaps and service accounts, and write its own Node, Lease and pods' status), "RBAC" (the default roles and bindings reconciled at start, then what roles allow), or "AlwaysAllow" alone (every authenticated user may do everything); system:masters may always do everything`)
	f.StringVar(&cfg.ServiceAccountIssuer, "service-account-issuer", satoken.DefaultIssuer, "issuer (iss) of the service account tokens the server signs with <data-dir>/server/tls/service-account.key; its OpenID configuration is served at /.well-known/openid-configuration")
	f.StringSliceVar(&cfg.APIAudiences, "api-audiences", nil, "audiences the server accepts service account tokens for (default: the issuer)")
	f.StringVar(&cfg.Audit.PolicyFile, "audit-policy-file", "", "audit.k8s.io/v1 Policy: which requests are recorded at which level (None, Metadata, Request, RequestResponse)")
	f.StringVar(&cfg.Audit.Path, "audit-log-path", "", `file audit events are appended to as JSON lines ("-": standard output); needs --audit-policy-file`)
	f.IntVar(&cfg.Audit.MaxSizeMB, "audit-log-maxsize", 100, "size in megabytes at which the audit log is rotated")
	f.IntVar(&cfg.Audit.MaxBackups, "audit-log-maxbackup", 0, "rotated audit logs kept (0: all)")
	f.IntVar(&cfg.Audit.MaxAgeDays, "audit-log-maxage", 0, "days rotated audit logs are kept (0: for ever)")
	f.StringVar(&cfg.EncryptionProviderConfig, "encryption-provider-config", "", "EncryptionConfiguration file (apiserver.config.k8s.io/v1): the resources it names are encrypted in etcd with its aesgcm, aescbc or secretbox keys")
	f.StringSliceVar(&cfg.DisableAdmissionPlugins, "disable-admission-plugins", nil, "admission plugins not to run, of: "+strings.Join(controlplane.AdmissionPlugins, ", "))
	f.BoolVar(&anonymousAuth, "anonymous-auth", true, "let requests without credentials through as system:anonymous, for the authorizer to decide (RBAC gives it health and version); false answers them 401 (the cluster CA at /cacerts stays public)")
	f.DurationVar(&cfg.BookmarkInterval, "watch-bookmark-interval", 10*time.Second, "how often the embedded etcd reports progress to idle watches (sent as bookmarks to clients that allow them)")
	f.BoolVar(&cfg.LeaderElect, "leader-elect", true, "run the scheduler and controllers only while holding the kube-system/skiff-controlplane Lease")
	f.StringVar(&cfg.Identity, "identity", "", "name of this server in the leader Lease (default: hostname_random)")
	f.StringVar(&cfg.ClusterCIDR, "cluster-cidr", "10.244.0.0/16", "range pod IPs come from; every node gets a subnet of it as its podCIDR")
	f.IntVar(&cfg.NodeCIDRMaskSize, "node-cidr-mask-size", 0, "prefix length of each node's podCIDR (default 24 for IPv4, 64 for IPv6); the cluster CIDR holds 2^(size - its prefix length) nodes")
	f.DurationVar(&cfg.NodeMonitorGracePeriod, "node-monitor-grace-period", 40*time.Second, "how long a node may go without renewing its Lease before it is marked Unknown and tainted unreachable")
	f.IntVar(&cfg.TerminatedPodGCThreshold, "terminated-pod-gc-threshold", 12500, "how many terminated pods are kept before the oldest are deleted (negative: keep all)")
	f.DurationVar(&cfg.NodeCertValidity, "node-cert-validity", 365*24*time.Hour, "longest lifetime of the certificates the cluster CA signs for nodes (client and serving)")
	f.StringVar(&cfg.SchedulerConfigFile, "scheduler-config", "", "scheduler configuration file (scoringStrategy, percentageOfNodesToScore, weights)")
	f.BoolVar(&cfg.ClusterInit, "cluster-init", false, "start a cluster of servers: the embedded etcd's peers listen on the advertised address (--etcd-peer-port), and other servers may join with --server and this one's <data-dir>/server/server-token")
	f.StringVar(&cfg.JoinServer, "server", "", "https://HOST:PORT of a server of the cluster to join as a server (first start only: the servers' shared keys are fetched, the embedded etcd joins theirs)")
	f.StringVar(&cfg.JoinToken, "token", "", "server token of the cluster --server belongs to (<data-dir>/server/server-token of any of its servers)")
	f.StringVar(&tokenFile, "token-file", "", "file holding --token (instead of --token)")
	f.StringVar(&cfg.EtcdSnapshots.Cron, "etcd-snapshot-schedule", "0 */12 * * *", `when the embedded etcd is snapshotted (cron's five fields, or "@every 6h"; empty: never)`)
	f.IntVar(&cfg.EtcdSnapshots.Retention, "etcd-snapshot-retention", 5, "how many scheduled snapshots are kept (the newest)")
	f.StringVar(&cfg.EtcdSnapshots.Dir, "etcd-snapshot-dir", "", "where scheduled snapshots go (default <data-dir>/server/db/snapshots)")
	f.BoolVar(&leave, "leave", false, "take this stopped server out of its cluster of servers (its etcd member removed, its etcd data deleted), then exit")
	f.StringSliceVar(&cfg.TLSSANs, "tls-san", nil, "more names and addresses for the API server's certificate (a load balancer, a virtual IP)")
	f.BoolVar(&disableAgent, "disable-agent", false, "do not run a node agent in the server process")
	f.BoolVar(&cfg.DisableServiceLB, "disable-service-lb", false, "do not give LoadBalancer services the addresses of the nodes that serve them")
	f.Float64Var(&cfg.Tracing.SamplingRate, "tracing-sampling-rate", 1, "fraction of the pods created through this server whose journey is traced, 0 to 1 (skiff explain pod shows the journey)")
	f.IntVar(&cfg.Tracing.Pods, "tracing-pods", controlplane.DefaultTracedPods, "how many pods' journeys the server keeps in memory (the newest)")
	f.BoolVar(&cfg.DisableLocalStorage, "disable-local-storage", false, "do not make the default StorageClass, local-path (claims of it get a directory on their pod's node)")
	node.register(f)
	return cmd
}

// oidcFlags are kube-apiserver's --oidc-* flags.
func oidcFlags(f *pflag.FlagSet, o *authn.OIDC) {
	f.StringVar(&o.IssuerURL, "oidc-issuer-url", "", "URL of an OpenID Connect issuer (https) whose ID tokens are taken as bearer tokens")
	f.StringVar(&o.ClientID, "oidc-client-id", "", "the audience the issuer's tokens must be for")
	f.StringVar(&o.CAFile, "oidc-ca-file", "", "CA of the issuer's serving certificate (default: the host's)")
	f.StringVar(&o.UsernameClaim, "oidc-username-claim", "sub", "claim that names the user")
	f.StringVar(&o.UsernamePrefix, "oidc-username-prefix", "", "prefix of usernames (default: the issuer URL and # unless the claim is email; - for none)")
	f.StringVar(&o.GroupsClaim, "oidc-groups-claim", "", "claim that lists the user's groups")
	f.StringVar(&o.GroupsPrefix, "oidc-groups-prefix", "", "prefix of group names")
	f.StringToStringVar(&o.RequiredClaims, "oidc-required-claim", nil, "claim=value that every token must hold (repeatable)")
	f.StringSliceVar(&o.SigningAlgs, "oidc-signing-algs", []string{"RS256"}, "signing algorithms taken")
}
