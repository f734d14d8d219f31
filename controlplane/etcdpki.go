package controlplane

import (
	"crypto/x509"
	"path/filepath"

	"go.etcd.io/etcd/client/pkg/v3/transport"

	"github.com/skiff-lab/skiff/controlplane/pki"
)

// EtcdClientName is the common name of the API server's client
// certificate for etcd (kubeadm's apiserver-etcd-client).
const EtcdClientName = "skiff-apiserver-etcd-client"

// etcdPKI is the embedded etcd's own CA and the certificates it signs, in
// one directory (as kubeadm's etcd/): ca.{crt,key}; server.{crt,key} for
// the client listener; peer.{crt,key} for the peer listener, which is a
// client of the other members too; apiserver-etcd-client.{crt,key} for
// clients in other processes. Nothing signed by another CA gets in.
type etcdPKI struct{ dir string }

// The base names of the leaf pairs.
const (
	etcdServerPair = "server"
	etcdPeerPair   = "peer"
	etcdClientPair = "apiserver-etcd-client"
)

// etcdNames are the names the etcd listeners are reached by: loopback,
// and the client socket's file name, which an etcd client dialing a unix
// socket takes as the server's name.
var etcdNames = []string{"localhost", "127.0.0.1", "::1", clientSocketName}

// ensureEtcdPKI creates in dir what is missing of the etcd CA and its
// certificates, and reissues those that no longer fit (package pki's
// LoadOrIssue); keys are 0600 in a 0700 directory.
func ensureEtcdPKI(dir string) (etcdPKI, error) {
	p := etcdPKI{dir: dir}
	ca, err := pki.LoadOrCreateCA(dir, "skiff-etcd-ca")
	if err != nil {
		return p, err
	}
	both := []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	// etcd's gateway dials its own listener with the server certificate,
	// and a peer dials the others with its peer certificate: both serve
	// and are clients.
	leaves := []struct {
		name, commonName string
		names            []string
		usages           []x509.ExtKeyUsage
	}{
		{etcdServerPair, "skiff-etcd-server", etcdNames, both},
		{etcdPeerPair, "skiff-etcd-peer", etcdNames, both},
		{etcdClientPair, EtcdClientName, nil, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}},
	}
	for _, l := range leaves {
		if _, err := ca.LoadOrIssue(p.path(l.name+".crt"), p.path(l.name+".key"), l.commonName, l.names, l.usages...); err != nil {
			return p, err
		}
	}
	return p, nil
}

// EmbeddedEtcdClient are the files a client in another process (etcdctl,
// a test) reaches the embedded etcd of dataDir with.
func EmbeddedEtcdClient(dataDir string) EtcdClientFiles {
	return etcdPKI{dir: filepath.Join(dataDir, "server", "tls", "etcd")}.client()
}

func (p etcdPKI) path(name string) string { return filepath.Join(p.dir, name) }

// serverInfo is a listener's TLS with the pair name: client certificates
// of the etcd CA required.
func (p etcdPKI) serverInfo(name string) transport.TLSInfo {
	return transport.TLSInfo{CertFile: p.path(name + ".crt"), KeyFile: p.path(name + ".key"),
		TrustedCAFile: p.path("ca.crt"), ClientCertAuth: true}
}

// client is what a client in another process authenticates with.
func (p etcdPKI) client() EtcdClientFiles {
	return EtcdClientFiles{CAFile: p.path("ca.crt"), CertFile: p.path(etcdClientPair + ".crt"), KeyFile: p.path(etcdClientPair + ".key")}
}
