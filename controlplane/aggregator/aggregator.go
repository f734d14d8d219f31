// Package aggregator serves API aggregation (apiregistration.k8s.io/v1
// APIServices) with k8s.io/kube-aggregator, embedded the way kube-apiserver
// embeds it, behind skiff's API server and in front of the CRD server: a
// request for a group version an APIService registers with a Service is
// proxied to that Service's extension API server (as the front proxy: its
// client certificate and the user in X-Remote-* headers), with the
// APIService's Available condition kept by the aggregator's availability
// controllers and its discovery merged into /apis; everything else falls
// through to the delegate. APIServices live in skiff's etcd under
// kube-apiserver's keys (/registry/apiregistration.k8s.io/apiservices/...).
package aggregator

import (
	"fmt"
	"maps"
	"net/http"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
	genericapiserver "k8s.io/apiserver/pkg/server"
	serverstorage "k8s.io/apiserver/pkg/server/storage"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregatorapiserver "k8s.io/kube-aggregator/pkg/apiserver"
	aggregatorscheme "k8s.io/kube-aggregator/pkg/apiserver/scheme"
	listers "k8s.io/kube-aggregator/pkg/client/listers/apiregistration/v1"
	aggregatoropenapi "k8s.io/kube-aggregator/pkg/generated/openapi"

	"github.com/skiff-lab/skiff/controlplane/embedded"
)

// Delegate is the server behind the aggregator (the CRD server): what no
// APIService sends elsewhere, and more groups for the group list.
type Delegate interface {
	http.Handler
	Groups() []metav1.APIGroup
}

// ProxyClient is the front proxy's client certificate and key (files),
// which extension API servers trust through the requestheader CA of the
// extension-apiserver-authentication ConfigMap.
type ProxyClient struct {
	CertFile, KeyFile string
}

// Server is the embedded aggregator.
type Server struct {
	embedded.Server // Run starts its registration, availability and discovery controllers
	apiServices     listers.APIServiceLister
	delegate        Delegate
}

// New builds the aggregator in front of delegate (cfg.NotFound is
// ignored: what the aggregator does not serve goes to delegate); Run
// starts its controllers.
func New(cfg embedded.Config, proxy ProxyClient, delegate Delegate) (*Server, error) {
	generic := cfg.Recommended(aggregatorscheme.Codecs)
	generic.MergedResourceConfig = serverstorage.NewResourceConfig()
	generic.MergedResourceConfig.EnableVersions(apiregistrationv1.SchemeGroupVersion)
	// The schemas of its kinds, for its field managers; no OpenAPI service
	// of its own (PrepareRun is not called): /openapi/* goes on to the
	// delegate, whose documents skiff's server merges with its own.
	namer := openapinamer.NewDefinitionNamer(aggregatorscheme.Scheme)
	generic.OpenAPIV3Config = genericapiserver.DefaultOpenAPIV3Config(aggregatoropenapi.GetOpenAPIDefinitions, namer)
	generic.SkipOpenAPIInstallation = true
	etcd := embedded.EtcdOptions(cfg.Etcd, aggregatorscheme.Codecs.LegacyCodec(apiregistrationv1.SchemeGroupVersion))
	if err := etcd.ApplyTo(&generic.Config); err != nil {
		return nil, fmt.Errorf("aggregator storage: %w", err)
	}
	extra := aggregatorapiserver.ExtraConfig{ProxyClientCertFile: proxy.CertFile, ProxyClientKeyFile: proxy.KeyFile,
		ServiceResolver: cfg.Services, RejectForwardingRedirects: true}
	completed := (&aggregatorapiserver.Config{GenericConfig: generic, ExtraConfig: extra}).Complete()
	agg, err := completed.NewWithDelegate(genericapiserver.NewEmptyDelegateWithCustomHandler(delegate))
	if err != nil {
		return nil, fmt.Errorf("aggregator: %w", err)
	}
	return &Server{Server: embedded.NewServer(agg.GenericAPIServer), delegate: delegate,
		apiServices: agg.APIRegistrationInformers.Apiregistration().V1().APIServices().Lister()}, nil
}

// Groups are the API groups served here and behind, for the API server's
// group list: apiregistration.k8s.io, the groups APIServices send to a
// Service (each with its versions), then the delegate's.
func (s *Server) Groups() []metav1.APIGroup {
	groups := []metav1.APIGroup{embedded.APIGroup(apiregistrationv1.GroupName, []string{apiregistrationv1.SchemeGroupVersion.Version})}
	all, err := s.apiServices.List(labels.Everything())
	if err != nil {
		return append(groups, s.delegate.Groups()...)
	}
	versions := map[string][]string{}
	for _, svc := range all {
		if svc.Spec.Service != nil && svc.Spec.Group != "" && !slices.Contains(versions[svc.Spec.Group], svc.Spec.Version) {
			versions[svc.Spec.Group] = append(versions[svc.Spec.Group], svc.Spec.Version)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(versions)) {
		groups = append(groups, embedded.APIGroup(name, versions[name]))
	}
	return append(groups, s.delegate.Groups()...)
}
