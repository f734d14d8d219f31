// Package embedded is what skiff's control plane shares between the
// k8s.io/apiserver-based servers it embeds behind its own API server (the
// CRD server, the aggregator): their configuration from skiff's parts,
// their storage in skiff's etcd, the request context their handlers read,
// and the group entries they add to skiff's group list. Requests reach
// them authenticated, authorized and audited by skiff's server; their own
// filter chains are never used.
package embedded

import (
	"context"
	"log/slog"
	"net/http"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/discovery/aggregated"
	genericfilters "k8s.io/apiserver/pkg/endpoints/filters"
	genericrequest "k8s.io/apiserver/pkg/endpoints/request"
	genericapiserver "k8s.io/apiserver/pkg/server"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/util/compatibility"
	"k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/rest"
)

// Etcd is how an embedded server reaches etcd: its own client, over the
// same endpoints and credentials as skiff's store.
type Etcd struct {
	Servers                   []string
	CAFile, CertFile, KeyFile string
}

// Config is what an embedded server needs from skiff's control plane.
type Config struct {
	Etcd Etcd
	// Loopback is a privileged client configuration through skiff's API
	// server: the embedded server's controllers read and write through it.
	Loopback *rest.Config
	// Informers are skiff's own caches (Services and EndpointSlices for
	// webhooks and proxies behind a Service).
	Informers informers.SharedInformerFactory
	// Authorizer answers the authorizer checks of CEL rules.
	Authorizer authorizer.Authorizer
	// Services finds where something behind a Service is served.
	Services webhook.ServiceResolver
	// Admission is the admission chain the server's objects pass.
	Admission admission.Interface
	// Discovery is the API server's aggregated discovery document of
	// /apis, which the embedded server adds its groups to.
	Discovery aggregated.ResourceManager
	// NotFound answers the paths the embedded server does not serve.
	NotFound http.Handler
	// ExternalAddress is host:port of the API server, for the addresses
	// its answers name.
	ExternalAddress string
}

// Recommended is a generic server configuration for codecs over skiff's
// parts: no index, profiling, metrics or flow control of its own, no
// handler chain (skiff's server authenticates, authorizes and limits
// requests before they get here).
func (c Config) Recommended(codecs serializer.CodecFactory) *genericapiserver.RecommendedConfig {
	generic := genericapiserver.NewRecommendedConfig(codecs)
	generic.LoopbackClientConfig = c.Loopback
	generic.SharedInformerFactory = c.Informers
	generic.Authorization.Authorizer = c.Authorizer
	generic.AdmissionControl = c.Admission
	generic.ExternalAddress = c.ExternalAddress
	generic.AggregatedDiscoveryGroupManager = c.Discovery
	generic.EffectiveVersion = compatibility.DefaultBuildEffectiveVersion()
	generic.EnableIndex, generic.EnableProfiling, generic.EnableMetrics = false, false, false
	generic.FlowControl = nil
	generic.BuildHandlerChainFunc = func(h http.Handler, _ *genericapiserver.Config) http.Handler { return h }
	return generic
}

// EtcdOptions keep an embedded server's objects in skiff's etcd under
// kube-apiserver's keys (/registry/...), encoded by codec, with no watch
// cache (each watch is an etcd watch, as skiff's own are) and no
// compaction of its own (skiff's store compacts).
func EtcdOptions(e Etcd, codec runtime.Codec) *genericoptions.EtcdOptions {
	backend := storagebackend.NewDefaultConfig("/registry", nil)
	backend.Transport = storagebackend.TransportConfig{ServerList: e.Servers, TrustedCAFile: e.CAFile, CertFile: e.CertFile, KeyFile: e.KeyFile}
	backend.CompactionInterval = 0
	opts := genericoptions.NewEtcdOptions(backend)
	opts.EnableWatchCache = false
	opts.SkipHealthEndpoints = true
	opts.StorageConfig.Codec = codec
	return opts
}

var requestInfo = &genericrequest.RequestInfoFactory{APIPrefixes: sets.NewString("api", "apis"), GrouplessAPIPrefixes: sets.NewString("api")}

// Filters give a request what k8s.io/apiserver's handlers read from its
// context besides the user skiff's server put there: the request info,
// the time it arrived and an audit context (which records nothing: skiff's
// server audits requests itself).
func Filters(h http.Handler) http.Handler {
	h = genericfilters.WithRequestInfo(h, requestInfo)
	h = genericfilters.WithRequestReceivedTimestamp(h)
	return genericfilters.WithAuditInit(h)
}

// Server is an embedded server as skiff's runs it: its generic server,
// and the handler skiff's server hands requests to.
type Server struct {
	generic *genericapiserver.GenericAPIServer
	handler http.Handler
}

// NewServer wraps generic's handler (its director: no filter chain) in
// Filters.
func NewServer(generic *genericapiserver.GenericAPIServer) Server {
	return Server{generic: generic, handler: Filters(generic.Handler.Director)}
}

// hooksGrace bounds how long a stopping server waits for its post-start
// hooks to finish.
const hooksGrace = 10 * time.Second

// Run starts the server's informers and controllers (its post-start
// hooks), through the loopback, and stops them and its storage when ctx
// ends, once its hooks have finished (k8s.io/apiserver ends the process
// when a hook fails, as the CRD informer's does when stopped before it
// has synced): the caller keeps the API server answering until Run
// returns.
func (s Server) Run(ctx context.Context) {
	hooks, stop := context.WithCancel(context.WithoutCancel(ctx))
	s.generic.RunPostStartHooks(hooks)
	<-ctx.Done()
	started := make(chan struct{})
	go func() {
		defer close(started)
		for _, done := range s.generic.MuxAndDiscoveryCompleteSignals() {
			<-done
		}
	}()
	select {
	case <-started:
	case <-time.After(hooksGrace):
		// Its hooks are left to end with the process rather than be
		// stopped half-way.
		slog.Warn("embedded server stopping before its start-up completed")
		go func() {
			<-started
			stop()
		}()
		return
	}
	stop()
	s.generic.Destroy()
}

// ServeHTTP answers a request skiff's API server has authenticated and
// authorized (the user is in its context).
func (s Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.handler.ServeHTTP(w, r)
}

// APIGroup is the group list's entry of a group with these versions, the
// preferred one (the highest, as Kubernetes orders versions) first.
func APIGroup(name string, versions []string) metav1.APIGroup {
	versions = slices.Clone(versions)
	slices.SortFunc(versions, func(a, b string) int { return -version.CompareKubeAwareVersionStrings(a, b) })
	g := metav1.APIGroup{TypeMeta: metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}, Name: name}
	for _, v := range versions {
		g.Versions = append(g.Versions, metav1.GroupVersionForDiscovery{GroupVersion: schema.GroupVersion{Group: name, Version: v}.String(), Version: v})
	}
	g.PreferredVersion = g.Versions[0]
	return g
}
