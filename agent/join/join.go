// Package join gets a node its identity in the cluster with a join token,
// the way kubeadm and k3s join nodes: the node fetches the cluster CA over
// a TLS connection it verifies against the CA hash its token carries (so
// it never sends the token to a server it has not checked), authenticates
// with the token's bootstrap token, asks for its client certificate
// through the CSR API (CN system:node:<name>, O system:nodes) and keeps key,
// certificate and a kubeconfig; later starts need no token while the
// certificate is valid.
package join

import (
	"cmp"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/containerd/continuity"
	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/skiff-lab/skiff/jointoken"
)

// Config is what a node joins with.
type Config struct {
	Server     string // https://host:port of the API server
	Token      string // the join token; empty: only the stored credentials
	NodeName   string
	PKIDir     string // key, certificate and CA: <data-dir>/agent/pki
	Kubeconfig string // written for the node's client certificate
	// Wait bounds the wait for the certificate; default 5 minutes.
	Wait time.Duration
}

// File names under PKIDir.
const (
	keyFile  = "node-client.key"
	certFile = "node-client.crt"
	caFile   = "ca.crt"
)

// Credentials makes sure cfg.Kubeconfig holds the node's client
// certificate: what a previous join stored while it is valid, else a new
// one got with the token.
func Credentials(ctx context.Context, cfg Config) error {
	if err := stored(cfg); err == nil {
		return nil
	} else if cfg.Token == "" {
		return fmt.Errorf("no valid node credentials (%v) and no token to join with", err)
	}
	tok, err := jointoken.Parse(cfg.Token)
	if err != nil {
		return err
	}
	caPEM, err := jointoken.FetchCA(ctx, cfg.Server, tok.CAHash)
	if err != nil {
		return err
	}
	keyPEM, csrPEM, err := newRequest(cfg.NodeName)
	if err != nil {
		return err
	}
	boot := &rest.Config{Host: cfg.Server, BearerToken: tok.Bearer(), TLSClientConfig: rest.TLSClientConfig{CAData: caPEM}}
	certPEM, err := requestCertificate(ctx, boot, csrPEM, cfg.NodeName, certificatesv1.KubeAPIServerClientKubeletSignerName, cmp.Or(cfg.Wait, 5*time.Minute))
	if err != nil {
		return err
	}
	return store(cfg, caPEM, keyPEM, certPEM)
}

// stored checks the credentials a previous join left.
func stored(cfg Config) error {
	rc, err := clientcmd.BuildConfigFromFlags("", cfg.Kubeconfig)
	if err != nil {
		return err
	}
	pair, err := tls.LoadX509KeyPair(rc.CertFile, rc.KeyFile)
	if err != nil {
		return err
	}
	if left := time.Until(pair.Leaf.NotAfter); left <= 0 {
		return fmt.Errorf("the node certificate expired at %s", pair.Leaf.NotAfter.Format(time.RFC3339))
	}
	if want := nodeUserPrefix + cfg.NodeName; pair.Leaf.Subject.CommonName != want {
		return fmt.Errorf("the node certificate is %s's, not %s", pair.Leaf.Subject.CommonName, want)
	}
	return nil
}

// newRequest makes a key and a request for node's client certificate.
func newRequest(node string) (keyPEM, csrPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, nodeRequest(node, nil), key)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}), nil
}

// A node's identity in its certificates.
const (
	nodeUserPrefix = "system:node:"
	nodeGroup      = "system:nodes"
)

// requestCertificate creates a CSR for signer and waits for its
// certificate; a denial or a failure ends the wait with its reason.
func requestCertificate(ctx context.Context, rc *rest.Config, csrPEM []byte, node, signer string, timeout time.Duration) ([]byte, error) {
	c, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	usage := certificatesv1.UsageClientAuth
	csr := &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{GenerateName: "node-csr-" + node + "-"},
		Spec: certificatesv1.CertificateSigningRequestSpec{Request: csrPEM, SignerName: signer,
			Usages: []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, usage}}}
	csr, err = c.CertificatesV1().CertificateSigningRequests().Create(ctx, csr, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("certificate request: %w", err)
	}
	slog.Info("node certificate requested", "node", node, "csr", csr.Name, "signer", signer)
	var cert []byte
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		got, err := c.CertificatesV1().CertificateSigningRequests().Get(ctx, csr.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil // the server may be restarting: ask again
		}
		for _, cond := range got.Status.Conditions {
			if cond.Type == certificatesv1.CertificateDenied || cond.Type == certificatesv1.CertificateFailed {
				return false, fmt.Errorf("certificate request %s %s: %s %s", csr.Name, cond.Type, cond.Reason, cond.Message)
			}
		}
		cert = got.Status.Certificate
		return len(cert) > 0, nil
	})
	if errors.Is(err, context.DeadlineExceeded) {
		return nil, fmt.Errorf("certificate request %s: not signed within %s (kubectl certificate approve %s?)", csr.Name, timeout, csr.Name)
	}
	return cert, err
}

// store writes key, certificate, CA and the kubeconfig that uses them.
func store(cfg Config, caPEM, keyPEM, certPEM []byte) error {
	if err := os.MkdirAll(cfg.PKIDir, 0o700); err != nil {
		return err
	}
	files := []struct {
		name string
		data []byte
		mode os.FileMode
	}{{keyFile, keyPEM, 0o600}, {certFile, certPEM, 0o644}, {caFile, caPEM, 0o644}}
	for _, f := range files {
		if err := continuity.AtomicWriteFile(filepath.Join(cfg.PKIDir, f.name), f.data, f.mode); err != nil {
			return err
		}
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["skiff"] = &clientcmdapi.Cluster{Server: cfg.Server, CertificateAuthority: filepath.Join(cfg.PKIDir, caFile)}
	kc.AuthInfos["node"] = &clientcmdapi.AuthInfo{ClientCertificate: filepath.Join(cfg.PKIDir, certFile), ClientKey: filepath.Join(cfg.PKIDir, keyFile)}
	kc.Contexts["node"] = &clientcmdapi.Context{Cluster: "skiff", AuthInfo: "node"}
	kc.CurrentContext = "node"
	if err := os.MkdirAll(filepath.Dir(cfg.Kubeconfig), 0o755); err != nil {
		return err
	}
	return clientcmd.WriteToFile(*kc, cfg.Kubeconfig)
}
