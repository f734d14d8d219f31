package controlplane

import (
	"crypto/x509"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/skiff-lab/skiff/controlplane/etcdsnapshot"
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
func ensureEtcdPKI(dir, peerHost string) (etcdPKI, error) {
	p := etcdPKI{dir: dir}
	ca, err := pki.LoadOrCreateCA(dir, "skiff-etcd-ca")
	if err != nil {
		return p, err
	}
	both := []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	names := etcdNames
	if peerHost != "" {
		names = append(slices.Clip(etcdNames), peerHost) // the other members reach it there
	}
	// etcd's gateway dials its own listener with the server certificate,
	// and a peer dials the others with its peer certificate: both serve
	// and are clients.
	leaves := []struct {
		name, commonName string
		names            []string
		usages           []x509.ExtKeyUsage
	}{
		{etcdServerPair, "skiff-etcd-server", names, both},
		{etcdPeerPair, "skiff-etcd-peer", names, both},
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

// LocalEtcdClient is a client of the embedded etcd of the server whose
// data dir is dataDir, through its client socket, with the files the
// server keeps for clients in other processes (`skiff etcd`).
func LocalEtcdClient(dataDir string) (*clientv3.Client, error) {
	tlsCfg, err := EmbeddedEtcdClient(dataDir).TLSConfig()
	if err != nil {
		return nil, fmt.Errorf("the etcd client certificate of %s: %w", dataDir, err)
	}
	return clientv3.New(clientv3.Config{
		Endpoints:   []string{"unixs://" + clientSocket(filepath.Join(dataDir, "server"))},
		TLS:         tlsCfg,
		DialTimeout: 10 * time.Second,
		Logger:      zap.NewNop(),
	})
}

// RestoreEtcdSnapshot makes the etcd data of the server of dataDir from
// the snapshot at file: one member, this server's, on loopback peerPort
// (a clustered server moves it to its address when it starts). The
// server must be stopped and its etcd data moved away.
func RestoreEtcdSnapshot(dataDir, file string, peerPort int) error {
	dir := filepath.Join(dataDir, "server")
	if err := secureDataDir(dataDir); err != nil {
		return err
	}
	etcdDir := filepath.Join(dir, "etcd")
	name, err := memberName(dir, etcdDir, "")
	if err != nil {
		return err
	}
	u := loopbackURL(peerPort)
	return etcdsnapshot.Restore(file, etcdDir, etcdsnapshot.Member{Name: name, PeerURL: u.String()})
}
