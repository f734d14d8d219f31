package apiserver

import (
	"context"
	"crypto/x509"
	"encoding/csv"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// User is an authenticated client.
type User struct {
	Name   string
	UID    string
	Groups []string
}

type userKey struct{}

// UserFrom returns the user a request was authenticated as.
func UserFrom(ctx context.Context) (User, bool) {
	u, ok := ctx.Value(userKey{}).(User)
	return u, ok
}

// anonymousPaths answer without credentials.
var anonymousPaths = map[string]bool{"/healthz": true, "/livez": true, "/readyz": true, "/version": true}

// authenticate admits a client certificate signed by the cluster CA (user
// = CN, groups = O) or a known bearer token; anything else gets 401, except
// on the anonymous paths.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, ok := s.userOf(r)
		if !ok {
			if anonymousPaths[r.URL.Path] {
				next.ServeHTTP(w, r)
				return
			}
			writeError(w, apierrors.NewUnauthorized("Unauthorized"))
			return
		}
		user.Groups = append(slices.Clone(user.Groups), "system:authenticated")
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), userKey{}, user)))
	})
}

func (s *Server) userOf(r *http.Request) (User, bool) {
	if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 && s.cfg.CA != nil {
		return s.certs.userOf(r.TLS.PeerCertificates, s.cfg.CA.Pool())
	}
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || token == "" {
		return User{}, false
	}
	u, ok := s.cfg.Tokens[strings.TrimSpace(token)]
	return u, ok
}

// maxCachedCerts bounds the verified-certificate cache.
const maxCachedCerts = 4096

// certCache remembers client certificates already verified, so that a
// client's every request does not pay for a signature check. It is safe
// for concurrent use.
type certCache struct {
	mu    sync.Mutex
	users map[string]User // by the leaf's DER bytes
}

func (c *certCache) userOf(certs []*x509.Certificate, roots *x509.CertPool) (User, bool) {
	leaf := certs[0]
	if time.Now().After(leaf.NotAfter) {
		return User{}, false
	}
	c.mu.Lock()
	u, ok := c.users[string(leaf.Raw)]
	c.mu.Unlock()
	if ok {
		return u, true
	}
	u, ok = verifyClientCert(certs, roots)
	if ok {
		c.mu.Lock()
		if c.users == nil || len(c.users) >= maxCachedCerts {
			c.users = map[string]User{}
		}
		c.users[string(leaf.Raw)] = u
		c.mu.Unlock()
	}
	return u, ok
}

func verifyClientCert(certs []*x509.Certificate, roots *x509.CertPool) (User, bool) {
	opts := x509.VerifyOptions{
		Roots:         roots,
		Intermediates: x509.NewCertPool(),
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	for _, c := range certs[1:] {
		opts.Intermediates.AddCert(c)
	}
	if _, err := certs[0].Verify(opts); err != nil || certs[0].Subject.CommonName == "" {
		return User{}, false
	}
	return User{Name: certs[0].Subject.CommonName, Groups: append([]string(nil), certs[0].Subject.Organization...)}, true
}

// LoadTokenFile reads a static token file: CSV lines of
// token,user,uid[,"group1,group2"], as kube-apiserver's --token-auth-file.
func LoadTokenFile(path string) (map[string]User, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rd := csv.NewReader(f)
	rd.FieldsPerRecord = -1
	rd.TrimLeadingSpace = true
	rd.Comment = '#'
	records, err := rd.ReadAll()
	if err != nil {
		return nil, fmt.Errorf("token file %s: %w", path, err)
	}
	tokens := map[string]User{}
	for i, rec := range records {
		if len(rec) < 3 || rec[0] == "" || rec[1] == "" {
			return nil, fmt.Errorf("token file %s line %d: want token,user,uid[,groups]", path, i+1)
		}
		u := User{Name: rec[1], UID: rec[2]}
		if len(rec) > 3 && rec[3] != "" {
			for _, g := range strings.Split(rec[3], ",") {
				u.Groups = append(u.Groups, strings.TrimSpace(g))
			}
		}
		tokens[rec[0]] = u
	}
	return tokens, nil
}
