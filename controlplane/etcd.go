package controlplane

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3client"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// etcdStartTimeout bounds how long an embedded etcd may take to be ready.
const etcdStartTimeout = time.Minute

// EmbeddedEtcd is a single-member etcd running in this process.
type EmbeddedEtcd struct {
	// Endpoint is its client URL on loopback, for clients in other
	// processes (etcdctl, tests).
	Endpoint string
	etcd     *embed.Etcd
	level    zap.AtomicLevel
}

// StartEmbeddedEtcd runs a single-member etcd in this process, listening
// on loopback only, with its data under dir. Every progress interval it
// tells idle watches how far they have seen (they become watch bookmarks).
func StartEmbeddedEtcd(dir string, clientPort, peerPort int, progress time.Duration) (*EmbeddedEtcd, error) {
	cfg := embed.NewConfig()
	cfg.Name = "skiff"
	cfg.Dir = filepath.Join(dir, "etcd")
	clientURL := url.URL{Scheme: "http", Host: "127.0.0.1:" + strconv.Itoa(clientPort)}
	peerURL := url.URL{Scheme: "http", Host: "127.0.0.1:" + strconv.Itoa(peerPort)}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{clientURL}, []url.URL{clientURL}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peerURL}, []url.URL{peerURL}
	cfg.InitialCluster = cfg.Name + "=" + peerURL.String()
	cfg.WatchProgressNotifyInterval = progress
	// etcd logs errors while it shuts down; quiet it before stopping.
	level := zap.NewAtomicLevelAt(zap.ErrorLevel)
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.New(zapcore.NewCore(
		zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.Lock(os.Stderr), level)))
	e, err := embed.StartEtcd(cfg)
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
	return &EmbeddedEtcd{Endpoint: clientURL.String(), etcd: e, level: level}, nil
}

// Client returns a client that calls the etcd server in this process
// directly, without gRPC's HTTP/2 transport and the loopback socket in
// between (an etcd client's framing cost a tenth of the server's CPU
// under a create load).
func (e *EmbeddedEtcd) Client() *clientv3.Client {
	return v3client.New(e.etcd.Server)
}

// Stop shuts etcd down.
func (e *EmbeddedEtcd) Stop() {
	e.level.SetLevel(zap.FatalLevel)
	e.etcd.Close()
}

// connectEtcd returns a client for endpoints that has answered once.
func connectEtcd(ctx context.Context, endpoints []string) (*clientv3.Client, error) {
	client, err := clientv3.New(clientv3.Config{
		Endpoints:          endpoints,
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
func openEtcd(ctx context.Context, cfg Config, dir string) (client *clientv3.Client, stop func(), err error) {
	if len(cfg.EtcdServers) > 0 {
		client, err := connectEtcd(ctx, cfg.EtcdServers)
		if err != nil {
			return nil, nil, err
		}
		return client, func() { client.Close() }, nil
	}
	e, err := StartEmbeddedEtcd(dir, cfg.EtcdClientPort, cfg.EtcdPeerPort, cfg.BookmarkInterval)
	if err != nil {
		return nil, nil, err
	}
	client = e.Client()
	if err := checkEtcd(ctx, client); err != nil {
		client.Close()
		e.Stop()
		return nil, nil, fmt.Errorf("embedded etcd: %w", err)
	}
	return client, func() { client.Close(); e.Stop() }, nil
}
