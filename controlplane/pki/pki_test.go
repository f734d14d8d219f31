package pki

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
)

func TestCAIsReusedAcrossStarts(t *testing.T) {
	dir := t.TempDir()
	first, err := LoadOrCreateCA(dir, "test-ca")
	if err != nil {
		t.Fatal(err)
	}
	second, err := LoadOrCreateCA(dir, "test-ca")
	if err != nil {
		t.Fatal(err)
	}
	if !first.Cert.Equal(second.Cert) || !second.Cert.IsCA {
		t.Fatal("a second start made a new CA")
	}
}

func TestServingCertReissuedWhenNamesChange(t *testing.T) {
	dir := t.TempDir()
	ca, err := LoadOrCreateCA(dir, "test-ca")
	if err != nil {
		t.Fatal(err)
	}
	crt, key := filepath.Join(dir, "s.crt"), filepath.Join(dir, "s.key")
	a, err := ca.LoadOrIssueServing(crt, key, "server", []string{"localhost", "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	same, _ := ca.LoadOrIssueServing(crt, key, "server", []string{"127.0.0.1"})
	if !same.Leaf.Equal(a.Leaf) {
		t.Error("a serving cert that covers the names was not reused")
	}
	wider, _ := ca.LoadOrIssueServing(crt, key, "server", []string{"localhost", "10.0.0.7"})
	if wider.Leaf.Equal(a.Leaf) || len(wider.Leaf.IPAddresses) != 1 || wider.Leaf.IPAddresses[0].String() != "10.0.0.7" {
		t.Errorf("a new name did not reissue the cert: %v", wider.Leaf.IPAddresses)
	}
	if _, err := wider.Leaf.Verify(x509.VerifyOptions{Roots: ca.Pool(), DNSName: "localhost"}); err != nil {
		t.Errorf("serving cert does not verify against the CA: %v", err)
	}
}

func TestKubeconfigCarriesAClientCertOfTheCA(t *testing.T) {
	dir := t.TempDir()
	ca, err := LoadOrCreateCA(dir, "test-ca")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "admin.kubeconfig")
	if err := ca.WriteKubeconfig(path, 0o640, "https://127.0.0.1:6443", "admin", []string{"system:masters"}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("kubeconfig mode: %v %v, want 0640", fi.Mode(), err)
	}
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	auth := cfg.AuthInfos[cfg.Contexts[cfg.CurrentContext].AuthInfo]
	pair, err := parsePair(auth.ClientCertificateData, auth.ClientKeyData)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pair.Verify(x509.VerifyOptions{Roots: ca.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Fatalf("client cert: %v", err)
	}
	if pair.Subject.CommonName != "admin" || pair.Subject.Organization[0] != "system:masters" {
		t.Errorf("subject %v", pair.Subject)
	}
}
func parsePair(certPEM, keyPEM []byte) (*x509.Certificate, error) {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	return pair.Leaf, nil
}
