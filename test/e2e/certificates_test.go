package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"strings"
	"testing"
)

// csrYAML is a CertificateSigningRequest for an example signer (the
// server signs for none but the nodes' signers, so it stays unissued).
func csrYAML(t *testing.T, name string) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: name, Organization: []string{"e2e"}}}, key)
	if err != nil {
		t.Fatal(err)
	}
	request := base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}))
	return fmt.Sprintf(`apiVersion: certificates.k8s.io/v1
kind: CertificateSigningRequest
metadata:
  name: %s
spec:
  request: %s
  signerName: example.com/e2e
  expirationSeconds: 86400
  usages: [digital signature, client auth]
`, name, request)
}

// TestKubectlCertificates drives the CSR API as an admin does: kubectl
// create, get (kubectl's columns), describe, certificate approve and deny.
func TestKubectlCertificates(t *testing.T) {
	c := startCluster(t)
	for _, name := range []string{"approve-me", "deny-me"} {
		c.mustIn(csrYAML(t, name), "create", "-f", "-")
	}
	header, rows := columns(c.must("get", "csr"))
	if strings.Join(header, "|") != "NAME|AGE|SIGNERNAME|REQUESTOR|REQUESTEDDURATION|CONDITION" || len(rows) != 2 ||
		rows[0][2] != "example.com/e2e" || rows[0][3] != "skiff-admin" || rows[0][4] != "24h" || rows[0][5] != "Pending" {
		t.Errorf("get csr: %v %v", header, rows)
	}
	expectContains(t, "certificate approve", c.must("certificate", "approve", "approve-me"), "approved")
	expectContains(t, "certificate deny", c.must("certificate", "deny", "deny-me"), "denied")
	_, rows = columns(c.must("get", "csr"))
	if len(rows) != 2 || rows[0][0] != "approve-me" || rows[0][5] != "Approved" || rows[1][5] != "Denied" {
		t.Errorf("get csr after approve and deny: %v", rows)
	}
	expectContains(t, "describe csr", c.must("describe", "csr", "approve-me"),
		"Signer:", "example.com/e2e", "Requesting User:", "skiff-admin", "Common Name:", "approve-me", "Approved")
}
