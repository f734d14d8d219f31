package apiserver

import (
	"net/http"
	"net/http/pprof"
	"runtime"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apiversion "k8s.io/apimachinery/pkg/version"

	"github.com/skiff-lab/skiff/controlplane/apiserver/codec"
	"github.com/skiff-lab/skiff/controlplane/satoken"
	skiffmetrics "github.com/skiff-lab/skiff/metrics"
	"github.com/skiff-lab/skiff/podtrace"
	"github.com/skiff-lab/skiff/version"
)

// serveNonResource answers the paths that are not API resources. It
// returns false for everything else.
func (s *Server) serveNonResource(w http.ResponseWriter, r *http.Request) bool {
	p := r.URL.Path
	switch {
	case isHealthPath(p):
		s.serveHealth(w, r)
	case p == "/version":
		s.serveVersion(w)
	case p == "/cacerts":
		s.serveCACerts(w)
	case p == satoken.DiscoveryPath && s.cfg.ServiceAccounts != nil:
		s.serveOpenID(w, s.cfg.ServiceAccounts.Discovery(), "application/json")
	case p == satoken.JWKSPath && s.cfg.ServiceAccounts != nil:
		s.serveOpenID(w, s.cfg.ServiceAccounts.JWKS(), "application/jwk-set+json")
	case strings.HasPrefix(p, "/skiff/v1/") && s.cfg.Cluster != nil:
		s.cfg.Cluster.ServeHTTP(w, r)
	case p == podtrace.ReportPath && s.cfg.Journeys != nil:
		podtrace.Receiver{Store: s.cfg.Journeys, Peers: s.cfg.JourneyPeers}.ServeHTTP(w, r)
	case isUIPath(p):
		s.serveUI(w, r)
	case p == "/metrics":
		skiffmetrics.Handler().ServeHTTP(w, r)
	case strings.HasPrefix(p, "/debug/pprof"):
		serveProfiling(w, r)
	case p == "/api" || p == "/api/":
		s.discovery.legacyAPIHandle.ServeHTTP(w, r)
	case p == "/apis" || p == "/apis/":
		s.discovery.apisHandler.ServeHTTP(w, r)
	case strings.HasPrefix(p, "/openapi/"):
		s.serveOpenAPI(w, r)
	default:
		return s.serveDiscovery(w, r)
	}
	return true
}

// serveProfiling serves Go's profiles under /debug/pprof/, as
// kube-apiserver does with its default --profiling (to authenticated
// clients only: the path is not anonymous).
func serveProfiling(w http.ResponseWriter, r *http.Request) {
	switch name := strings.TrimPrefix(r.URL.Path, "/debug/pprof/"); name {
	case "profile":
		pprof.Profile(w, r)
	case "trace":
		pprof.Trace(w, r)
	case "cmdline":
		pprof.Cmdline(w, r)
	case "symbol":
		pprof.Symbol(w, r)
	default:
		pprof.Index(w, r)
	}
}

func (s *Server) serveVersion(w http.ResponseWriter) {
	b := version.Current()
	codec.WriteJSON(w, http.StatusOK, apiversion.Info{
		Major:          version.KubernetesMajor,
		Minor:          version.KubernetesMinor,
		GitVersion:     version.GitVersion(),
		GitCommit:      b.GitCommit,
		BuildDate:      b.BuildDate,
		GoVersion:      runtime.Version(),
		Compiler:       runtime.Compiler,
		Platform:       runtime.GOOS + "/" + runtime.GOARCH,
		EmulationMajor: version.KubernetesMajor,
		EmulationMinor: version.KubernetesMinor,
	})
}

// serveCACerts answers the cluster CA (PEM), to anyone, as k3s's /cacerts:
// a joining node fetches it and checks its hash against its join token.
func (s *Server) serveCACerts(w http.ResponseWriter) {
	if s.cfg.CA == nil {
		codec.WriteError(w, apierrors.NewServiceUnavailable("no cluster CA"))
		return
	}
	w.Header().Set("Content-Type", "application/x-pem-file")
	_, _ = w.Write(s.cfg.CA.CertPEM)
}
