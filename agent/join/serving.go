package join

import (
	"cmp"
	"context"
	"crypto/tls"
	"os"
	"path/filepath"
	"time"

	"github.com/containerd/continuity"
	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/client-go/rest"
)

// File names of the node API's serving certificate under PKIDir.
const (
	servingKeyFile  = "node-serving.key"
	servingCertFile = "node-serving.crt"
)

// Joined reports whether pkiDir holds a join's client certificate: the
// node's identity is its own, and so is its serving certificate.
func Joined(pkiDir string) bool {
	_, err := os.Stat(filepath.Join(pkiDir, certFile))
	return err == nil
}

// Serving returns how a joined node gets its node API's serving
// certificate for names (its name and addresses): the one kept under
// pkiDir while it is valid and covers them, else a new one through a CSR
// for signer kubernetes.io/kubelet-serving made with the node's own
// credentials rc, which the server approves for its Node's names and
// addresses.
func Serving(ctx context.Context, rc *rest.Config, node, pkiDir string, wait time.Duration) func(names []string) (tls.Certificate, error) {
	certPath, keyPath := filepath.Join(pkiDir, servingCertFile), filepath.Join(pkiDir, servingKeyFile)
	return func(names []string) (tls.Certificate, error) {
		if pair, err := tls.LoadX509KeyPair(certPath, keyPath); err == nil && covers(pair, names) && time.Until(pair.Leaf.NotAfter) > 0 {
			return pair, nil
		}
		keyPEM, csrPEM, err := newRequest(node, names...)
		if err != nil {
			return tls.Certificate{}, err
		}
		certPEM, err := requestCertificate(ctx, rc, csrPEM, node, certificatesv1.KubeletServingSignerName, cmp.Or(wait, 5*time.Minute))
		if err != nil {
			return tls.Certificate{}, err
		}
		if err := continuity.AtomicWriteFile(keyPath, keyPEM, 0o600); err != nil {
			return tls.Certificate{}, err
		}
		if err := continuity.AtomicWriteFile(certPath, certPEM, 0o644); err != nil {
			return tls.Certificate{}, err
		}
		return tls.X509KeyPair(certPEM, keyPEM)
	}
}

// covers reports whether pair's certificate is valid for every name.
func covers(pair tls.Certificate, names []string) bool {
	for _, n := range names {
		if pair.Leaf.VerifyHostname(n) != nil {
			return false
		}
	}
	return true
}
