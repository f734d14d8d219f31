// Package crds serves CustomResourceDefinitions (apiextensions.k8s.io/v1)
// and the custom resources they define with k8s.io/apiextensions-apiserver,
// embedded the way kube-apiserver embeds it: as the server behind the
// built-in kinds. Requests reach it authenticated and authorized by skiff's
// API server, which hands it (through the aggregator) every path of a group skiff does not serve
// itself. It keeps CRDs and custom resources in the same etcd under
// kube-apiserver's keys (/registry/apiextensions.k8s.io/..., and
// /registry/<group>/<plural>/...), runs the CRD controllers (names
// accepted, established, structural schema, finalizer, discovery) and
// gives skiff's discovery the groups the CRDs add.
package crds

import (
	"fmt"
	"maps"
	"slices"

	noopoteltrace "go.opentelemetry.io/otel/trace/noop"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	extensions "k8s.io/apiextensions-apiserver/pkg/apiserver"
	extensionsoptions "k8s.io/apiextensions-apiserver/pkg/cmd/server/options"
	generatedopenapi "k8s.io/apiextensions-apiserver/pkg/generated/openapi"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
	genericapiserver "k8s.io/apiserver/pkg/server"
	serverstorage "k8s.io/apiserver/pkg/server/storage"
	"k8s.io/apiserver/pkg/util/openapi"
	"k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/skiff-lab/skiff/controlplane/embedded"
)

// Server is the embedded apiextensions-apiserver.
type Server struct {
	embedded.Server // Run starts its controllers
	crds            *extensions.CustomResourceDefinitions
}

// New builds the CRD server; Run starts its controllers.
func New(cfg embedded.Config) (*Server, error) {
	generic := cfg.Recommended(extensions.Codecs)
	generic.MergedResourceConfig = serverstorage.NewResourceConfig()
	generic.MergedResourceConfig.EnableVersions(apiextensionsv1.SchemeGroupVersion) // v1beta1 went in 1.22
	// The schemas of the apiextensions and meta types, which the CRD
	// handler's field managers and the OpenAPI documents of CRDs (v2 and
	// v3, which skiff's server merges with its own) start from.
	definitions := openapi.GetOpenAPIDefinitionsWithoutDisabledFeatures(generatedopenapi.GetOpenAPIDefinitions)
	namer := openapinamer.NewDefinitionNamer(extensions.Scheme, scheme.Scheme)
	generic.OpenAPIConfig = genericapiserver.DefaultOpenAPIConfig(definitions, namer)
	generic.OpenAPIV3Config = genericapiserver.DefaultOpenAPIV3Config(definitions, namer)
	etcd := embedded.EtcdOptions(cfg.Etcd, extensions.Codecs.LegacyCodec(apiextensionsv1.SchemeGroupVersion))
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
	return &Server{Server: embedded.NewServer(crds.GenericAPIServer), crds: crds}, nil
}

// Groups are the API groups served here, for the API server's group list:
// apiextensions.k8s.io, then those of the established CRDs, each with its
// served versions, the preferred one (the highest, as Kubernetes orders
// versions) first.
func (s *Server) Groups() []metav1.APIGroup {
	groups := []metav1.APIGroup{embedded.APIGroup(apiextensionsv1.GroupName, []string{apiextensionsv1.SchemeGroupVersion.Version})}
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
		groups = append(groups, embedded.APIGroup(name, versions[name]))
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
