// Package pki creates and reuses the cluster's certificate authority and the
// certificates signed by it. Files are written once and read back on later
// starts, so a restarted server keeps its identity.
package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/containerd/continuity"
)

// serialLimit bounds serial numbers: 126 random bits.
var serialLimit = new(big.Int).Lsh(big.NewInt(1), 126)

const (
	caValidity   = 10 * 365 * 24 * time.Hour
	leafValidity = 365 * 24 * time.Hour
)

// CA is a certificate authority that can sign certificates.
type CA struct {
	Cert    *x509.Certificate
	CertPEM []byte
	key     crypto.Signer
}

// LoadOrCreateCA reads ca.crt and ca.key from dir, creating them first if
// they do not exist.
func LoadOrCreateCA(dir, commonName string) (*CA, error) {
	certPath, keyPath := filepath.Join(dir, "ca.crt"), filepath.Join(dir, "ca.key")
	if pair, err := tls.LoadX509KeyPair(certPath, keyPath); err == nil {
		certPEM, err := os.ReadFile(certPath)
		if err != nil {
			return nil, err
		}
		return &CA{Cert: pair.Leaf, CertPEM: certPEM, key: pair.PrivateKey.(crypto.Signer)}, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("load ca: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(caValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	ca := &CA{key: key}
	certPEM, keyPEM, cert, err := sign(tmpl, key, nil, key)
	if err != nil {
		return nil, err
	}
	ca.Cert, ca.CertPEM = cert, certPEM
	return ca, writePair(certPath, keyPath, certPEM, keyPEM)
}

// Pool returns a cert pool holding only this CA.
func (ca *CA) Pool() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	return pool
}

// Issue signs a new certificate for usages (server, client or both). Names
// that parse as IPs become IP SANs, the rest DNS SANs. orgs become the
// subject's organizations (a client's groups).
func (ca *CA) Issue(commonName string, orgs, names []string, usages ...x509.ExtKeyUsage) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: commonName, Organization: orgs},
		NotBefore:   time.Now().Add(-time.Hour),
		NotAfter:    time.Now().Add(leafValidity),
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: usages,
	}
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	certPEM, keyPEM, _, err = sign(tmpl, key, ca.Cert, ca.key)
	return certPEM, keyPEM, err
}

// LoadOrIssueServing returns the serving key pair at certPath/keyPath,
// issuing a new one when it is missing, expires within a month, or does not
// cover every name in names.
func (ca *CA) LoadOrIssueServing(certPath, keyPath, commonName string, names []string) (tls.Certificate, error) {
	return ca.LoadOrIssue(certPath, keyPath, commonName, names, x509.ExtKeyUsageServerAuth)
}

// LoadOrIssue returns the key pair at certPath/keyPath, issuing a new one
// (key 0600, in a 0700 directory) when it is missing, was not signed by
// this CA, expires within a month, or lacks one of names or usages.
func (ca *CA) LoadOrIssue(certPath, keyPath, commonName string, names []string, usages ...x509.ExtKeyUsage) (tls.Certificate, error) {
	if pair, err := tls.LoadX509KeyPair(certPath, keyPath); err == nil && covers(pair.Leaf, names) &&
		hasUsages(pair.Leaf, usages) && time.Until(pair.Leaf.NotAfter) > 30*24*time.Hour &&
		pair.Leaf.CheckSignatureFrom(ca.Cert) == nil {
		return pair, nil
	}
	certPEM, keyPEM, err := ca.Issue(commonName, nil, names, usages...)
	if err != nil {
		return tls.Certificate{}, err
	}
	if err := writePair(certPath, keyPath, certPEM, keyPEM); err != nil {
		return tls.Certificate{}, err
	}
	return tls.X509KeyPair(certPEM, keyPEM)
}

func hasUsages(cert *x509.Certificate, usages []x509.ExtKeyUsage) bool {
	for _, u := range usages {
		if !slices.Contains(cert.ExtKeyUsage, u) {
			return false
		}
	}
	return true
}

func covers(cert *x509.Certificate, names []string) bool {
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			if !slices.ContainsFunc(cert.IPAddresses, ip.Equal) {
				return false
			}
		} else if !slices.Contains(cert.DNSNames, n) {
			return false
		}
	}
	return true
}

func sign(tmpl *x509.Certificate, key *ecdsa.PrivateKey, parent *x509.Certificate, signer crypto.Signer) (certPEM, keyPEM []byte, cert *x509.Certificate, err error) {
	if parent == nil {
		parent = tmpl
	}
	der, err := createCertificate(tmpl, parent, key.Public(), signer)
	if err != nil {
		return nil, nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, nil, err
	}
	cert, err = x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, nil, err
	}
	certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM = pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	return certPEM, keyPEM, cert, nil
}

func writePair(certPath, keyPath string, certPEM, keyPEM []byte) error {
	if err := os.MkdirAll(filepath.Dir(certPath), 0o700); err != nil {
		return err
	}
	if err := continuity.AtomicWriteFile(keyPath, keyPEM, 0o600); err != nil {
		return err
	}
	return continuity.AtomicWriteFile(certPath, certPEM, 0o644)
}
