package join

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/certificate"
)

// Joined reports whether pkiDir holds a join's client certificate: the
// node's identity is its own, and so is its serving certificate.
func Joined(pkiDir string) bool {
	_, err := os.Stat(filepath.Join(pkiDir, certFile))
	return err == nil
}

// Serving returns how a joined node keeps its node API's serving
// certificate for names (its name and addresses), with client-go's
// certificate manager (the kubelet's rotated server certificate): a key
// and a CSR for signer kubernetes.io/kubelet-serving made with the node's
// own credentials rc, which the server approves for its Node's names and
// addresses; the pair kept under pkiDir (node-serving-current.pem) and
// reused while it is valid for names; a new one when 70–90 % of its
// lifetime has passed (jittered). The returned function waits up to wait
// (default 5 minutes) for the first certificate, then gives the current
// one, for the server's GetCertificate: a renewal takes effect on the next
// handshake, without a restart. The manager stops with ctx.
func Serving(ctx context.Context, rc *rest.Config, node, pkiDir string, wait time.Duration) func(names []string) (func() *tls.Certificate, error) {
	return func(names []string) (func() *tls.Certificate, error) {
		store, err := certificate.NewFileStore("node-serving", pkiDir, pkiDir, "", "")
		if err != nil {
			return nil, err
		}
		mgr, err := certificate.NewManager(&certificate.Config{
			ClientsetFn:      func(*tls.Certificate) (kubernetes.Interface, error) { return kubernetes.NewForConfig(rc) },
			Template:         nodeRequest(node, names),
			SignerName:       certificatesv1.KubeletServingSignerName,
			GetUsages:        certificate.DefaultKubeletServingGetUsages,
			CertificateStore: store,
			Name:             "node-serving",
		})
		if err != nil {
			return nil, err
		}
		mgr.Start()
		context.AfterFunc(ctx, mgr.Stop)
		if err := firstCertificate(ctx, mgr, names, cmp.Or(wait, 5*time.Minute)); err != nil {
			mgr.Stop()
			return nil, err
		}
		return mgr.Current, nil
	}
}

// nodeRequest is the certificate request of node for names (none for a
// client certificate), the IPs among them as IP addresses.
func nodeRequest(node string, names []string) *x509.CertificateRequest {
	tmpl := &x509.CertificateRequest{Subject: pkix.Name{CommonName: nodeUserPrefix + node, Organization: []string{nodeGroup}}}
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	return tmpl
}

// firstCertificate waits until mgr has a certificate valid now for names
// (a kept one for other names is replaced at once).
func firstCertificate(ctx context.Context, mgr certificate.Manager, names []string, timeout time.Duration) error {
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		c := mgr.Current()
		return c != nil && c.Leaf != nil && time.Now().Before(c.Leaf.NotAfter) && covers(c.Leaf, names), nil
	})
	if err != nil {
		return fmt.Errorf("no serving certificate signed within %s (see kubectl get csr): %w", timeout, err)
	}
	return nil
}

// covers reports whether cert is valid for every name.
func covers(cert *x509.Certificate, names []string) bool {
	for _, n := range names {
		if cert.VerifyHostname(n) != nil {
			return false
		}
	}
	return true
}
