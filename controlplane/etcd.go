package controlplane

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/skiff-lab/skiff/controlplane/embedded"
	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3client"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
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
}

// EmbeddedEtcd is a single-member etcd running in this process. Its
// listeners serve TLS only and take only client certificates of its own
// CA.
type EmbeddedEtcd struct {
	// Endpoint is its client URL on loopback ("" when it has no client
	// listener); Client holds the files a client in another process
	// authenticates with.
	Endpoint string
	Client   EtcdClientFiles
	etcd     *embed.Etcd
	level    zap.AtomicLevel
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

// StartEmbeddedEtcd runs a single-member etcd in this process, listening
// on loopback only and over mutual TLS only, with its data under
// cfg.Dir. A data dir made by an older skiff (plain-HTTP peer URL) is
// upgraded in place: the member's peer URL is rewritten to the TLS one.
func StartEmbeddedEtcd(cfg EtcdConfig) (*EmbeddedEtcd, error) {
	certs, err := ensureEtcdPKI(filepath.Join(cfg.Dir, "tls", "etcd")) // EmbeddedEtcdClient's
	if err != nil {
		return nil, fmt.Errorf("etcd certificates: %w", err)
	}
	ecfg, level, err := embedConfig(cfg, certs)
	if err != nil {
		return nil, err
	}
	e, err := embed.StartEtcd(ecfg)
	if err != nil {
		return nil, fmt.Errorf("start embedded etcd: %w", err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return nil, fmt.Errorf("embedded etcd: %w", err)
	case <-time.After(etcdStartTimeout):
		e.Server.Stop()
		e.Close()
		return nil, errors.New("embedded etcd did not become ready in time")
	}
	ee := &EmbeddedEtcd{etcd: e, level: level, Client: certs.client(), socket: clientSocket(cfg.Dir)}
	if cfg.ClientPort != 0 {
		ee.Endpoint = ecfg.AdvertiseClientUrls[0].String()
	}
	if err := ee.upgradePeerURLs(ecfg.AdvertisePeerUrls); err != nil {
		ee.Stop()
		return nil, err
	}
	return ee, nil
}

// embedConfig is etcd's configuration for cfg: listeners that require a
// client certificate of the etcd CA, on peers and clients alike — the
// peers' and (with a client port) the clients' on loopback, and the unix
// socket in the data dir that this process's streams use.
func embedConfig(cfg EtcdConfig, certs etcdPKI) (*embed.Config, zap.AtomicLevel, error) {
	ecfg := embed.NewConfig()
	ecfg.Name = "skiff"
	ecfg.Dir = filepath.Join(cfg.Dir, "etcd")
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
	peerURL := loopbackURL(cfg.PeerPort)
	ecfg.ListenPeerUrls, ecfg.AdvertisePeerUrls = []url.URL{peerURL}, []url.URL{peerURL}
	ecfg.PeerTLSInfo = certs.serverInfo(etcdPeerPair)
	ecfg.InitialCluster = ecfg.Name + "=" + peerURL.String()
	ecfg.WatchProgressNotifyInterval = cfg.Progress
	// etcd logs errors while it shuts down; quiet it before stopping.
	level := zap.NewAtomicLevelAt(zap.ErrorLevel)
	ecfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.New(zapcore.NewCore(
		zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.Lock(os.Stderr), level)))
	return ecfg, level, nil
}

// clientSocketName is the file name of the embedded etcd's client socket.
const clientSocketName = "etcd-client.sock"

// clientSocket is the embedded etcd's client socket for the server dir dir.
func clientSocket(dir string) string { return filepath.Join(dir, clientSocketName) }

func loopbackURL(port int) url.URL {
	return url.URL{Scheme: "https", Host: "127.0.0.1:" + strconv.Itoa(port)}
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

// Stop shuts etcd down.
func (e *EmbeddedEtcd) Stop() {
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
	e, err := StartEmbeddedEtcd(EtcdConfig{Dir: dir, ClientPort: cfg.EtcdClientPort, PeerPort: cfg.EtcdPeerPort, Progress: cfg.BookmarkInterval})
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
