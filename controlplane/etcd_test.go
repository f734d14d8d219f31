package controlplane_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skiff-lab/skiff/controlplane"
	"github.com/skiff-lab/skiff/controlplane/apiserver/codec"
	"github.com/skiff-lab/skiff/controlplane/pki"
	"github.com/skiff-lab/skiff/controlplane/servertest"
	"github.com/skiff-lab/skiff/controlplane/store"
	"go.etcd.io/etcd/server/v3/embed"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3client"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestOldPlainHTTPDataDirUpgraded starts a server on a data dir as an
// older skiff left it — etcd's member on a plain-HTTP peer URL, the data
// dir open to everyone, a key readable by all — and finds every object
// there, etcd's member on its TLS peer URL, and the files private.
func TestOldPlainHTTPDataDirUpgraded(t *testing.T) {
	if testing.Short() {
		t.Skip("integration: starts etcd and the API server")
	}
	dir := t.TempDir()
	writeOldDataDir(t, dir)
	s := servertest.StartWith(t, func(c *controlplane.Config) {
		c.DataDir = dir
		servertest.OpenEtcd(t)(c)
	})
	ctx := t.Context()
	cm, err := s.Client().CoreV1().ConfigMaps("default").Get(ctx, "from-before", metav1.GetOptions{})
	if err != nil || cm.Data["kept"] != "yes" {
		t.Errorf("ConfigMap written by the older skiff: %v %v", cm, err)
	}
	secret, err := s.Client().CoreV1().Secrets("default").Get(ctx, "old-secret", metav1.GetOptions{})
	if err != nil || string(secret.Data["password"]) != "hunter2" {
		t.Errorf("Secret written by the older skiff: %v", err)
	}
	members, err := s.EtcdClient().MemberList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range members.Members {
		for _, u := range m.PeerURLs {
			if !strings.HasPrefix(u, "https://") {
				t.Errorf("member %s keeps its peer URL %s", m.Name, u)
			}
		}
	}
	for path, want := range map[string]os.FileMode{dir: 0o700, filepath.Join(dir, "server"): 0o700,
		filepath.Join(dir, "server", "tls", "ca.key"): 0o600, filepath.Join(dir, "server", "tls", "etcd", "ca.key"): 0o600,
		filepath.Join(dir, "server", "tls", "etcd", "apiserver-etcd-client.key"): 0o600} {
		if info, err := os.Stat(path); err != nil || info.Mode().Perm() != want {
			t.Errorf("%s: %v %v, want mode %o", path, info.Mode().Perm(), err, want)
		}
	}
}

// writeOldDataDir makes dir what skiff made before its etcd had TLS: the
// embedded etcd's member "skiff" on plain-HTTP loopback URLs with a
// ConfigMap and a Secret in it, the cluster CA, and loose modes.
func writeOldDataDir(t *testing.T, dir string) {
	t.Helper()
	ports := servertest.FreePorts(t, 2)
	cfg := embed.NewConfig()
	cfg.Name, cfg.Dir = "skiff", filepath.Join(dir, "server", "etcd")
	client := url.URL{Scheme: "http", Host: "127.0.0.1:" + strconv.Itoa(ports[0])}
	peer := url.URL{Scheme: "http", Host: "127.0.0.1:" + strconv.Itoa(ports[1])}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
	cfg.InitialCluster = "skiff=" + peer.String()
	cfg.LogLevel = "error"
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(time.Minute):
		t.Fatal("old etcd did not start")
	}
	st := store.New(v3client.New(e.Server), codec.Scheme)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	objects := []struct {
		key string
		obj runtime.Object
	}{
		{"/registry/configmaps/default/from-before", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "from-before", Namespace: "default"}, Data: map[string]string{"kept": "yes"}}},
		{"/registry/secrets/default/old-secret", &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "old-secret", Namespace: "default"}, Data: map[string][]byte{"password": []byte("hunter2")}}},
	}
	for _, o := range objects {
		if err := st.Create(ctx, o.key, o.obj); err != nil {
			t.Fatal(err)
		}
	}
	e.Close()
	if _, err := pki.LoadOrCreateCA(filepath.Join(dir, "server", "tls"), "skiff-ca"); err != nil {
		t.Fatal(err)
	}
	for path, mode := range map[string]os.FileMode{dir: 0o755, filepath.Join(dir, "server"): 0o755, filepath.Join(dir, "server", "tls", "ca.key"): 0o644} {
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
	}
}

// TestEtcdClientFlagsChecked: etcd client files without --etcd-servers,
// or a certificate without its key, are refused with the flags named.
func TestEtcdClientFlagsChecked(t *testing.T) {
	for _, tc := range []struct {
		cfg  controlplane.Config
		want string
	}{
		{controlplane.Config{EtcdClient: controlplane.EtcdClientFiles{CAFile: "/x/ca.crt"}}, "need --etcd-servers"},
		{controlplane.Config{EtcdServers: []string{"https://127.0.0.1:1"}, EtcdClient: controlplane.EtcdClientFiles{CertFile: "/x/c.crt"}},
			"--etcd-certfile and --etcd-keyfile go together"},
	} {
		tc.cfg.DataDir, tc.cfg.ServiceCIDR, tc.cfg.NodePortRange = t.TempDir(), "10.96.0.0/16", "30000-32767"
		err := controlplane.Run(t.Context(), tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Run with %+v: %v, want %q", tc.cfg.EtcdClient, err, tc.want)
		}
	}
}

// TestWatchesSurviveChurn: watches opened and dropped by the hundred while
// objects change (as the conformance suite does) leave the embedded etcd's
// watches working: one opened before still sees every change, a new one
// starts. (The in-process etcd adapter's streams deadlocked under this,
// freezing every controller's informer.)
func TestWatchesSurviveChurn(t *testing.T) {
	if testing.Short() {
		t.Skip("integration: starts etcd and the API server")
	}
	s := servertest.StartWith(t, servertest.OpenEtcd(t))
	c, ctx := s.Client(), t.Context()
	cms := c.CoreV1().ConfigMaps("default")
	long, err := cms.Watch(ctx, metav1.ListOptions{LabelSelector: "probe=yes"})
	if err != nil {
		t.Fatal(err)
	}
	defer long.Stop()
	churn, stop := context.WithTimeout(ctx, 8*time.Second)
	defer stop()
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Go(func() {
			for n := 0; churn.Err() == nil; n++ {
				name := fmt.Sprintf("churn-%d-%d", i, n)
				w, err := cms.Watch(churn, metav1.ListOptions{})
				if err != nil {
					continue
				}
				_, _ = cms.Create(churn, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
				select {
				case <-w.ResultChan():
				case <-time.After(100 * time.Millisecond):
				}
				w.Stop()
				_ = cms.Delete(churn, name, metav1.DeleteOptions{})
			}
		})
	}
	wg.Wait()
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "probe", Labels: map[string]string{"probe": "yes"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-long.ResultChan():
		if ev.Type != "ADDED" {
			t.Errorf("the long watch saw %s, want ADDED", ev.Type)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a watch opened before the churn saw nothing of a create after it")
	}
}
