package apiserver

import (
	"context"
	"crypto/x509"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/skiff-lab/skiff/controlplane/apiserver/registry"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/group"
	"k8s.io/apiserver/pkg/authentication/request/bearertoken"
	"k8s.io/apiserver/pkg/authentication/request/union"
	x509request "k8s.io/apiserver/pkg/authentication/request/x509"
	tokencache "k8s.io/apiserver/pkg/authentication/token/cache"
	"k8s.io/apiserver/pkg/authentication/token/tokenfile"
	"k8s.io/apiserver/pkg/authentication/user"
	genericrequest "k8s.io/apiserver/pkg/endpoints/request"
)

// User is a client known by a bearer token given in Config.Tokens (the
// control plane's own loopback users).
type User struct {
	Name   string
	UID    string
	Groups []string
}

// UserFrom returns the user a request was authenticated as.
func UserFrom(ctx context.Context) (user.Info, bool) { return genericrequest.UserFrom(ctx) }

// anonymousPaths answer requests without credentials when the server does
// not authorize (with an authorizer, it decides what system:anonymous may
// see: system:public-info-viewer gives these).
var anonymousPaths = map[string]bool{"/healthz": true, "/livez": true, "/readyz": true, "/version": true}

// publicPath answers anyone, anonymous requests or not: the cluster CA,
// which joining nodes fetch before they can trust the server (and check
// against the hash their token carries).
const publicPath = "/cacerts"

// anonymous is who an unauthenticated request is, as kube-apiserver's
// --anonymous-auth has it.
var anonymous = &user.DefaultInfo{Name: user.Anonymous, Groups: []string{user.AllUnauthenticated}}

// newAuthenticator is kube-apiserver's chain, from k8s.io/apiserver: a
// client certificate signed by the cluster CA (user = CN, groups = O),
// else a bearer token of Config.Tokens, of the --token-auth-file CSV or a
// bootstrap token (bootstraptoken.go);
// every user it admits is also in system:authenticated.
func newAuthenticator(cfg Config, secrets *registry.Resource, saTokens authenticator.Token) (authenticator.Request, error) {
	var chain []authenticator.Request
	if cfg.CA != nil {
		opts := x509request.DefaultVerifyOptions()
		opts.Roots = cfg.CA.Pool()
		chain = append(chain, &certCache{next: x509request.New(opts, x509request.CommonNameUserConversion)})
	}
	tokens := map[string]*user.DefaultInfo{}
	for token, u := range cfg.Tokens {
		tokens[token] = &user.DefaultInfo{Name: u.Name, UID: u.UID, Groups: slices.Clone(u.Groups)}
	}
	chain = append(chain, bearertoken.New(tokenfile.New(tokens)))
	if saTokens != nil {
		chain = append(chain, bearertoken.New(tokencache.New(saTokens, false, saTokenCacheTTL, 0)))
	}
	if cfg.Store != nil {
		chain = append(chain, bearertoken.New(&bootstrapTokens{store: cfg.Store, secrets: secrets, now: time.Now}))
	}
	if cfg.TokenAuthFile != "" {
		file, err := tokenfile.NewCSV(cfg.TokenAuthFile)
		if err != nil {
			return nil, fmt.Errorf("--token-auth-file: %w", err)
		}
		chain = append(chain, bearertoken.New(file))
	}
	return group.NewAuthenticatedGroupAdder(union.New(chain...)), nil
}

// authenticate puts the request's user in its context. Credentials no
// authenticator accepts get 401. A request without any is
// system:anonymous, for the authorizer to decide, when the server
// authorizes and allows anonymous requests; else it gets 401, but on the
// public path and (anonymous requests allowed) the anonymous paths.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		resp, ok, err := s.authn.AuthenticateRequest(r)
		switch {
		case ok:
			next.ServeHTTP(w, r.WithContext(genericrequest.WithUser(r.Context(), resp.User)))
		case r.URL.Path == publicPath:
			next.ServeHTTP(w, r)
		case s.cfg.NoAnonymous, err != nil:
			writeError(w, apierrors.NewUnauthorized("Unauthorized"))
		case s.cfg.Authorize:
			next.ServeHTTP(w, r.WithContext(genericrequest.WithUser(r.Context(), anonymous)))
		case anonymousPaths[r.URL.Path]:
			next.ServeHTTP(w, r)
		default:
			writeError(w, apierrors.NewUnauthorized("Unauthorized"))
		}
	})
}

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
