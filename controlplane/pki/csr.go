package pki

import (
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
)

// NodeGroup and NodeUserPrefix are a node's identity in its certificates:
// O=system:nodes, CN=system:node:<name>.
const (
	NodeGroup      = "system:nodes"
	NodeUserPrefix = "system:node:"
)

// ParseCSR decodes a PEM certificate request and checks its signature.
func ParseCSR(request []byte) (*x509.CertificateRequest, error) {
	block, _ := pem.Decode(request)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil, errors.New("PEM block type must be CERTIFICATE REQUEST")
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, err
	}
	return req, req.CheckSignature()
}

// CheckNodeClient checks a request for signer
// kubernetes.io/kube-apiserver-client-kubelet: a node's client certificate,
// CN=system:node:<name>, O=system:nodes, no alternative names, for client
// auth.
func CheckNodeClient(req *x509.CertificateRequest, usages []certificatesv1.KeyUsage) error {
	if err := checkNodeSubject(req); err != nil {
		return err
	}
	if len(req.DNSNames)+len(req.IPAddresses)+len(req.EmailAddresses)+len(req.URIs) > 0 {
		return errors.New("a node client certificate has no subject alternative names")
	}
	return checkUsages(usages, certificatesv1.UsageClientAuth)
}

// CheckNodeServing checks a request for signer kubernetes.io/kubelet-serving:
// a node API's serving certificate, CN=system:node:<name>, O=system:nodes,
// DNS names and IP addresses only (one at least), for server auth.
func CheckNodeServing(req *x509.CertificateRequest, usages []certificatesv1.KeyUsage) error {
	if err := checkNodeSubject(req); err != nil {
		return err
	}
	if len(req.EmailAddresses)+len(req.URIs) > 0 {
		return errors.New("a node serving certificate has DNS names and IP addresses only")
	}
	if len(req.DNSNames)+len(req.IPAddresses) == 0 {
		return errors.New("a node serving certificate needs a DNS name or an IP address")
	}
	return checkUsages(usages, certificatesv1.UsageServerAuth)
}

// MastersGroup is the group whose members RBAC cannot restrict.
const MastersGroup = "system:masters"

// CheckAPIServerClient checks a request for signer
// kubernetes.io/kube-apiserver-client: a user's client certificate (any
// subject but the system:masters group), for client auth.
func CheckAPIServerClient(req *x509.CertificateRequest, usages []certificatesv1.KeyUsage) error {
	if slices.Contains(req.Subject.Organization, MastersGroup) {
		return fmt.Errorf("no client certificate of %s is signed for the group %s", certificatesv1.KubeAPIServerClientSignerName, MastersGroup)
	}
	return checkUsages(usages, certificatesv1.UsageClientAuth)
}

func checkNodeSubject(req *x509.CertificateRequest) error {
	if !slices.Equal(req.Subject.Organization, []string{NodeGroup}) {
		return fmt.Errorf("organization must be [%s], not %v", NodeGroup, req.Subject.Organization)
	}
	if name, ok := strings.CutPrefix(req.Subject.CommonName, NodeUserPrefix); !ok || name == "" {
		return fmt.Errorf("common name must be %s<node name>, not %q", NodeUserPrefix, req.Subject.CommonName)
	}
	return nil
}

// checkUsages wants need among usages and nothing but it, digital
// signature and key encipherment.
func checkUsages(usages []certificatesv1.KeyUsage, need certificatesv1.KeyUsage) error {
	allowed := []certificatesv1.KeyUsage{need, certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment}
	for _, u := range usages {
		if !slices.Contains(allowed, u) {
			return fmt.Errorf("usage %q is not allowed, only %v", u, allowed)
		}
	}
	if !slices.Contains(usages, need) {
		return fmt.Errorf("usage %q is required", need)
	}
	return nil
}

// backdate is how far before now a signed certificate starts, for the
// clocks of other machines: 5 minutes, or a tenth of a shorter lifetime
// (whose renewal at 70–90 % of it must not be due at once).
func backdate(validity time.Duration) time.Duration { return min(5*time.Minute, validity/10) }

// SignRequest signs req's public key as a certificate of its subject and
// alternative names, with usages, valid for validity (at most until the
// CA expires). req must have been checked.
func (ca *CA) SignRequest(req *x509.CertificateRequest, usages []certificatesv1.KeyUsage, validity time.Duration) ([]byte, error) {
	now := time.Now()
	tmpl := &x509.Certificate{
		Subject: req.Subject, DNSNames: req.DNSNames, IPAddresses: req.IPAddresses,
		NotBefore: now.Add(-backdate(validity)), NotAfter: now.Add(validity),
	}
	if tmpl.NotAfter.After(ca.Cert.NotAfter) {
		tmpl.NotAfter = ca.Cert.NotAfter
	}
	for _, u := range usages {
		switch u {
		case certificatesv1.UsageDigitalSignature:
			tmpl.KeyUsage |= x509.KeyUsageDigitalSignature
		case certificatesv1.UsageKeyEncipherment:
			tmpl.KeyUsage |= x509.KeyUsageKeyEncipherment
		case certificatesv1.UsageClientAuth:
			tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
		case certificatesv1.UsageServerAuth:
			tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
		}
	}
	der, err := createCertificate(tmpl, ca.Cert, req.PublicKey, ca.key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}

// createCertificate signs tmpl, with a fresh serial number, for pub.
func createCertificate(tmpl, parent *x509.Certificate, pub crypto.PublicKey, signer crypto.Signer) ([]byte, error) {
	serial, err := rand.Int(rand.Reader, serialLimit)
	if err != nil {
		return nil, err
	}
	tmpl.SerialNumber = serial
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, pub, signer)
	if err != nil {
		return nil, fmt.Errorf("create certificate: %w", err)
	}
	return der, nil
}
