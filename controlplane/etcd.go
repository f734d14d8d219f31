package controlplane

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/containerd/continuity"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/skiff-lab/skiff/controlplane/embedded"
	"github.com/skiff-lab/skiff/logging"
	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3client"
	"go.uber.org/zap"
)

// etcdStartTimeout bounds how long an embedded etcd may take to be ready.
const etcdStartTimeout = time.Minute

// EtcdConfig is how an embedded etcd runs.
type EtcdConfig struct {
	// Dir is the server's state directory: etcd's data is in Dir/etcd,
	// its CA and certificates in Dir/tls/etcd (etcdPKI).
	Dir string
	// ClientPort is the loopback port of the client listener, for other
	// processes (etcdctl, snapshots); 0 opens none: the API server calls
	// etcd in process.
	ClientPort int
	// PeerPort is the loopback port of the peer listener.
	PeerPort int
	// Progress is how often idle watches are told how far they have seen
	// (they become watch bookmarks).
	Progress time.Duration
	// PeerHost is the address the peer listener binds and advertises:
	// loopback when empty (a server alone), the server's advertised
	// address when the etcd is a member of a cluster of servers.
	PeerHost string
	// Host names the member (with a random suffix); default the host
	// name.
	Host string
	// Lost, if set, is called when the member stops on its own (it was
	// removed from its cluster), not by Stop.
	Lost func(error)
	// Join, set for a member joining a running cluster, is called on the
	// member's first start (no data yet) to add it (see EtcdJoiner).
	Join EtcdJoiner
}

// EtcdJoiner adds a new member to a running etcd cluster.
type EtcdJoiner interface {
	// Add makes the member name with peerURL a learner of the cluster and
	// returns the members to start with, as etcd's --initial-cluster
	// ("name=url,…").
	Add(ctx context.Context, name, peerURL string) (initialCluster string, err error)
	// Remove undoes Add when the member could not start.
	Remove(ctx context.Context, name string) error
}

// EmbeddedEtcd is an etcd member running in this process: alone, or one
// of a cluster of servers. Its listeners serve TLS only and take only
// client certificates of its own CA.
type EmbeddedEtcd struct {
	// Endpoint is its client URL on loopback ("" when it has no client
	// listener); Client holds the files a client in another process
	// authenticates with.
	Endpoint string
	Client   EtcdClientFiles
	etcd     *embed.Etcd
	level    zap.AtomicLevel
	stopping atomic.Bool
	// socket is the client listener this process's streams use (see
	// client): a unix socket in the 0700 data dir, mutual TLS too.
	socket string
}

// maxSocketPath is the longest path a unix socket may have (sun_path).
const maxSocketPath = 107

// EtcdClientFiles are what a client needs to reach an etcd behind mutual
// TLS (kube-apiserver's --etcd-cafile, --etcd-certfile, --etcd-keyfile).
type EtcdClientFiles struct {
	CAFile, CertFile, KeyFile string
}

// TLSConfig is the client TLS configuration the files give; none when no
// file is named.
func (f EtcdClientFiles) TLSConfig() (*tls.Config, error) {
	if f == (EtcdClientFiles{}) {
		return nil, nil
	}
	if (f.CertFile == "") != (f.KeyFile == "") {
		return nil, errors.New("--etcd-certfile and --etcd-keyfile go together")
	}
	info := transport.TLSInfo{CertFile: f.CertFile, KeyFile: f.KeyFile, TrustedCAFile: f.CAFile}
	return info.ClientConfig()
}

// StartEmbeddedEtcd runs an etcd member in this process, over mutual TLS
// only, with its data under cfg.Dir: alone with its peer listener on
// loopback, or on cfg.PeerHost as a member of a cluster, joining it
// through cfg.Join on its first start and promoted from learner to voting
// member once it has caught up. A member whose peer URL changed (a data
// dir made by an older skiff with a plain-HTTP one, a new address) has it
// rewritten in place.
func StartEmbeddedEtcd(cfg EtcdConfig) (*EmbeddedEtcd, error) {
	certs, err := ensureEtcdPKI(filepath.Join(cfg.Dir, "tls", "etcd"), cfg.PeerHost) // EmbeddedEtcdClient's
	if err != nil {
		return nil, fmt.Errorf("etcd certificates: %w", err)
	}
	ecfg, level, err := embedConfig(cfg, certs)
	if err != nil {
		return nil, err
	}
	undo, err := joinOnFirstStart(cfg, ecfg)
	if err != nil {
		return nil, err
	}
	e, err := startEtcd(ecfg)
	if err != nil {
		return nil, errors.Join(err, undo())
	}
	ee := &EmbeddedEtcd{etcd: e, level: level, Client: certs.client(), socket: clientSocket(cfg.Dir)}
	if cfg.ClientPort != 0 {
		ee.Endpoint = ecfg.AdvertiseClientUrls[0].String()
	}
	err = ee.upgradePeerURLs(ecfg.AdvertisePeerUrls)
	if err == nil {
		err = ee.promote()
	}
	if err != nil {
		ee.Stop()
		return nil, err
	}
	if cfg.Lost != nil {
		go ee.watchStop(cfg.Lost)
	}
	return ee, nil
}

// watchStop calls lost when etcd stops but not by Stop.
func (e *EmbeddedEtcd) watchStop(lost func(error)) {
	<-e.etcd.Server.StopNotify()
	if !e.stopping.Load() {
		lost(errors.New("the embedded etcd member stopped: it was removed from its cluster (skiff etcd member remove, or its Node deleted)"))
	}
}

// startEtcd starts etcd and waits until it serves.
func startEtcd(ecfg *embed.Config) (*embed.Etcd, error) {
	e, err := embed.StartEtcd(ecfg)
	if err != nil {
		return nil, fmt.Errorf("start embedded etcd: %w", err)
	}
	select {
	case <-e.Server.ReadyNotify():
		return e, nil
	case err := <-e.Err():
		e.Close()
		return nil, fmt.Errorf("embedded etcd: %w", err)
	case <-time.After(etcdStartTimeout):
		e.Server.Stop()
		e.Close()
		return nil, errors.New("embedded etcd did not become ready in time")
	}
}

// joinOnFirstStart has cfg.Join add a member that has no data yet to its
// cluster, and sets ecfg to start as the cluster's new member. undo
// removes it again, for a member that then fails to start; a member that
// was added and died before it started is resumed by the next Add.
func joinOnFirstStart(cfg EtcdConfig, ecfg *embed.Config) (undo func() error, err error) {
	undo = func() error { return nil }
	if cfg.Join == nil || hasEtcdData(ecfg.Dir) {
		return undo, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), joinTimeout)
	defer cancel()
	peerURL := ecfg.AdvertisePeerUrls[0].String()
	initial, err := cfg.Join.Add(ctx, ecfg.Name, peerURL)
	if err != nil {
		return undo, fmt.Errorf("join the etcd cluster as %s (%s): %w", ecfg.Name, peerURL, err)
	}
	ecfg.InitialCluster, ecfg.ClusterState = initial, embed.ClusterStateFlagExisting
	slog.Info("embedded etcd: joining the cluster", "member", ecfg.Name, "peerURL", peerURL, "members", initial)
	return func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := cfg.Join.Remove(ctx, ecfg.Name); err != nil {
			return fmt.Errorf("undo the join of member %s: %w", ecfg.Name, err)
		}
		return nil
	}, nil
}

// memberSuffixLen is how long the random suffix of a member's name is.
const memberSuffixLen = 8

// joinTimeout bounds how long a new member may wait to be added (another
// may be joining: etcd takes one learner at a time).
const joinTimeout = 5 * time.Minute

// hasEtcdData reports whether dir holds an etcd member's data.
func hasEtcdData(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "member", "wal"))
	return err == nil
}

// promote makes this member, when it is a learner, a voting member as soon
// as etcd allows (it has caught up with the leader), trying with back-off
// for as long as a start may take.
func (e *EmbeddedEtcd) promote() error {
	if !e.etcd.Server.IsLearner() {
		return nil
	}
	client := v3client.New(e.etcd.Server)
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), joinTimeout)
	defer cancel()
	id := uint64(e.etcd.Server.MemberID())
	backoff := wait.Backoff{Duration: 200 * time.Millisecond, Factor: 2, Cap: 5 * time.Second, Steps: math.MaxInt32}
	err := wait.ExponentialBackoffWithContext(ctx, backoff, func(ctx context.Context) (bool, error) {
		_, err := client.MemberPromote(ctx, id)
		if err != nil {
			slog.Info("embedded etcd: learner not promoted yet", "err", err)
		}
		return err == nil, nil
	})
	if err != nil {
		return fmt.Errorf("embedded etcd: promote learner %x: %w", id, err)
	}
	slog.Info("embedded etcd: promoted to voting member", "member", e.etcd.Config().Name)
	return nil
}

// embedConfig is etcd's configuration for cfg: listeners that require a
// client certificate of the etcd CA, on peers and clients alike — the
// peers' and (with a client port) the clients' on loopback, and the unix
// socket in the data dir that this process's streams use.
func embedConfig(cfg EtcdConfig, certs etcdPKI) (*embed.Config, zap.AtomicLevel, error) {
	ecfg := embed.NewConfig()
	ecfg.Dir = filepath.Join(cfg.Dir, "etcd")
	name, err := memberName(cfg.Dir, ecfg.Dir, cfg.Host)
	if err != nil {
		return nil, zap.AtomicLevel{}, err
	}
	ecfg.Name = name
	socket := clientSocket(cfg.Dir)
	if len(socket) > maxSocketPath {
		return nil, zap.AtomicLevel{}, fmt.Errorf("embedded etcd: the socket path %s is longer than %d bytes: use a shorter --data-dir", socket, maxSocketPath)
	}
	socketURL := url.URL{Scheme: "unixs", Path: socket}
	ecfg.ListenClientUrls, ecfg.AdvertiseClientUrls = []url.URL{socketURL}, []url.URL{socketURL}
	ecfg.ClientTLSInfo = certs.serverInfo(etcdServerPair)
	if cfg.ClientPort != 0 {
		clientURL := loopbackURL(cfg.ClientPort)
		ecfg.ListenClientUrls, ecfg.AdvertiseClientUrls = []url.URL{socketURL, clientURL}, []url.URL{clientURL, socketURL}
	}
	peerURL := peerURL(cfg.PeerHost, cfg.PeerPort)
	ecfg.ListenPeerUrls, ecfg.AdvertisePeerUrls = []url.URL{peerURL}, []url.URL{peerURL}
	ecfg.PeerTLSInfo = certs.serverInfo(etcdPeerPair)
	ecfg.InitialCluster = ecfg.Name + "=" + peerURL.String()
	ecfg.WatchProgressNotifyInterval = cfg.Progress
	// etcd logs errors while it shuts down; quiet it before stopping.
	level := zap.NewAtomicLevelAt(zap.ErrorLevel)
	ecfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(logging.Zap(level))
	return ecfg, level, nil
}

// clientSocketName is the file name of the embedded etcd's client socket.
const clientSocketName = "etcd-client.sock"

// clientSocket is the embedded etcd's client socket for the server dir dir.
func clientSocket(dir string) string { return filepath.Join(dir, clientSocketName) }

func loopbackURL(port int) url.URL { return peerURL("", port) }

// peerURL is the https URL of host (default loopback) and port.
func peerURL(host string, port int) url.URL {
	return url.URL{Scheme: "https", Host: net.JoinHostPort(cmp.Or(host, "127.0.0.1"), strconv.Itoa(port))}
}

// memberName is this server's name in the etcd cluster, kept in
// dir/etcd-name: the name an older skiff gave its lone member to data it
// left, else host (default the host name) and a random suffix, unique
// among servers.
func memberName(dir, dataDir, host string) (string, error) {
	path := filepath.Join(dir, "etcd-name")
	if b, err := os.ReadFile(path); err == nil {
		return strings.TrimSpace(string(b)), nil
	}
	name := "skiff"
	if !hasEtcdData(dataDir) {
		if host == "" {
			host, _ = os.Hostname()
		}
		name = cmp.Or(host, "skiff") + "-" + strings.ToLower(rand.Text()[:memberSuffixLen])
	}
	return name, continuity.AtomicWriteFile(path, []byte(name+"\n"), 0o600)
}

// upgradePeerURLs makes this member's peer URLs want, when a data dir
// from an older skiff (or another --etcd-peer-port) stored others.
func (e *EmbeddedEtcd) upgradePeerURLs(want []url.URL) error {
	member := e.etcd.Server.Cluster().Member(e.etcd.Server.MemberID())
	if member == nil {
		return errors.New("embedded etcd: this member is not in its own member list")
	}
	urls := make([]string, len(want))
	for i, u := range want {
		urls[i] = u.String()
	}
	if slices.Equal(member.PeerURLs, urls) {
		return nil
	}
	client := v3client.New(e.etcd.Server)
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := client.MemberUpdate(ctx, uint64(member.ID), urls); err != nil {
		return fmt.Errorf("embedded etcd: peer URLs %v to %v: %w", member.PeerURLs, urls, err)
	}
	slog.Info("embedded etcd: member's peer URLs upgraded", "from", member.PeerURLs, "to", urls)
	return nil
}

// client returns a client for this process: its requests call the etcd
// server directly, without gRPC's HTTP/2 transport, a socket or TLS in
// between (an etcd client's framing cost a tenth of the server's CPU under
// a create load); its streams — watches and lease keep-alives — go over
// gRPC on the client socket, for the in-process adapter's streams can
// deadlock (its client and server each block sending to the other once
// watches come and go under load, freezing every watch of the process).
// close closes both.
func (e *EmbeddedEtcd) client(ctx context.Context) (client *clientv3.Client, close func(), err error) {
	tlsCfg, err := e.Client.TLSConfig()
	if err != nil {
		return nil, nil, err
	}
	streams, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{"unixs://" + e.socket},
		TLS:         tlsCfg,
		DialTimeout: 10 * time.Second,
		Logger:      zap.NewNop(),
		Context:     ctx,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("embedded etcd client socket: %w", err)
	}
	client = v3client.New(e.etcd.Server)
	client.Watcher, client.Lease = streams.Watcher, streams.Lease
	return client, func() { client.Close(); streams.Close() }, nil
}

// Stop shuts etcd down; later calls do nothing.
func (e *EmbeddedEtcd) Stop() {
	if e.stopping.Swap(true) {
		return
	}
	e.level.SetLevel(zap.FatalLevel)
	e.etcd.Close()
}

// connectEtcd returns a client for endpoints that has answered once,
// authenticating with files when they name any.
func connectEtcd(ctx context.Context, endpoints []string, files EtcdClientFiles) (*clientv3.Client, error) {
	tlsCfg, err := files.TLSConfig()
	if err != nil {
		return nil, err
	}
	client, err := clientv3.New(clientv3.Config{
		Endpoints:          endpoints,
		TLS:                tlsCfg,
		DialTimeout:        10 * time.Second,
		Logger:             zap.NewNop(),
		MaxCallSendMsgSize: 8 << 20,
	})
	if err != nil {
		return nil, fmt.Errorf("etcd client: %w", err)
	}
	if err := checkEtcd(ctx, client); err != nil {
		client.Close()
		return nil, fmt.Errorf("etcd %v: %w", endpoints, err)
	}
	return client, nil
}

// checkEtcd reads a key through client, so a server that cannot answer
// fails the start instead of the first request.
func checkEtcd(ctx context.Context, client *clientv3.Client) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err := client.Get(ctx, "/registry/health-check")
	return err
}

// openEtcd connects to cfg.EtcdServers or, without them, starts an
// embedded etcd under dir and calls it in process. stop closes the client
// and any etcd it started.
func openEtcd(ctx context.Context, cfg Config, dir string) (client *clientv3.Client, access embedded.Etcd, stop func(), err error) {
	if len(cfg.EtcdServers) > 0 {
		client, err := connectEtcd(ctx, cfg.EtcdServers, cfg.EtcdClient)
		if err != nil {
			return nil, access, nil, err
		}
		return client, etcdAccess(cfg.EtcdServers, cfg.EtcdClient), func() { client.Close() }, nil
	}
	if cfg.EtcdClient != (EtcdClientFiles{}) {
		return nil, access, nil, errors.New("--etcd-cafile, --etcd-certfile and --etcd-keyfile need --etcd-servers: the embedded etcd has a CA of its own under <data-dir>/server/tls/etcd")
	}
	ecfg := EtcdConfig{Dir: dir, ClientPort: cfg.EtcdClientPort, PeerPort: cfg.EtcdPeerPort, Progress: cfg.BookmarkInterval, PeerHost: cfg.etcdPeerHost, Host: cfg.NodeName, Lost: cfg.etcdLost}
	if cfg.etcdJoin != nil {
		ecfg.Join = cfg.etcdJoin
	}
	e, err := StartEmbeddedEtcd(ecfg)
	if err != nil {
		return nil, access, nil, err
	}
	client, closeClient, err := e.client(context.Background())
	if err == nil {
		err = checkEtcd(ctx, client)
	}
	if err != nil {
		if closeClient != nil {
			closeClient()
		}
		e.Stop()
		return nil, access, nil, fmt.Errorf("embedded etcd: %w", err)
	}
	return client, etcdAccess([]string{"unixs://" + e.socket}, e.Client), func() { closeClient(); e.Stop() }, nil
}

// etcdAccess is how another client of this process (an embedded server's)
// reaches etcd.
func etcdAccess(endpoints []string, files EtcdClientFiles) embedded.Etcd {
	return embedded.Etcd{Servers: endpoints, CAFile: files.CAFile, CertFile: files.CertFile, KeyFile: files.KeyFile}
}
