// Package apiserver serves the Kubernetes REST API over an etcd store: one
// generic handler for every resource (read, write, delete, watch, patch,
// their codecs), with what differs per kind (defaults, validation, update
// rules, table columns) in package registry.
package apiserver

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net"
	"net/http"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/skiff-lab/skiff/podtrace"
	"go.opentelemetry.io/otel/trace"

	"github.com/skiff-lab/skiff/controlplane/apiserver/authn"
	"github.com/skiff-lab/skiff/controlplane/apiserver/codec"
	"github.com/skiff-lab/skiff/controlplane/apiserver/proxy"
	"github.com/skiff-lab/skiff/controlplane/apiserver/registry"
	"github.com/skiff-lab/skiff/controlplane/encryption"
	"github.com/skiff-lab/skiff/controlplane/openapi"
	"github.com/skiff-lab/skiff/controlplane/pki"
	"github.com/skiff-lab/skiff/controlplane/satoken"
	"github.com/skiff-lab/skiff/controlplane/store"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// maxBodyBytes is the largest request body accepted (as kube-apiserver).
const maxBodyBytes = 3 << 20

// Config is what the API server needs.
type Config struct {
	Store *store.Store
	CA    *pki.CA
	// Tokens maps bearer tokens to users: the control plane's own.
	Tokens map[string]authn.User
	// TokenAuthFile is kube-apiserver's --token-auth-file: CSV lines of
	// token,user,uid[,"group1,group2"]. Empty: none.
	TokenAuthFile string
	// TokenAuthenticators take bearer tokens after the others (JWT
	// issuers: --oidc-*, --authentication-config).
	TokenAuthenticators []authenticator.Token
	// ServiceCIDR is where ClusterIPs come from.
	ServiceCIDR *net.IPNet
	// Cluster, if set, answers the servers joining this one, under
	// /skiff/v1/.
	Cluster http.Handler
	// NodePorts is the NodePort range.
	NodePorts registry.PortRange
	// KubeletTLS is how the API server reaches nodes' APIs (pods' logs,
	// exec, attach, port-forward, nodes/proxy): its client certificate and
	// the CA nodes' serving certificates chain to. nil: those fail (503).
	KubeletTLS *tls.Config
	// Authorize has every request decided by the authorizer SetAuthorizer
	// installs (system:masters excepted; 403 until it is installed); false
	// allows every authenticated user everything but a bootstrapper's
	// limits (refuseBootstrapper).
	Authorize bool
	// NoAnonymous refuses every request without credentials (401) but the
	// cluster CA's (kube-apiserver's --anonymous-auth=false); otherwise an
	// authorizing server decides them as system:anonymous.
	NoAnonymous bool
	// ServiceAccounts issues and verifies service account tokens
	// (TokenRequest, the token authenticator, OpenID discovery); nil
	// serves none.
	ServiceAccounts *satoken.Issuer
	// Audit, if set, records requests (audit.go).
	Audit *Audit
	// Encryption, if set, encrypts the resources it names in the store
	// (--encryption-provider-config).
	Encryption *encryption.Config
	// Admission is the admission chain every create, update and delete
	// passes after authorization (admission.go); nil admits everything.
	Admission admission.Interface
	// Tracing, if set, traces each pod's create request: the root of its
	// journey (podtrace.go).
	Tracing trace.TracerProvider
	// Journeys, if set, holds pods' journeys: served as pods/explain, and
	// fed by the agents' reports to /v1/traces.
	Journeys *podtrace.Store
	// JourneyPeers, if set, get the spans the agents report, and are kept
	// to the cluster's other API servers (their live records).
	JourneyPeers *podtrace.Peers
}

// Server is the API server's HTTP side.
type Server struct {
	cfg            Config
	store          *store.Store
	nodes          *proxy.Nodes    // to nodes' APIs
	backends       *proxy.Backends // to pods and services (pods/proxy, services/proxy)
	resources      []*registry.Resource
	byGroupVersion map[schema.GroupVersion]map[string]*registry.Resource
	authn          authenticator.Request
	nsCache        namespaceCache
	namespaces     *registry.Resource
	authz          atomic.Pointer[Authorizer]   // with cfg.Authorize
	flowControlled atomic.Pointer[http.Handler] // the requests under priority and fairness, once SetFlowControl
	fields         fieldManagers                // server-side apply (fieldmanager.go)
	groups         sets.Set[string]             // the API groups served here
	extensions     Extensions                   // the groups served behind (extensions.go)
	definitions    *openapi.Definitions         // OpenAPI schemas (openapi.go)
	discovery      aggregatedDiscovery          // aggregateddiscovery.go
	// The v2 definitions of the server's own kinds, built on first use.
	openAPIV2Once    sync.Once
	openAPIV2Builtin *spec.Swagger
	openAPIV2Err     error
	// The last merge with the extensions' v2 document, and its ETag.
	openAPIV2Mu     sync.Mutex
	openAPIV2Merged *spec.Swagger
	openAPIV2ETag   string
	// /healthz, /livez and /readyz (health.go), built on first use.
	readyzExtra []healthz.HealthChecker
	healthOnce  sync.Once
	health      http.Handler
}

// New builds a server over cfg.Store.
func New(cfg Config) (*Server, error) {
	s := &Server{cfg: cfg, store: cfg.Store,
		backends: proxy.NewBackends(codec.WriteError), definitions: openapi.NewDefinitions(codec.Scheme)}
	s.nodes = proxy.NewNodes(cfg.KubeletTLS, s.getNode, codec.WriteError)
	alloc, err := registry.NewServiceAllocator(cfg.Store, cfg.ServiceCIDR, cfg.NodePorts)
	if err != nil {
		return nil, err
	}
	s.resources = slices.Concat(registry.Resources(alloc), registry.APIObjectResources(), registry.AdmissionRegistrationResources(), metricsResources(), s.reviewResources())
	s.byGroupVersion = map[schema.GroupVersion]map[string]*registry.Resource{}
	s.groups = sets.New[string]()
	for _, r := range s.resources {
		gv := r.GVK.GroupVersion()
		s.groups.Insert(gv.Group)
		if s.byGroupVersion[gv] == nil {
			s.byGroupVersion[gv] = map[string]*registry.Resource{}
		}
		s.byGroupVersion[gv][r.Plural] = r
		if r.Plural == "namespaces" {
			s.namespaces = r
		}
	}
	s.initAggregatedDiscovery()
	if cfg.Encryption != nil && cfg.Store != nil {
		for _, r := range s.resources {
			if t := cfg.Encryption.For(r.Plural, r.GVK.Group); t != nil {
				cfg.Store.Encrypt(path.Join("/registry", r.Plural)+"/", t)
			}
		}
	}
	authnCfg := authn.Config{Tokens: cfg.Tokens, TokenAuthFile: cfg.TokenAuthFile, ServiceAccounts: cfg.ServiceAccounts,
		TokenAuthenticators: cfg.TokenAuthenticators}
	if cfg.CA != nil {
		authnCfg.CA = cfg.CA.Pool()
	}
	if cfg.Store != nil {
		authnCfg.Lookup = s.lookup
	}
	if s.authn, err = authn.New(authnCfg); err != nil {
		return nil, err
	}
	return s, nil
}

// Handler returns the server's HTTP handler: metrics, authentication, body
// limit, then routing.
func (s *Server) Handler() http.Handler {
	return instrument(s.authenticate(s.audit(http.HandlerFunc(s.route))))
}

// Serve answers requests on ln with TLS and, when loopback is not nil, in
// plain HTTP on loopback (in-memory connections from the server's own
// process), until ctx ends.
func (s *Server) Serve(ctx context.Context, ln net.Listener, cert tls.Certificate, loopback net.Listener) error {
	go s.nsCache.run(ctx, s.store, s.namespaces)
	secure := s.httpServer(&tls.Config{
		Certificates: []tls.Certificate{cert},
		ClientAuth:   tls.RequestClientCert,
		MinVersion:   tls.VersionTLS12,
		NextProtos:   []string{"h2", "http/1.1"},
	})
	servers := []*http.Server{secure}
	errc := make(chan error, 2)
	go func() { errc <- secure.ServeTLS(ln, "", "") }()
	if loopback != nil {
		plain := s.httpServer(nil)
		servers = append(servers, plain)
		go func() { errc <- plain.Serve(loopback) }()
	}
	select {
	case err := <-errc:
		shutdown(servers)
		return err
	case <-ctx.Done():
		shutdown(servers)
		for range servers {
			if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
				return err
			}
		}
		return nil
	}
}

func (s *Server) httpServer(tlsConfig *tls.Config) *http.Server {
	return &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		TLSConfig:         tlsConfig,
		ErrorLog:          log.New(serverErrors{}, "", 0),
	}
}

// serverErrors logs net/http's messages: a handler's panic as an error,
// the rest (TLS handshakes that clients abandon, mostly) at debug level.
type serverErrors struct{}

func (serverErrors) Write(p []byte) (int, error) {
	msg := strings.TrimSpace(string(p))
	level := slog.LevelDebug
	if strings.Contains(msg, "panic serving") {
		level = slog.LevelError
	}
	slog.Log(context.Background(), level, msg)
	return len(p), nil
}

// shutdown stops servers, giving requests in flight 5 s.
func shutdown(servers []*http.Server) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, srv := range servers {
		_ = srv.Shutdown(ctx)
	}
}

func (s *Server) route(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength > maxBodyBytes {
		codec.WriteError(w, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d", maxBodyBytes)))
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxBodyBytes)
	r = withWarnings(w, r)
	r, ok := s.impersonate(w, r)
	if ok {
		s.flowControl(w, r)
	}
}

// serve answers an authenticated request once authorized: non-resource
// paths, the extensions' groups, then the resources.
func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(w, r) || !s.cfg.Authorize && s.refuseBootstrapper(w, r) {
		return
	}
	if s.serveNonResource(w, r) {
		return
	}
	if s.delegated(r.URL.Path) {
		s.extensions.ServeHTTP(w, r)
		return
	}
	req, isResource, err := s.parseResourcePath(r)
	if !isResource {
		codec.WriteError(w, errNotServed)
		return
	}
	if err != nil {
		codec.WriteError(w, err)
		return
	}
	setRequestInfo(r, req)
	if err := s.serveResource(w, r, req); err != nil {
		codec.WriteError(w, err)
	}
}

func (s *Server) serveResource(w http.ResponseWriter, r *http.Request, req request) error {
	if serve := s.nodeSubresource(req); serve != nil {
		return serve(w, r, req)
	}
	if req.res.Plural == "pods" && req.subresource == "explain" {
		return s.explainPod(w, r, req)
	}
	r, err := codec.WithOutput(r)
	if err != nil {
		return err // 406, as kube-apiserver answers an Accept it cannot meet
	}
	if req.res.ReadOnly {
		return s.serveMetrics(w, r, req)
	}
	if req.res.Review != nil {
		return s.serveReview(w, r, req)
	}
	switch req.verb {
	case "get":
		return s.get(w, r, req)
	case "list":
		return s.list(w, r, req)
	case "watch":
		return s.watch(w, r, req)
	case "create":
		return s.create(w, r, req)
	case "update":
		return s.update(w, r, req)
	case "patch":
		return s.patch(w, r, req)
	case "delete":
		return s.delete(w, r, req)
	case "deletecollection":
		return s.deleteCollection(w, r, req)
	}
	return apierrors.NewMethodNotSupported(req.res.GroupResource(), req.verb)
}
