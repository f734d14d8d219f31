// Package servertest starts a real skiff control plane (embedded etcd and
// API server on loopback ports) inside a test process, for tests that drive
// it with client-go.
package servertest

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/skiff-lab/skiff/controlplane"
	"github.com/skiff-lab/skiff/controlplane/pki"
	"github.com/skiff-lab/skiff/jointoken"
)

// Server is a running control plane.
type Server struct {
	t          testing.TB
	Config     controlplane.Config
	Kubeconfig string
	cancel     context.CancelFunc
	done       chan error
}

// skipShort skips the test under go test -short: what follows starts
// etcd, and often the API server too.
func skipShort(t testing.TB) {
	if testing.Short() {
		t.Skip("integration: starts etcd and the API server")
	}
}

// Start runs a control plane with its state in a new temporary directory;
// it is stopped when the test ends. Under go test -short it skips the test.
func Start(t testing.TB) *Server {
	t.Helper()
	return start(t, nil)
}

func start(t testing.TB, edit func(*controlplane.Config)) *Server {
	t.Helper()
	skipShort(t)
	dir := t.TempDir()
	ports := FreePorts(t, 2)
	s := &Server{t: t, Kubeconfig: filepath.Join(dir, "admin.kubeconfig"), Config: controlplane.Config{
		DataDir:          dir,
		BindAddress:      "127.0.0.1",
		SecurePort:       ports[0],
		EtcdPeerPort:     ports[1],
		KubeconfigPath:   filepath.Join(dir, "admin.kubeconfig"),
		ServiceCIDR:      "10.96.0.0/16",
		NodePortRange:    "30000-32767",
		BookmarkInterval: time.Second,
		LeaderElect:      true,
		ClusterCIDR:      "10.244.0.0/16",
		// Short, so that tests of node health need not wait 40s; long
		// enough that tests with agentless nodes (no Lease) are done
		// before those nodes are tainted unreachable.
		NodeMonitorGracePeriod: 10 * time.Second,
		// Every pod traced, as skiff server's flags default to.
		Tracing: controlplane.Tracing{SamplingRate: 1},
	}}
	if edit != nil {
		edit(&s.Config)
	}
	s.start()
	t.Cleanup(s.Stop)
	return s
}

func (s *Server) start() {
	s.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	cfg := s.Config
	cfg.Ready = ready
	s.cancel, s.done = cancel, make(chan error, 1)
	go func() { s.done <- controlplane.Run(ctx, cfg) }()
	select {
	case <-ready:
	case err := <-s.done:
		s.cancel = nil
		s.t.Fatalf("control plane did not start: %v", err)
	case <-time.After(90 * time.Second):
		s.t.Fatal("control plane did not start in 90s")
	}
	s.waitReady()
}

// waitReady waits until the server answers /readyz with ok: its
// authorizer is installed.
func (s *Server) waitReady() {
	s.t.Helper()
	client := s.Client()
	Eventually(s.t, "/readyz", 60*time.Second, func(ctx context.Context) (bool, string) {
		out, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil, string(out)
	})
}

// Stop stops the control plane and waits for it; stopping twice is fine.
func (s *Server) Stop() {
	if s.cancel == nil {
		return
	}
	s.cancel()
	s.cancel = nil
	select {
	case err := <-s.done:
		if err != nil {
			s.t.Errorf("control plane: %v", err)
		}
	case <-time.After(30 * time.Second):
		s.t.Error("control plane did not stop in 30s")
	}
}

// Restart stops the control plane and starts it again on the same state.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	s.start()
}

// RESTConfig returns an admin client configuration.
func (s *Server) RESTConfig() *rest.Config {
	s.t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", s.Kubeconfig)
	if err != nil {
		s.t.Fatalf("load kubeconfig: %v", err)
	}
	return cfg
}

// Client returns an admin clientset.
func (s *Server) Client() kubernetes.Interface {
	s.t.Helper()
	c, err := kubernetes.NewForConfig(s.RESTConfig())
	if err != nil {
		s.t.Fatal(err)
	}
	return c
}

// FreePorts returns n loopback TCP ports that were free a moment ago.
func FreePorts(t testing.TB, n int) []int {
	t.Helper()
	var ports []int
	var listeners []net.Listener
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		listeners = append(listeners, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	for _, ln := range listeners {
		ln.Close()
	}
	return ports
}

// Etcd is an etcd server of a test's own, behind mutual TLS as skiff's
// embedded etcd is.
type Etcd struct {
	Endpoint string
	Files    controlplane.EtcdClientFiles
}

// StartEtcd runs a real single-member etcd on loopback ports, stopped when
// the test ends; clients need the certificate in its Files.
func StartEtcd(t testing.TB) Etcd {
	t.Helper()
	skipShort(t)
	ports := FreePorts(t, 2)
	e, err := controlplane.StartEmbeddedEtcd(controlplane.EtcdConfig{Dir: t.TempDir(), ClientPort: ports[0], PeerPort: ports[1], Progress: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Stop)
	return Etcd{Endpoint: e.Endpoint, Files: e.Client}
}

// External makes cfg use this etcd as an external one (--etcd-servers,
// --etcd-cafile, --etcd-certfile, --etcd-keyfile).
func (e Etcd) External(cfg *controlplane.Config) {
	cfg.EtcdServers, cfg.EtcdClient = []string{e.Endpoint}, e.Files
}

// Flags are the `skiff server` flags that make it use this etcd.
func (e Etcd) Flags() []string {
	return []string{"--etcd-servers", e.Endpoint, "--etcd-cafile", e.Files.CAFile,
		"--etcd-certfile", e.Files.CertFile, "--etcd-keyfile", e.Files.KeyFile}
}

// Connect returns a client of this etcd, closed when the test ends.
func (e Etcd) Connect(t testing.TB) *clientv3.Client {
	t.Helper()
	tlsCfg, err := e.Files.TLSConfig()
	if err != nil {
		t.Fatal(err)
	}
	client, err := clientv3.New(clientv3.Config{Endpoints: []string{e.Endpoint}, TLS: tlsCfg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	return client
}

// OpenEtcd opens the embedded etcd's client listener on a free port, for
// tests that reach into etcd (EtcdClient).
func OpenEtcd(t testing.TB) func(*controlplane.Config) {
	port := FreePorts(t, 1)[0]
	return func(c *controlplane.Config) { c.EtcdClientPort = port }
}

// EtcdClient returns a client of the server's embedded etcd through its
// client listener (opened with OpenEtcd) with the API server's etcd client
// certificate; it is closed when the test ends.
func (s *Server) EtcdClient() *clientv3.Client {
	s.t.Helper()
	e := Etcd{Endpoint: fmt.Sprintf("https://127.0.0.1:%d", s.Config.EtcdClientPort), Files: controlplane.EmbeddedEtcdClient(s.Config.DataDir)}
	return e.Connect(s.t)
}

// StartWith runs a control plane like Start, after edit has changed its
// configuration.
//
// A server without components (DisableComponents) gets the default
// ServiceAccount of the default namespace, which the service account
// controller would make, so that pods can be created there.
func StartWith(t testing.TB, edit func(*controlplane.Config)) *Server {
	t.Helper()
	s := start(t, edit)
	if s.Config.DisableComponents {
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
		_, err := s.Client().CoreV1().ServiceAccounts(metav1.NamespaceDefault).Create(context.Background(), sa, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("default service account: %v", err)
		}
	}
	return s
}

// PollInterval is how often Eventually checks.
const PollInterval = 100 * time.Millisecond

// Eventually checks cond every PollInterval until it holds, failing the test
// after timeout with the last thing cond saw; it returns that description.
func Eventually(t testing.TB, what string, timeout time.Duration, cond func(ctx context.Context) (ok bool, seen string)) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	tick := time.NewTicker(PollInterval)
	defer tick.Stop()
	for {
		ok, seen := cond(ctx)
		if ok {
			return seen
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: not within %s; last seen: %s", what, timeout, seen)
			return seen
		case <-tick.C:
		}
	}
}

// Consistently checks cond every PollInterval for d, failing the test the
// first time it does not hold, with what cond saw.
func Consistently(t testing.TB, what string, d time.Duration, cond func() (ok bool, seen string)) {
	t.Helper()
	deadline := time.Now().Add(d)
	tick := time.NewTicker(PollInterval)
	defer tick.Stop()
	for time.Now().Before(deadline) {
		if ok, seen := cond(); !ok {
			t.Fatalf("%s: not so; now %s", what, seen)
		}
		select {
		case <-t.Context().Done():
			return
		case <-tick.C:
		}
	}
}

// JoinToken returns the join token the server wrote at its first start.
func (s *Server) JoinToken() jointoken.Token {
	s.t.Helper()
	b, err := os.ReadFile(filepath.Join(s.Config.DataDir, "server", "token"))
	if err != nil {
		s.t.Fatal(err)
	}
	tok, err := jointoken.Parse(string(b))
	if err != nil {
		s.t.Fatal(err)
	}
	return tok
}

// UserConfig returns a client configuration with a certificate of the
// cluster CA for user name in groups: a node is "system:node:<name>" in
// "system:nodes".
func (s *Server) UserConfig(name string, groups ...string) *rest.Config {
	s.t.Helper()
	ca, err := pki.LoadOrCreateCA(filepath.Join(s.Config.DataDir, "server", "tls"), "skiff-ca")
	if err != nil {
		s.t.Fatal(err)
	}
	cfg, err := ca.RESTConfig(s.RESTConfig().Host, name, groups)
	if err != nil {
		s.t.Fatal(err)
	}
	return cfg
}
