package join

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"path/filepath"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/certificate"
	"k8s.io/client-go/util/connrotation"
)

// rotationCheck is how often the REST config looks for a renewed
// certificate to close the connections made with the old one: often, as
// a renewal may come only seconds before the old certificate expires
// (the manager renews at 70–90 % of a lifetime, which can be short), and
// a request on an old connection is then refused. The check is a pointer
// comparison.
const rotationCheck = time.Second

// RotatingClient keeps the node's client certificate fresh with client-go's
// certificate manager (the kubelet's): when 70–90 % of its lifetime has
// passed (jittered), a new key and a CSR made as the node itself, which
// the server approves as a renewal; the pairs are kept under pkiDir
// (node-client-current.pem). The returned REST config presents the current
// certificate on every new connection and closes the connections made with
// the old one once it is renewed, so the agent goes on without a restart.
func RotatingClient(ctx context.Context, rc *rest.Config, node, pkiDir string) (*rest.Config, error) {
	store, err := certificate.NewFileStore("node-client", pkiDir, pkiDir, filepath.Join(pkiDir, certFile), filepath.Join(pkiDir, keyFile))
	if err != nil {
		return nil, err
	}
	mgr, err := certificate.NewManager(&certificate.Config{
		ClientsetFn: func(current *tls.Certificate) (kubernetes.Interface, error) {
			c, err := withCertificate(rc, current)
			if err != nil {
				return nil, err
			}
			return kubernetes.NewForConfig(c)
		},
		Template:         nodeRequest(node, nil),
		SignerName:       certificatesv1.KubeAPIServerClientKubeletSignerName,
		GetUsages:        certificate.DefaultKubeletClientGetUsages,
		CertificateStore: store,
		Name:             "node-client",
	})
	if err != nil {
		return nil, err
	}
	mgr.Start()
	out, tlsCfg, err := anonymousTLS(rc)
	if err != nil {
		mgr.Stop()
		return nil, err
	}
	tlsCfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
		if c := mgr.Current(); c != nil {
			return c, nil
		}
		return &tls.Certificate{}, nil
	}
	dialer := connrotation.NewDialer((&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext)
	go closeOnRenewal(ctx, mgr, dialer)
	out.Transport = &http.Transport{Proxy: http.ProxyFromEnvironment, TLSClientConfig: tlsCfg, DialContext: dialer.DialContext,
		TLSHandshakeTimeout: 10 * time.Second, IdleConnTimeout: 90 * time.Second, MaxIdleConnsPerHost: 25, ForceAttemptHTTP2: true}
	return out, nil
}

// closeOnRenewal closes the dialer's connections whenever the manager's
// certificate changes, and stops the manager with ctx.
func closeOnRenewal(ctx context.Context, mgr certificate.Manager, dialer *connrotation.Dialer) {
	defer mgr.Stop()
	last := mgr.Current()
	tick := time.NewTicker(rotationCheck)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if cur := mgr.Current(); cur != nil && cur != last {
			last = cur
			dialer.CloseAll()
		}
	}
}

// withCertificate is rc's server and CA with cert as the client
// certificate.
func withCertificate(rc *rest.Config, cert *tls.Certificate) (*rest.Config, error) {
	out, tc, err := anonymousTLS(rc)
	if err != nil {
		return nil, err
	}
	if cert != nil {
		tc.Certificates = []tls.Certificate{*cert}
	}
	out.Transport = &http.Transport{Proxy: http.ProxyFromEnvironment, TLSClientConfig: tc}
	return out, nil
}

// anonymousTLS is rc without credentials, and the TLS configuration of its
// server and CA, for a transport of the caller's.
func anonymousTLS(rc *rest.Config) (*rest.Config, *tls.Config, error) {
	out := rest.AnonymousClientConfig(rc)
	tc, err := rest.TLSConfigFor(out)
	if err != nil {
		return nil, nil, err
	}
	out.TLSClientConfig, out.Dial = rest.TLSClientConfig{}, nil
	return out, tc, nil
}
