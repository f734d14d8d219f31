package e2e

import (
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/skiff-lab/skiff/controlplane/pki"
	"github.com/skiff-lab/skiff/controlplane/servertest"
	"github.com/skiff-lab/skiff/test/netnstest"
)

func skipUnlessRoot(t *testing.T) {
	t.Helper()
	if testing.Short() || os.Geteuid() != 0 {
		t.Skip("e2e as root: runs commands as another user or in a network namespace")
	}
}

// TestEtcdOnlyForItsOwnCertificates is the request that read the
// cluster's Secrets out of etcd, made again by an unprivileged local user
// (nobody, with curl) against a real server: without --etcd-client-port
// etcd has no client listener at all; with one, it and the peer listener
// speak TLS only and let in only certificates of the etcd CA, whose keys
// nobody cannot read. A certificate of another CA is refused too; the
// API server's own etcd client certificate gets in (so the check would
// see the data if it leaked).
func TestEtcdOnlyForItsOwnCertificates(t *testing.T) {
	skipUnlessRoot(t)
	plain := startCluster(t)
	if tcp := listenPorts(t, plain); len(tcp) != 2 {
		t.Errorf("a default server listens on %v, want only the API server and etcd's peer port", tcp)
	}
	plain.stop()

	clientPort := servertest.FreePorts(t, 1)[0]
	c := startCluster(t, "--etcd-client-port", fmt.Sprint(clientPort))
	c.must("create", "secret", "generic", "precious", "--from-literal=password=hunter2")
	secretKey := base64.StdEncoding.EncodeToString([]byte("/registry/secrets/default/precious"))
	body := fmt.Sprintf(`{"key":%q,"range_end":%q}`, base64.StdEncoding.EncodeToString([]byte("/registry/secrets/")),
		base64.StdEncoding.EncodeToString([]byte("/registry/secrets0")))
	etcdTLS := filepath.Join(c.dataDir, "server", "tls", "etcd")
	client := []string{"--cert", filepath.Join(etcdTLS, "apiserver-etcd-client.crt"), "--key", filepath.Join(etcdTLS, "apiserver-etcd-client.key")}
	kv := fmt.Sprintf("127.0.0.1:%d/v3/kv/range", clientPort)
	members := fmt.Sprintf("127.0.0.1:%s/members", c.flag("--etcd-peer-port"))
	for _, args := range [][]string{
		{"http://" + kv},
		{"-k", "https://" + kv},
		append([]string{"-k", "https://" + kv}, client...), // keys nobody cannot read
		{"http://" + members},
		{"-k", "https://" + members},
	} {
		out := curl(t, true, body, args...)
		if strings.Contains(out, secretKey) || strings.Contains(out, `"kvs"`) || strings.Contains(out, "peerURLs") {
			t.Errorf("nobody got data with curl %s:\n%s", strings.Join(args, " "), out)
		}
	}
	foreign := foreignClient(t)
	if out := curl(t, false, body, append([]string{"--cacert", filepath.Join(etcdTLS, "ca.crt"), "https://" + kv}, foreign...)...); strings.Contains(out, secretKey) {
		t.Errorf("a certificate of another CA got in:\n%s", out)
	}
	if out := curl(t, false, body, append([]string{"--cacert", filepath.Join(etcdTLS, "ca.crt"), "https://" + kv}, client...)...); !strings.Contains(out, secretKey) {
		t.Errorf("the etcd client certificate did not read the Secret's key:\n%s", out)
	}
}

// curl POSTs body with curl, as nobody when asNobody, and returns what it
// printed.
func curl(t *testing.T, asNobody bool, body string, args ...string) string {
	t.Helper()
	cmd := exec.Command("curl", append([]string{"-sS", "--max-time", "5", "-X", "POST", "-d", body}, args...)...)
	if asNobody {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}}}
		cmd.Dir = "/"
	}
	out, _ := cmd.CombinedOutput() // refusals are the point
	return string(out)
}

// foreignClient writes a client certificate of a CA of the test's own and
// returns curl's flags for it.
func foreignClient(t *testing.T) []string {
	t.Helper()
	dir := t.TempDir()
	ca, err := pki.LoadOrCreateCA(dir, "not-etcd")
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := ca.Issue("skiff-apiserver-etcd-client", nil, nil, x509.ExtKeyUsageClientAuth)
	if err != nil {
		t.Fatal(err)
	}
	crt, key := filepath.Join(dir, "client.crt"), filepath.Join(dir, "client.key")
	if os.WriteFile(crt, certPEM, 0o600) != nil || os.WriteFile(key, keyPEM, 0o600) != nil {
		t.Fatal("write the foreign certificate")
	}
	return []string{"--cert", crt, "--key", key}
}

// listenPorts are the TCP ports c's process listens on.
func listenPorts(t *testing.T, c *cluster) []int {
	var out []int
	for _, s := range listeningSockets(t, c.cmd.Process.Pid) {
		if strings.HasPrefix(s.proto, "tcp") {
			out = append(out, int(s.addr.Port()))
		}
	}
	return out
}

// flag is the value of a flag the server was started with.
func (c *cluster) flag(name string) string {
	if i := slices.Index(c.args, name); i >= 0 && i+1 < len(c.args) {
		return c.args[i+1]
	}
	return ""
}

// TestAdvertisedAddressAfterARestart runs a server bound to every address
// in a network namespace of the test's own, where a crashed agent left the
// cluster DNS address on lo and an uplink holds the default route: the
// kubernetes Endpoints list the uplink's address, at the first start and
// after a restart (SIGKILL), never the DNS address.
func TestAdvertisedAddressAfterARestart(t *testing.T) {
	skipUnlessRoot(t)
	ns := netnstest.New(t)
	if err := netnstest.Do(ns, func() { netnstest.Uplink(t, "10.123.0.2/24", "10.123.0.1", "10.96.0.10/32") }); err != nil {
		t.Fatal(err)
	}
	c := launchIn(t, t.TempDir(), fmt.Sprintf("/proc/%d/fd/%d", os.Getpid(), int(ns)), "--disable-agent", "--bind-address", "0.0.0.0")
	endpoints := func() string {
		return c.must("get", "endpoints", "kubernetes", "-o", "jsonpath={.subsets[*].addresses[*].ip}")
	}
	if got := endpoints(); got != "10.123.0.2" {
		t.Errorf("kubernetes Endpoints at the first start: %q, want the uplink's 10.123.0.2", got)
	}
	c.kill9()
	c.start()
	if got := endpoints(); got != "10.123.0.2" {
		t.Errorf("kubernetes Endpoints after a restart: %q, want the uplink's 10.123.0.2", got)
	}
}
