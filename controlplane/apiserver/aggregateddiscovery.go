package apiserver

import (
	"net/http"
	"strings"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/discovery/aggregated"
)

// Aggregated discovery (apidiscovery.k8s.io/v2): /api and /apis answer the
// whole of their groups' resources in one document to a client that asks
// for it in Accept (kubectl and client-go do), else the group lists.
// k8s.io/apiserver's resource managers keep the documents; the one of
// /apis is shared with the extensions, which add their groups to it (the
// CRDs', behind the built-in ones).

// builtinGroupPriority orders the server's groups before the extensions'
// (CRD groups have 1000), in the order of groupVersions.
const builtinGroupPriority = 20000

type aggregatedDiscovery struct {
	apis, api       aggregated.ResourceManager
	apisHandler     http.Handler
	legacyAPIHandle http.Handler
}

func (s *Server) initAggregatedDiscovery() {
	d := &s.discovery
	d.apis = aggregated.NewResourceManager("apis")
	d.api = aggregated.NewResourceManager("api")
	groups, versions := 0, 0
	var last string
	for _, gv := range s.groupVersions() {
		version := apidiscoveryv2.APIVersionDiscovery{Version: gv.Version, Resources: discoveryResources(s.resourceList(gv)),
			Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent}
		if gv.Group == "" {
			d.api.AddGroupVersion("", version)
			continue
		}
		if gv.Group != last {
			groups, versions, last = groups+1, 0, gv.Group
		}
		versions++
		d.apis.AddGroupVersion(gv.Group, version)
		d.apis.SetGroupVersionPriority(metav1.GroupVersion(gv), builtinGroupPriority-groups, 100-versions)
	}
	d.apisHandler = aggregated.WrapAggregatedDiscoveryToHandler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		s.serveAPIGroupList(w)
	}), d.apis, nil)
	d.legacyAPIHandle = aggregated.WrapAggregatedDiscoveryToHandler(http.HandlerFunc(s.serveAPIVersions), d.api, nil)
}

// AggregatedDiscovery is the manager of /apis's aggregated document, for
// the extensions to add their groups to.
func (s *Server) AggregatedDiscovery() aggregated.ResourceManager { return s.discovery.apis }

// discoveryResources turns a group version's resource list into aggregated
// discovery's resources, each with its subresources.
func discoveryResources(list *metav1.APIResourceList) []apidiscoveryv2.APIResourceDiscovery {
	gv, _ := schema.ParseGroupVersion(list.GroupVersion)
	var out []apidiscoveryv2.APIResourceDiscovery
	index := map[string]int{}
	for _, r := range list.APIResources {
		kind := &metav1.GroupVersionKind{Group: gv.Group, Version: gv.Version, Kind: r.Kind}
		if r.Version != "" {
			kind.Group, kind.Version = r.Group, r.Version
		}
		parent, sub, isSub := strings.Cut(r.Name, "/")
		if isSub {
			if i, ok := index[parent]; ok {
				out[i].Subresources = append(out[i].Subresources, apidiscoveryv2.APISubresourceDiscovery{
					Subresource: sub, ResponseKind: kind, Verbs: r.Verbs})
			}
			continue
		}
		scope := apidiscoveryv2.ScopeCluster
		if r.Namespaced {
			scope = apidiscoveryv2.ScopeNamespace
		}
		index[r.Name] = len(out)
		out = append(out, apidiscoveryv2.APIResourceDiscovery{Resource: r.Name, ResponseKind: kind, Scope: scope,
			SingularResource: r.SingularName, Verbs: r.Verbs, ShortNames: r.ShortNames, Categories: r.Categories})
	}
	return out
}
