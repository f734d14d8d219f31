package jointoken

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"strings"
	"testing"
	"time"

	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
)

func testCA(t *testing.T) *x509.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ca"},
		NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

func TestRoundTrip(t *testing.T) {
	ca := testCA(t)
	tok, err := New(ca)
	if err != nil {
		t.Fatal(err)
	}
	s := tok.String()
	if !strings.HasPrefix(s, "K10") || !strings.HasSuffix(s, "::"+tok.ID+"."+tok.Secret) {
		t.Errorf("token %q", s)
	}
	back, err := Parse(s + "\n")
	if err != nil || back != tok {
		t.Errorf("Parse(String()) = %+v, %v; want %+v", back, err, tok)
	}
	if tok.CAHash != CAHash(ca) || CAHash(ca) == CAHash(testCA(t)) || !strings.HasPrefix(tok.CAHash, "sha256:") {
		t.Errorf("CA hash %q: not the CA's own", tok.CAHash)
	}
}

func TestParseErrors(t *testing.T) {
	hash := strings.Repeat("ab", 32)
	for s, want := range map[string]string{
		"abcdef.0123456789abcdef":                  "want K10",
		"K10" + hash + "abcdef.0123456789abcdef":   "want K10",
		"K10abc::abcdef.0123456789abcdef":          "64 hexadecimal",
		"K10" + hash + "::abcdef.tooshort":         "is not a bootstrap token",
		"K10" + hash + "::ABCDEF.0123456789abcdef": "is not a bootstrap token",
	} {
		_, err := Parse(s)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want an error with %q", s, err, want)
		}
		if err != nil && strings.Contains(err.Error(), "0123456789abcdef") {
			t.Errorf("Parse(%q) error shows the secret: %v", s, err)
		}
	}
}

func TestSecret(t *testing.T) {
	exp := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	s := Secret("abcdef", "0123456789abcdef", "for tests", exp, []string{"system:bootstrappers:lab"})
	want := map[string]string{
		"token-id": "abcdef", "token-secret": "0123456789abcdef", "usage-bootstrap-authentication": "true",
		"usage-bootstrap-signing": "true", "description": "for tests", "expiration": "2030-01-02T03:04:05Z",
		"auth-extra-groups": "system:bootstrappers:lab",
	}
	if s.Namespace != "kube-system" || s.Name != "bootstrap-token-abcdef" || s.Type != bootstrapapi.SecretTypeBootstrapToken {
		t.Errorf("secret %s/%s of type %s", s.Namespace, s.Name, s.Type)
	}
	for k, v := range want {
		if s.StringData[k] != v {
			t.Errorf("%s = %q, want %q", k, s.StringData[k], v)
		}
	}
	if _, ok := Secret("abcdef", "0123456789abcdef", "", time.Time{}, nil).StringData["expiration"]; ok {
		t.Error("a token without expiry has an expiration")
	}
}
