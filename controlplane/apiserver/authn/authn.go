// Package authn tells who a request to the API server comes from, with
// kube-apiserver's authenticators from k8s.io/apiserver: client
// certificates, the control plane's own tokens, service account tokens,
// bootstrap tokens and a --token-auth-file; and whom it asks to act as
// (impersonation).
package authn

import (
	"context"
	"crypto/x509"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/skiff-lab/skiff/controlplane/satoken"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/group"
	"k8s.io/apiserver/pkg/authentication/request/bearertoken"
	"k8s.io/apiserver/pkg/authentication/request/union"
	x509request "k8s.io/apiserver/pkg/authentication/request/x509"
	tokencache "k8s.io/apiserver/pkg/authentication/token/cache"
	"k8s.io/apiserver/pkg/authentication/token/tokenfile"
	"k8s.io/apiserver/pkg/authentication/user"
)

// User is a client known by a bearer token given in Config.Tokens (the
// control plane's own loopback users).
type User struct {
	Name   string
	UID    string
	Groups []string
}

// Config is what the authenticators trust.
type Config struct {
	// CA verifies client certificates; nil: none are accepted.
	CA *x509.CertPool
	// Tokens are the bearer tokens of the control plane's own users.
	Tokens map[string]User
	// TokenAuthFile is kube-apiserver's --token-auth-file CSV, if any.
	TokenAuthFile string
	// ServiceAccounts verifies service account tokens; nil: none are
	// accepted.
	ServiceAccounts *satoken.Issuer
	// TokenAuthenticators take bearer tokens after the others (a user they
	// admit is cached for 10 s, as kube-apiserver caches them).
	TokenAuthenticators []authenticator.Token
	// Lookup reads the objects that service account and bootstrap tokens
	// name; nil: neither kind of token is accepted.
	Lookup Lookup
}

// Lookup reads the stored object of kind (Secret, ServiceAccount, Pod or
// Node) called name in namespace (none for a Node); a missing one is a
// NotFound error of k8s.io/apimachinery's errors.
type Lookup func(ctx context.Context, kind, namespace, name string) (runtime.Object, error)

// New is kube-apiserver's chain, from k8s.io/apiserver: a client
// certificate signed by the cluster CA (user = CN, groups = O), else a
// bearer token of Config.Tokens, a service account token, a bootstrap
// token or one of the --token-auth-file CSV; every user it admits is also
// in system:authenticated.
func New(cfg Config) (authenticator.Request, error) {
	var chain []authenticator.Request
	if cfg.CA != nil {
		opts := x509request.DefaultVerifyOptions()
		opts.Roots = cfg.CA
		chain = append(chain, &certCache{next: x509request.New(opts, x509request.CommonNameUserConversion)})
	}
	tokens := map[string]*user.DefaultInfo{}
	for token, u := range cfg.Tokens {
		tokens[token] = &user.DefaultInfo{Name: u.Name, UID: u.UID, Groups: slices.Clone(u.Groups)}
	}
	chain = append(chain, bearertoken.New(tokenfile.New(tokens)))
	if cfg.Lookup != nil {
		if cfg.ServiceAccounts != nil {
			sa := &serviceAccountTokens{issuer: cfg.ServiceAccounts, lookup: cfg.Lookup}
			chain = append(chain, bearertoken.New(tokencache.New(sa, false, saTokenCacheTTL, 0)))
		}
		chain = append(chain, bearertoken.New(&bootstrapTokens{lookup: cfg.Lookup, now: time.Now}))
	}
	if cfg.TokenAuthFile != "" {
		file, err := tokenfile.NewCSV(cfg.TokenAuthFile)
		if err != nil {
			return nil, fmt.Errorf("--token-auth-file: %w", err)
		}
		chain = append(chain, bearertoken.New(file))
	}
	for _, t := range cfg.TokenAuthenticators {
		chain = append(chain, bearertoken.New(tokencache.New(t, true, tokenCacheTTL, 0)))
	}
	return group.NewAuthenticatedGroupAdder(union.New(chain...)), nil
}

// tokenCacheTTL is how long a user Config.TokenAuthenticators admit is
// kept (kube-apiserver's default; refusals are not kept).
const tokenCacheTTL = 10 * time.Second

// saTokenCacheTTL is how long a verified service account token is taken
// without looking again at its service account and bound objects.
const saTokenCacheTTL = 10 * time.Second

// maxCachedCerts bounds the verified-certificate cache.
const maxCachedCerts = 4096

// certCache remembers the client certificates next has verified, so that
// a client's every request does not pay for a signature check (the x509
// authenticator verifies the chain each time). It is safe for concurrent
// use.
type certCache struct {
	next  authenticator.Request
	mu    sync.Mutex
	users map[string]*authenticator.Response // by the leaf's DER bytes
}

func (c *certCache) AuthenticateRequest(r *http.Request) (*authenticator.Response, bool, error) {
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return nil, false, nil
	}
	leaf := r.TLS.PeerCertificates[0]
	if time.Now().After(leaf.NotAfter) {
		return nil, false, x509.CertificateInvalidError{Cert: leaf, Reason: x509.Expired}
	}
	c.mu.Lock()
	resp, ok := c.users[string(leaf.Raw)]
	c.mu.Unlock()
	if ok {
		return resp, true, nil
	}
	resp, ok, err := c.next.AuthenticateRequest(r)
	if ok {
		c.mu.Lock()
		if c.users == nil || len(c.users) >= maxCachedCerts {
			c.users = map[string]*authenticator.Response{}
		}
		c.users[string(leaf.Raw)] = resp
		c.mu.Unlock()
	}
	return resp, ok, err
}
