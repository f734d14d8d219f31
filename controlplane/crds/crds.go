// Package crds serves CustomResourceDefinitions (apiextensions.k8s.io/v1)
// and the custom resources they define with k8s.io/apiextensions-apiserver,
// embedded the way kube-apiserver embeds it: as the server behind the
// built-in kinds. Requests reach it authenticated and authorized by skiff's
// API server, which hands it every path of a group skiff does not serve
// itself. It keeps CRDs and custom resources in the same etcd under
// kube-apiserver's keys (/registry/apiextensions.k8s.io/..., and
// /registry/<group>/<plural>/...), runs the CRD controllers (names
// accepted, established, structural schema, finalizer, discovery) and
// gives skiff's discovery the groups the CRDs add.
package crds

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"

	noopoteltrace "go.opentelemetry.io/otel/trace/noop"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	extensions "k8s.io/apiextensions-apiserver/pkg/apiserver"
	extensionsoptions "k8s.io/apiextensions-apiserver/pkg/cmd/server/options"
	generatedopenapi "k8s.io/apiextensions-apiserver/pkg/generated/openapi"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/discovery/aggregated"
	genericfilters "k8s.io/apiserver/pkg/endpoints/filters"
	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
	genericrequest "k8s.io/apiserver/pkg/endpoints/request"
	genericapiserver "k8s.io/apiserver/pkg/server"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	serverstorage "k8s.io/apiserver/pkg/server/storage"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/util/compatibility"
	"k8s.io/apiserver/pkg/util/openapi"
	"k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// Etcd is how the CRD server reaches etcd: its own client, over the same
// endpoints and credentials as skiff's store.
type Etcd struct {
	Servers                   []string
	CAFile, CertFile, KeyFile string
}

// Config is what the CRD server needs from skiff's control plane.
type Config struct {
	Etcd Etcd
	// Loopback is a privileged client configuration through skiff's API
	// server: the CRD controllers read and update CRDs through it.
	Loopback *rest.Config
	// Informers are skiff's own caches (Services and Endpoints for
	// conversion webhooks behind a Service).
	Informers informers.SharedInformerFactory
	// Authorizer answers the CEL authorizer of validation rules.
	Authorizer authorizer.Authorizer
	// Services finds where a conversion webhook behind a Service is served.
	Services webhook.ServiceResolver
	// Admission is the admission chain custom resources pass.
	Admission admission.Interface
	// Discovery is the API server's aggregated discovery document of
	// /apis, which the CRD server adds its groups to.
	Discovery aggregated.ResourceManager
	// NotFound answers the paths no CRD serves.
	NotFound http.Handler
	// ExternalAddress is host:port of the API server, for the addresses
	// its answers name.
	ExternalAddress string
}

// Server is the embedded apiextensions-apiserver.
type Server struct {
	generic *genericapiserver.GenericAPIServer
	crds    *extensions.CustomResourceDefinitions
	handler http.Handler
}

// New builds the CRD server; Run starts its controllers.
func New(cfg Config) (*Server, error) {
	generic := genericapiserver.NewRecommendedConfig(extensions.Codecs)
	generic.LoopbackClientConfig = cfg.Loopback
	generic.SharedInformerFactory = cfg.Informers
	generic.Authorization.Authorizer = cfg.Authorizer
	generic.AdmissionControl = cfg.Admission
	generic.ExternalAddress = cfg.ExternalAddress
	generic.AggregatedDiscoveryGroupManager = cfg.Discovery
	generic.EffectiveVersion = compatibility.DefaultBuildEffectiveVersion()
	generic.EnableIndex, generic.EnableProfiling, generic.EnableMetrics = false, false, false
	generic.FlowControl = nil
	// skiff's server authenticates, authorizes and limits requests before
	// they get here: the CRD server's own filter chain is never used.
	generic.BuildHandlerChainFunc = func(h http.Handler, _ *genericapiserver.Config) http.Handler { return h }
	generic.MergedResourceConfig = serverstorage.NewResourceConfig()
	generic.MergedResourceConfig.EnableVersions(apiextensionsv1.SchemeGroupVersion) // v1beta1 went in 1.22
	// The schemas of the apiextensions and meta types, which the CRD
	// handler's field managers and the OpenAPI documents of CRDs (v2 and
	// v3, which skiff's server merges with its own) start from.
	definitions := openapi.GetOpenAPIDefinitionsWithoutDisabledFeatures(generatedopenapi.GetOpenAPIDefinitions)
	namer := openapinamer.NewDefinitionNamer(extensions.Scheme, scheme.Scheme)
	generic.OpenAPIConfig = genericapiserver.DefaultOpenAPIConfig(definitions, namer)
	generic.OpenAPIV3Config = genericapiserver.DefaultOpenAPIV3Config(definitions, namer)
	etcd := etcdOptions(cfg.Etcd)
	if err := etcd.ApplyTo(&generic.Config); err != nil {
		return nil, fmt.Errorf("apiextensions storage: %w", err)
	}
	extra := extensions.ExtraConfig{
		CRDRESTOptionsGetter: extensionsoptions.NewCRDRESTOptionsGetter(*etcd, generic.ResourceTransformers, generic.StorageObjectCountTracker),
		MasterCount:          1,
		ServiceResolver:      cfg.Services,
		AuthResolverWrapper:  webhook.NewDefaultAuthenticationInfoResolverWrapper(nil, nil, cfg.Loopback, noopoteltrace.NewTracerProvider()),
	}
	completed := (&extensions.Config{GenericConfig: generic, ExtraConfig: extra}).Complete()
	crds, err := completed.New(genericapiserver.NewEmptyDelegateWithCustomHandler(cfg.NotFound))
	if err != nil {
		return nil, fmt.Errorf("apiextensions server: %w", err)
	}
	crds.GenericAPIServer.PrepareRun() // installs its OpenAPI services
	info := &genericrequest.RequestInfoFactory{APIPrefixes: sets.NewString("api", "apis"), GrouplessAPIPrefixes: sets.NewString("api")}
	return &Server{generic: crds.GenericAPIServer, crds: crds,
		handler: filters(crds.GenericAPIServer.Handler.Director, info)}, nil
}

// filters give a request what k8s.io/apiserver's handlers read from its
// context besides the user skiff's server put there: the request info,
// the time it arrived and an audit context (which records nothing: skiff's
// server audits requests itself).
func filters(h http.Handler, info genericrequest.RequestInfoResolver) http.Handler {
	h = genericfilters.WithRequestInfo(h, info)
	h = genericfilters.WithRequestReceivedTimestamp(h)
	return genericfilters.WithAuditInit(h)
}

// etcdOptions keep the CRD server's objects in skiff's etcd, with no
// watch cache (each watch is an etcd watch, as skiff's own are) and no
// compaction of its own (skiff's store compacts).
func etcdOptions(e Etcd) *genericoptions.EtcdOptions {
	backend := storagebackend.NewDefaultConfig("/registry", nil)
	backend.Transport = storagebackend.TransportConfig{ServerList: e.Servers, TrustedCAFile: e.CAFile, CertFile: e.CertFile, KeyFile: e.KeyFile}
	backend.CompactionInterval = 0
	opts := genericoptions.NewEtcdOptions(backend)
	opts.EnableWatchCache = false
	opts.SkipHealthEndpoints = true
	opts.StorageConfig.Codec = extensions.Codecs.LegacyCodec(apiextensionsv1.SchemeGroupVersion)
	return opts
}

// Run starts the CRD server's informers and controllers, through the
// loopback, and stops them and its storage when ctx ends.
func (s *Server) Run(ctx context.Context) {
	s.generic.RunPostStartHooks(ctx)
	<-ctx.Done()
	s.generic.Destroy()
}

// ServeHTTP answers a request skiff's API server has authenticated and
// authorized (the user is in its context).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.handler.ServeHTTP(w, r)
}

// Groups are the API groups served here, for the API server's group list:
// apiextensions.k8s.io, then those of the established CRDs, each with its
// served versions, the preferred one (the highest, as Kubernetes orders
// versions) first.
func (s *Server) Groups() []metav1.APIGroup {
	groups := []metav1.APIGroup{apiGroup(apiextensionsv1.GroupName, []string{apiextensionsv1.SchemeGroupVersion.Version})}
	all, err := s.crds.Informers.Apiextensions().V1().CustomResourceDefinitions().Lister().List(labels.Everything())
	if err != nil {
		return groups
	}
	versions := map[string][]string{}
	for _, crd := range all {
		if !established(crd) {
			continue
		}
		for _, v := range crd.Spec.Versions {
			if v.Served && !slices.Contains(versions[crd.Spec.Group], v.Name) {
				versions[crd.Spec.Group] = append(versions[crd.Spec.Group], v.Name)
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(versions)) {
		groups = append(groups, apiGroup(name, versions[name]))
	}
	return groups
}

func established(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established {
			return c.Status == apiextensionsv1.ConditionTrue
		}
	}
	return false
}

func apiGroup(name string, versions []string) metav1.APIGroup {
	slices.SortFunc(versions, func(a, b string) int { return -version.CompareKubeAwareVersionStrings(a, b) })
	g := metav1.APIGroup{TypeMeta: metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}, Name: name}
	for _, v := range versions {
		g.Versions = append(g.Versions, metav1.GroupVersionForDiscovery{GroupVersion: schema.GroupVersion{Group: name, Version: v}.String(), Version: v})
	}
	g.PreferredVersion = g.Versions[0]
	return g
}
