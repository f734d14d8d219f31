// Package jointoken is what a node joins a cluster with: the hash of the
// cluster CA, by which the node checks the server before trusting it
// (kubeadm's --discovery-token-ca-cert-hash: SHA-256 of the CA's public key
// info), and a bootstrap token, by which the server knows the node (a
// kube-system Secret of type bootstrap.kubernetes.io/token). Written
// K10<hex of the hash>::<token id>.<token secret>, as k3s writes its
// tokens.
package jointoken

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"
)

// ServersGroup is the extra group of server tokens: a server that holds
// one may join the cluster as a server (and get the cluster's keys), not
// only as a node.
const ServersGroup = "system:bootstrappers:skiff:servers"

const (
	prefix     = "K10"
	hashPrefix = "sha256:"
)

// Token is a join token.
type Token struct {
	CAHash     string // "sha256:<hex>"
	ID, Secret string
}

// CAHash is kubeadm's discovery hash of a CA certificate: "sha256:" and the
// hex SHA-256 of its SubjectPublicKeyInfo.
func CAHash(ca *x509.Certificate) string {
	sum := sha256.Sum256(ca.RawSubjectPublicKeyInfo)
	return hashPrefix + hex.EncodeToString(sum[:])
}

// New returns a token with a fresh random bootstrap token for ca.
func New(ca *x509.Certificate) (Token, error) {
	bt, err := bootstraputil.GenerateBootstrapToken()
	if err != nil {
		return Token{}, err
	}
	id, secret, _ := strings.Cut(bt, ".")
	return Token{CAHash: CAHash(ca), ID: id, Secret: secret}, nil
}

// String is the token as written and given to `skiff agent --token`.
func (t Token) String() string {
	return prefix + strings.TrimPrefix(t.CAHash, hashPrefix) + "::" + t.Bearer()
}

// Bearer is the bootstrap token the node authenticates with.
func (t Token) Bearer() string { return bootstraputil.TokenFromIDAndSecret(t.ID, t.Secret) }

// Parse reads a join token.
func Parse(s string) (Token, error) {
	s = strings.TrimSpace(s)
	hash, bearer, ok := strings.Cut(strings.TrimPrefix(s, prefix), "::")
	if !strings.HasPrefix(s, prefix) || !ok {
		return Token{}, fmt.Errorf("join token: want K10<CA hash>::<id>.<secret>")
	}
	if b, err := hex.DecodeString(hash); err != nil || len(b) != sha256.Size {
		return Token{}, fmt.Errorf("join token: the CA hash is not 64 hexadecimal digits")
	}
	if !bootstraputil.IsValidBootstrapToken(bearer) {
		return Token{}, fmt.Errorf("join token: %q is not a bootstrap token (<6 of a-z0-9>.<16 of a-z0-9>)", redact(bearer))
	}
	id, secret, _ := strings.Cut(bearer, ".")
	return Token{CAHash: hashPrefix + strings.ToLower(hash), ID: id, Secret: secret}, nil
}

// redact keeps a token's id and hides its secret.
func redact(bearer string) string {
	id, _, _ := strings.Cut(bearer, ".")
	return id + ".<secret>"
}

// Secret is the bootstrap token Secret of id and secret, for
// authentication and signing, expiring at expires unless it is zero, in
// the extra groups besides system:bootstrappers.
func Secret(id, secret, description string, expires time.Time, groups []string) *corev1.Secret {
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: bootstraputil.BootstrapTokenSecretName(id)},
		Type:       bootstrapapi.SecretTypeBootstrapToken,
		StringData: map[string]string{
			bootstrapapi.BootstrapTokenIDKey:               id,
			bootstrapapi.BootstrapTokenSecretKey:           secret,
			bootstrapapi.BootstrapTokenUsageAuthentication: "true",
			bootstrapapi.BootstrapTokenUsageSigningKey:     "true",
		},
	}
	if description != "" {
		s.StringData[bootstrapapi.BootstrapTokenDescriptionKey] = description
	}
	if !expires.IsZero() {
		s.StringData[bootstrapapi.BootstrapTokenExpirationKey] = expires.UTC().Format(time.RFC3339)
	}
	if len(groups) > 0 {
		s.StringData[bootstrapapi.BootstrapTokenExtraGroupsKey] = strings.Join(groups, ",")
	}
	return s
}
