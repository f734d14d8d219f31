package jointoken

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"
	bootstrapsecrets "k8s.io/cluster-bootstrap/util/secrets"
)

// ParseCA reads the first certificate of a PEM bundle (a kubeconfig's
// certificate-authority-data).
func ParseCA(pemData []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(pemData)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("no PEM certificate in the CA data")
	}
	return x509.ParseCertificate(block.Bytes)
}

// Create makes a new bootstrap token through the API, valid for ttl (0:
// until deleted), and returns its join token for ca.
func Create(ctx context.Context, c kubernetes.Interface, ca *x509.Certificate, ttl time.Duration, description string, groups []string) (Token, error) {
	for _, g := range groups {
		if err := bootstraputil.ValidateBootstrapGroupName(g); err != nil {
			return Token{}, err
		}
	}
	tok, err := New(ca)
	if err != nil {
		return Token{}, err
	}
	var expires time.Time
	if ttl > 0 {
		expires = time.Now().Add(ttl)
	}
	_, err = c.CoreV1().Secrets(metav1.NamespaceSystem).Create(ctx, Secret(tok.ID, tok.Secret, description, expires, groups), metav1.CreateOptions{})
	return tok, err
}

// Info is what `skiff token list` shows of a token (never its secret).
type Info struct {
	ID          string
	Expires     time.Time // zero: never
	Usages      []string
	Description string
	Groups      []string
}

// List returns the bootstrap tokens, oldest first.
func List(ctx context.Context, c kubernetes.Interface) ([]Info, error) {
	list, err := c.CoreV1().Secrets(metav1.NamespaceSystem).List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("type", string(bootstrapapi.SecretTypeBootstrapToken)).String()})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(list.Items, func(a, b corev1.Secret) int { return a.CreationTimestamp.Compare(b.CreationTimestamp.Time) })
	var out []Info
	for i := range list.Items {
		s := &list.Items[i]
		info := Info{ID: bootstrapsecrets.GetData(s, bootstrapapi.BootstrapTokenIDKey), Description: bootstrapsecrets.GetData(s, bootstrapapi.BootstrapTokenDescriptionKey)}
		if exp := bootstrapsecrets.GetData(s, bootstrapapi.BootstrapTokenExpirationKey); exp != "" {
			info.Expires, _ = time.Parse(time.RFC3339, exp)
		}
		for k, v := range s.Data {
			if u, ok := strings.CutPrefix(k, bootstrapapi.BootstrapTokenUsagePrefix); ok && string(v) == "true" {
				info.Usages = append(info.Usages, u)
			}
		}
		slices.Sort(info.Usages)
		if g := bootstrapsecrets.GetData(s, bootstrapapi.BootstrapTokenExtraGroupsKey); g != "" {
			info.Groups = strings.Split(g, ",")
		}
		out = append(out, info)
	}
	return out, nil
}

// Delete deletes a bootstrap token, named by its id, its id.secret or its
// join token, and returns its id.
func Delete(ctx context.Context, c kubernetes.Interface, token string) (string, error) {
	id := token
	if t, err := Parse(token); err == nil {
		id = t.ID
	} else if bootstraputil.IsValidBootstrapToken(token) {
		id, _, _ = strings.Cut(token, ".")
	}
	if !bootstraputil.IsValidBootstrapTokenID(id) {
		return "", fmt.Errorf("%q is not a token id (6 of a-z0-9)", id)
	}
	return id, c.CoreV1().Secrets(metav1.NamespaceSystem).Delete(ctx, bootstraputil.BootstrapTokenSecretName(id), metav1.DeleteOptions{})
}
