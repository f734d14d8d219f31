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
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// etcdStartTimeout bounds how long an embedded etcd may take to be ready.
const etcdStartTimeout = time.Minute

// StartEmbeddedEtcd runs a single-member etcd in this process, listening
// on loopback only, with its data under dir. Every progress interval it
// tells idle watches how far they have seen (they become watch bookmarks).
// stop shuts it down.
func StartEmbeddedEtcd(dir string, clientPort, peerPort int, progress time.Duration) (endpoint string, stop func(), err error) {
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
		return "", nil, fmt.Errorf("start embedded etcd: %w", err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return "", nil, fmt.Errorf("embedded etcd: %w", err)
	case <-time.After(etcdStartTimeout):
		e.Server.Stop()
		e.Close()
		return "", nil, errors.New("embedded etcd did not become ready in time")
	}
	stop = func() {
		level.SetLevel(zap.FatalLevel)
		e.Close()
	}
	return clientURL.String(), stop, nil
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
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := client.Get(ctx, "/registry/health-check"); err != nil {
		client.Close()
		return nil, fmt.Errorf("etcd %v: %w", endpoints, err)
	}
	return client, nil
}
