package join_test

import (
	"context"
	"crypto/tls"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"

	"github.com/skiff-lab/skiff/agent/join"
	"github.com/skiff-lab/skiff/controlplane"
	"github.com/skiff-lab/skiff/controlplane/servertest"
)

func joinConfig(t *testing.T, s *servertest.Server, node, token string) join.Config {
	dir := t.TempDir()
	return join.Config{Server: s.RESTConfig().Host, Token: token, NodeName: node, PKIDir: filepath.Join(dir, "pki"),
		Kubeconfig: filepath.Join(dir, "agent.kubeconfig"), Wait: 5 * time.Second}
}

func csrCount(t *testing.T, c kubernetes.Interface) int {
	t.Helper()
	list, err := c.CertificatesV1().CertificateSigningRequests().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return len(list.Items)
}

// TestJoin joins nodes with the server's token against a real control
// plane: a token pinning another CA is refused before anything is sent, a
// wrong secret is refused by the server, the right token gets the node a
// certificate it registers with, a restart needs no token, a name already
// registered waits for an admin, and an admin's denial stops the join
// with its reason.
func TestJoin(t *testing.T) {
	s := servertest.Start(t)
	admin := s.Client()
	ctx := context.Background()
	tok := s.JoinToken()

	otherCA := tok
	otherCA.CAHash = "sha256:" + strings.Repeat("0", 64)
	err := join.Credentials(ctx, joinConfig(t, s, "n1", otherCA.String()))
	if err == nil || !strings.Contains(err.Error(), tok.CAHash) || !strings.Contains(err.Error(), otherCA.CAHash) {
		t.Errorf("a token pinning another CA: %v, want an error naming both hashes", err)
	}
	wrong := tok
	wrong.Secret = "0000000000000000"
	if err := join.Credentials(ctx, joinConfig(t, s, "n1", wrong.String())); err == nil || !strings.Contains(err.Error(), "Unauthorized") {
		t.Errorf("a wrong secret: %v, want Unauthorized", err)
	}
	if n := csrCount(t, admin); n != 0 {
		t.Errorf("%d certificate requests after refused joins", n)
	}

	cfg := joinConfig(t, s, "n1", tok.String())
	if err := join.Credentials(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", cfg.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	node, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := node.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("registering with the joined credentials: %v", err)
	}
	if fi, err := os.Stat(filepath.Join(cfg.PKIDir, "node-client.key")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("key file: %v %v", err, fi.Mode())
	}
	cfg.Token = ""
	if err := join.Credentials(ctx, cfg); err != nil || csrCount(t, admin) != 1 {
		t.Errorf("a restart without the token: %v, %d requests", err, csrCount(t, admin))
	}

	// The node API's serving certificate, asked as the node itself for its
	// Node's name and address, kept for the next start.
	// (Again on a conflict: the node lifecycle controller writes the Node too.)
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := node.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
		if err != nil {
			return err
		}
		n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.0.2.5"}}
		_, err = node.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if !join.Joined(cfg.PKIDir) {
		t.Error("the joined node's pki directory is not recognised")
	}
	serving := join.Serving(ctx, rc, "n1", cfg.PKIDir, 10*time.Second)
	current, err := serving([]string{"n1", "192.0.2.5"})
	if err != nil {
		t.Fatalf("serving certificate: %v", err)
	}
	if pair := current(); pair.Leaf.VerifyHostname("192.0.2.5") != nil || pair.Leaf.Subject.CommonName != "system:node:n1" {
		t.Fatalf("serving certificate for %v %v as %s", pair.Leaf.DNSNames, pair.Leaf.IPAddresses, pair.Leaf.Subject)
	}
	if again, err := serving([]string{"n1", "192.0.2.5"}); err != nil || !again().Leaf.Equal(current().Leaf) || csrCount(t, admin) != 2 {
		t.Errorf("a second start asked again: %v, %d requests", err, csrCount(t, admin))
	}
	if _, err := join.Serving(ctx, rc, "n1", t.TempDir(), 3*time.Second)([]string{"192.0.2.66"}); err == nil {
		t.Error("a serving certificate for an address not the node's was signed")
	}

	if err := join.Credentials(ctx, joinConfig(t, s, "n1", tok.String())); err == nil || !strings.Contains(err.Error(), "not signed within") {
		t.Errorf("joining as a registered node: %v, want a request left pending", err)
	}

	// n3 is registered, so its request waits for an admin, who denies it.
	if _, err := admin.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n3"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		cfg := joinConfig(t, s, "n3", tok.String())
		cfg.Wait = 30 * time.Second
		done <- join.Credentials(ctx, cfg)
	}()
	servertest.Eventually(t, "n3's request", 10*time.Second, func(ctx context.Context) (bool, string) {
		list, err := admin.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, csr := range list.Items {
			if strings.HasPrefix(csr.Name, "node-csr-n3-") {
				csr.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateDenied,
					Status: corev1.ConditionTrue, Reason: "NotOurs", Message: "no such machine"}}
				_, err := admin.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, csr.Name, &csr, metav1.UpdateOptions{})
				return err == nil, "deny"
			}
		}
		return false, "none yet"
	})
	if err := <-done; err == nil || !strings.Contains(err.Error(), "Denied") || !strings.Contains(err.Error(), "no such machine") {
		t.Errorf("a denied request: %v", err)
	}
}

// TestRotation renews a joined node's client and serving certificates,
// with a server signing for 30 s, without a restart: the client made by
// RotatingClient still works once the first certificate has expired, and
// Serving's function gives the renewed serving certificate.
func TestRotation(t *testing.T) {
	s := servertest.StartWith(t, func(cfg *controlplane.Config) { cfg.NodeCertValidity = 30 * time.Second })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := joinConfig(t, s, "r1", s.JoinToken().String())
	if err := join.Credentials(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	first, err := tls.LoadX509KeyPair(filepath.Join(cfg.PKIDir, "node-client.crt"), filepath.Join(cfg.PKIDir, "node-client.key"))
	if err != nil {
		t.Fatal(err)
	}
	stored, err := clientcmd.BuildConfigFromFlags("", cfg.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := join.RotatingClient(ctx, stored, "r1", cfg.PKIDir)
	if err != nil {
		t.Fatal(err)
	}
	c, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "r1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	serving, err := join.Serving(ctx, rc, "r1", cfg.PKIDir, 10*time.Second)([]string{"r1"})
	if err != nil {
		t.Fatal(err)
	}
	firstServing := serving()
	current := filepath.Join(cfg.PKIDir, "node-client-current.pem")
	servertest.Eventually(t, "the client certificate renewed", 60*time.Second, func(ctx context.Context) (bool, string) {
		pair, err := tls.LoadX509KeyPair(current, current)
		if err != nil {
			return false, err.Error()
		}
		return !pair.Leaf.Equal(first.Leaf), "same certificate"
	})
	// Past the first certificate's end, only the renewed one is accepted.
	time.Sleep(time.Until(first.Leaf.NotAfter) + time.Second)
	if _, err := c.CoreV1().Nodes().Get(ctx, "r1", metav1.GetOptions{}); err != nil {
		t.Errorf("the client after the first certificate expired: %v", err)
	}
	if got := serving(); got.Leaf.Equal(firstServing.Leaf) || time.Now().After(got.Leaf.NotAfter) {
		t.Errorf("the serving certificate was not renewed: valid until %s", got.Leaf.NotAfter)
	}
	if n := csrCount(t, s.Client()); n < 4 {
		t.Errorf("%d certificate requests, want a join, a serving certificate and their renewals", n)
	}
}
