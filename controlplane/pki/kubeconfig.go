package pki

import (
	"crypto/x509"
	"os"
	"path/filepath"

	"github.com/containerd/continuity"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// WriteKubeconfig writes a kubeconfig with file mode mode for server that
// authenticates with a new client certificate for user in groups, signed
// by ca.
func (ca *CA) WriteKubeconfig(path string, mode os.FileMode, server, user string, groups []string) error {
	certPEM, keyPEM, err := ca.Issue(user, groups, nil, x509.ExtKeyUsageClientAuth)
	if err != nil {
		return err
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["skiff"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca.CertPEM}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: certPEM, ClientKeyData: keyPEM}
	cfg.Contexts["skiff"] = &clientcmdapi.Context{Cluster: "skiff", AuthInfo: user, Namespace: "default"}
	cfg.CurrentContext = "skiff"
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := continuity.AtomicWriteFile(path, data, mode); err != nil {
		return err
	}
	return os.Chmod(path, mode) // past the umask

}

// RESTConfig returns a client configuration for server that authenticates
// with a new client certificate for user in groups, signed by ca.
func (ca *CA) RESTConfig(server, user string, groups []string) (*rest.Config, error) {
	certPEM, keyPEM, err := ca.Issue(user, groups, nil, x509.ExtKeyUsageClientAuth)
	if err != nil {
		return nil, err
	}
	return &rest.Config{
		Host:            server,
		TLSClientConfig: rest.TLSClientConfig{CAData: ca.CertPEM, CertData: certPEM, KeyData: keyPEM},
		QPS:             100,
		Burst:           200,
	}, nil
}
