// Package satoken issues and verifies service account tokens as
// kube-apiserver does: JWTs signed (RS256) with the server's service
// account key, naming the issuer, the audiences, the service account and,
// for bound tokens, the pod, secret or node they die with (the
// "kubernetes.io" claim); and the OpenID discovery document and key set
// that let others verify them.
package satoken

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/containerd/continuity"
	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/google/uuid"
)

// DefaultIssuer is kubeadm's --service-account-issuer.
const DefaultIssuer = "https://kubernetes.default.svc.cluster.local"

// JWKSPath is where the API server serves the public keys.
const JWKSPath = "/openid/v1/jwks"

// DiscoveryPath is where the API server serves the OpenID provider
// configuration.
const DiscoveryPath = "/.well-known/openid-configuration"

// Ref names an object a token is bound to.
type Ref struct {
	Name string `json:"name,omitempty"`
	UID  string `json:"uid,omitempty"`
}

// Kubernetes is the "kubernetes.io" claim.
type Kubernetes struct {
	Namespace      string           `json:"namespace,omitempty"`
	ServiceAccount Ref              `json:"serviceaccount,omitempty"`
	Pod            *Ref             `json:"pod,omitempty"`
	Secret         *Ref             `json:"secret,omitempty"`
	Node           *Ref             `json:"node,omitempty"`
	WarnAfter      *jwt.NumericDate `json:"warnafter,omitempty"`
}

// Claims are a token's claims: the registered ones and Kubernetes'.
type Claims struct {
	jwt.Claims
	Kubernetes Kubernetes `json:"kubernetes.io"`
}

// Issuer signs and verifies tokens with one key.
type Issuer struct {
	url       string
	audiences []string // the API server's own (--api-audiences)
	key       *rsa.PrivateKey
	keyID     string
	signer    jose.Signer
}

// New returns the issuer url signing with key; tokens the API server
// accepts must be meant for one of audiences (default: the issuer).
func New(url string, key *rsa.PrivateKey, audiences []string) (*Issuer, error) {
	if !strings.HasPrefix(url, "https://") {
		return nil, fmt.Errorf("--service-account-issuer %q: want an https:// URL", url)
	}
	if len(audiences) == 0 {
		audiences = []string{url}
	}
	kid, err := keyID(&key.PublicKey)
	if err != nil {
		return nil, err
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", kid))
	if err != nil {
		return nil, err
	}
	return &Issuer{url: url, audiences: audiences, key: key, keyID: kid, signer: signer}, nil
}

// Audiences are the audiences the API server accepts.
func (i *Issuer) Audiences() []string { return i.audiences }

// keyID is kube-apiserver's key ID: the unpadded base64url SHA-256 of the
// public key's DER form.
func keyID(pub *rsa.PublicKey) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(der)
	return base64.RawURLEncoding.EncodeToString(sum[:]), nil
}

// Issue signs a token for k, meant for audiences (the API server's when
// empty), valid from now for ttl.
func (i *Issuer) Issue(k Kubernetes, audiences []string, now time.Time, ttl time.Duration) (string, error) {
	if len(audiences) == 0 {
		audiences = i.audiences
	}
	c := Claims{Claims: jwt.Claims{
		Issuer:    i.url,
		Subject:   "system:serviceaccount:" + k.Namespace + ":" + k.ServiceAccount.Name,
		Audience:  audiences,
		Expiry:    jwt.NewNumericDate(now.Add(ttl)),
		NotBefore: jwt.NewNumericDate(now),
		IssuedAt:  jwt.NewNumericDate(now),
		ID:        uuid.NewString(),
	}, Kubernetes: k}
	return jwt.Signed(i.signer).Claims(c).Serialize()
}

// ErrNotOurs says a token is not a JWT of this issuer: another
// authenticator may know it.
var ErrNotOurs = errors.New("not a service account token of this issuer")

// Verify checks a token's signature, issuer, audience and times, and
// returns its claims. A bearer token that is no JWT, or one of another
// issuer, is ErrNotOurs.
func (i *Issuer) Verify(token string, now time.Time) (*Claims, error) {
	if strings.Count(token, ".") != 2 {
		return nil, ErrNotOurs
	}
	tok, err := jwt.ParseSigned(token, []jose.SignatureAlgorithm{jose.RS256})
	if err != nil {
		return nil, ErrNotOurs
	}
	var unverified jwt.Claims
	if err := tok.UnsafeClaimsWithoutVerification(&unverified); err != nil || unverified.Issuer != i.url {
		return nil, ErrNotOurs
	}
	var c Claims
	if err := tok.Claims(&i.key.PublicKey, &c); err != nil {
		return nil, fmt.Errorf("service account token: %w", err)
	}
	err = c.Claims.Validate(jwt.Expected{Issuer: i.url, AnyAudience: i.audiences, Time: now})
	if err != nil {
		return nil, fmt.Errorf("service account token: %w", err)
	}
	if c.Kubernetes.Namespace == "" || c.Kubernetes.ServiceAccount.Name == "" {
		return nil, errors.New("service account token: no service account in its claims")
	}
	return &c, nil
}

// Discovery is the OpenID provider configuration, as kube-apiserver
// serves it at DiscoveryPath.
func (i *Issuer) Discovery() []byte {
	doc, _ := json.Marshal(map[string]any{
		"issuer":                                i.url,
		"jwks_uri":                              i.url + JWKSPath,
		"response_types_supported":              []string{"id_token"},
		"subject_types_supported":               []string{"public"},
		"id_token_signing_alg_values_supported": []string{string(jose.RS256)},
	})
	return doc
}

// JWKS is the key set that verifies the issuer's tokens.
func (i *Issuer) JWKS() []byte {
	set := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &i.key.PublicKey, KeyID: i.keyID,
		Algorithm: string(jose.RS256), Use: "sig"}}}
	doc, _ := json.Marshal(set)
	return doc
}

// keyBits is the size of a new service account key (kubeadm's).
const keyBits = 2048

// LoadOrCreateKey reads the RSA key at path (PEM, PKCS#1 or PKCS#8), or
// makes one there (mode 0600) when there is none.
func LoadOrCreateKey(path string) (*rsa.PrivateKey, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return createKey(path)
	}
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, fmt.Errorf("%s: no PEM block", path)
	}
	if key, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
		return key, nil
	}
	parsed, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	key, ok := parsed.(*rsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("%s: not an RSA key", path)
	}
	return key, nil
}

func createKey(path string) (*rsa.PrivateKey, error) {
	key, err := rsa.GenerateKey(rand.Reader, keyBits)
	if err != nil {
		return nil, err
	}
	data := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	return key, continuity.AtomicWriteFile(path, data, 0o600)
}
