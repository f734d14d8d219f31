package controlplane

import (
	"crypto/x509"
	"path/filepath"

	"github.com/skiff-lab/skiff/controlplane/aggregator"
	"github.com/skiff-lab/skiff/controlplane/pki"
)

// FrontProxyClientName is the name of the aggregator's client
// certificate, the only name extension API servers accept proxied
// requests from (requestheader-allowed-names).
const FrontProxyClientName = "front-proxy-client"

// ensureFrontProxyPKI creates in dir what is missing of the front proxy's
// CA (a CA of its own, as kube-apiserver's --requestheader-client-ca-file,
// so that no certificate the cluster CA signs can speak for other users)
// and the aggregator's client certificate; it returns the CA's PEM and
// the client's files.
func ensureFrontProxyPKI(dir string) ([]byte, aggregator.ProxyClient, error) {
	ca, err := pki.LoadOrCreateCA(dir, "skiff-front-proxy-ca")
	if err != nil {
		return nil, aggregator.ProxyClient{}, err
	}
	client := aggregator.ProxyClient{CertFile: filepath.Join(dir, "client.crt"), KeyFile: filepath.Join(dir, "client.key")}
	_, err = ca.LoadOrIssue(client.CertFile, client.KeyFile, FrontProxyClientName, nil, x509.ExtKeyUsageClientAuth)
	return ca.CertPEM, client, err
}
