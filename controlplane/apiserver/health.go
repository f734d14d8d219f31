package apiserver

import (
	"errors"
	"net/http"
	"strings"

	"k8s.io/apiserver/pkg/server/healthz"
)

// isHealthPath says p is one of /healthz, /livez, /readyz or one of their
// single checks (/readyz/etcd).
func isHealthPath(p string) bool {
	for _, root := range []string{"/healthz", "/livez", "/readyz"} {
		if p == root || strings.HasPrefix(p, root+"/") {
			return true
		}
	}
	return false
}

// AddReadyzChecks adds checks to /readyz (not to /livez or /healthz).
// Call it before the server answers its first health request.
func (s *Server) AddReadyzChecks(checks ...healthz.HealthChecker) {
	s.readyzExtra = append(s.readyzExtra, checks...)
}

// serveHealth answers /healthz, /livez and /readyz as kube-apiserver does,
// through k8s.io/apiserver's healthz: "ok", or the failed checks; the whole
// list with ?verbose, some left out with ?exclude=NAME, and each check
// alone at /readyz/NAME.
func (s *Server) serveHealth(w http.ResponseWriter, r *http.Request) {
	s.healthOnce.Do(func() { s.health = s.healthHandler() })
	s.health.ServeHTTP(w, r)
}

func (s *Server) healthHandler() http.Handler {
	etcd := func(r *http.Request) error {
		_, err := s.store.Revision(r.Context())
		return err
	}
	live := []healthz.HealthChecker{healthz.PingHealthz, healthz.LogHealthz, healthz.NamedCheck("etcd", etcd)}
	ready := append(append(live[:len(live):len(live)],
		healthz.NamedCheck("etcd-readiness", etcd),
		// As kube-apiserver before its RBAC post-start hook is done.
		healthz.NamedCheck("poststarthook/rbac/bootstrap-roles", func(*http.Request) error {
			if s.cfg.Authorize && s.authz.Load() == nil {
				return errors.New("not finished")
			}
			return nil
		})), s.readyzExtra...)
	mux := http.NewServeMux()
	healthz.InstallHandler(mux, live...)
	healthz.InstallLivezHandler(mux, live...)
	healthz.InstallReadyzHandler(mux, ready...)
	return mux
}
