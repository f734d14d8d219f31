package apiserver

import (
	"net"
	"net/http"
	"sort"
	"strings"

	"github.com/skiff-lab/skiff/controlplane/apiserver/codec"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
)

var crudVerbs = metav1.Verbs{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}

// subresourceKinds gives the kind (and group version, when it differs from
// the parent's) each subresource speaks, and its verbs.
var subresourceKinds = map[string]struct {
	gvk   schema.GroupVersionKind
	verbs metav1.Verbs
}{
	"status":   {verbs: metav1.Verbs{"get", "patch", "update"}},
	"scale":    {gvk: scaleGVK, verbs: metav1.Verbs{"get", "patch", "update"}},
	"binding":  {gvk: schema.GroupVersionKind{Version: "v1", Kind: "Binding"}, verbs: metav1.Verbs{"create"}},
	"finalize": {verbs: metav1.Verbs{"update"}},
	// A pod's spec.ephemeralContainers, the only part it changes.
	"ephemeralcontainers": {verbs: metav1.Verbs{"get", "patch", "update"}},
	// A pod's containers' resources, the only part it changes.
	"resize":   {verbs: metav1.Verbs{"get", "patch", "update"}},
	"eviction": {gvk: schema.GroupVersionKind{Group: "policy", Version: "v1", Kind: "Eviction"}, verbs: metav1.Verbs{"create"}},
	"token":    {gvk: tokenRequestGVK, verbs: metav1.Verbs{"create"}},
	// Served by the pod's node, through the API server.
	"log":         {verbs: metav1.Verbs{"get"}},
	"exec":        {gvk: schema.GroupVersionKind{Version: "v1", Kind: "PodExecOptions"}, verbs: metav1.Verbs{"create", "get"}},
	"attach":      {gvk: schema.GroupVersionKind{Version: "v1", Kind: "PodAttachOptions"}, verbs: metav1.Verbs{"create", "get"}},
	"portforward": {gvk: schema.GroupVersionKind{Version: "v1", Kind: "PodPortForwardOptions"}, verbs: metav1.Verbs{"create", "get"}},
	// The pod's journey through the cluster (podtrace.Explanation).
	"explain": {verbs: metav1.Verbs{"get"}},
	// Kind <parent kind>ProxyOptions.
	"proxy": {verbs: metav1.Verbs{"create", "delete", "get", "patch", "update"}},
}

// groupVersions lists the served group versions, the legacy core group
// first and the others sorted.
// GroupVersions are the group versions the server serves itself, the
// core group first, then by name.
func (s *Server) GroupVersions() []schema.GroupVersion { return s.groupVersions() }

func (s *Server) groupVersions() []schema.GroupVersion {
	var gvs []schema.GroupVersion
	for gv := range s.byGroupVersion {
		gvs = append(gvs, gv)
	}
	sort.Slice(gvs, func(i, j int) bool {
		a, b := gvs[i], gvs[j]
		if (a.Group == "") != (b.Group == "") {
			return a.Group == ""
		}
		if a.Group != b.Group {
			return a.Group < b.Group
		}
		return version.CompareKubeAwareVersionStrings(a.Version, b.Version) > 0
	})
	return gvs
}

// apiGroups are the server's groups (the core one aside), each with its
// versions, the preferred (the most stable, newest) first.
func (s *Server) apiGroups() []metav1.APIGroup {
	var groups []metav1.APIGroup
	for _, gv := range s.groupVersions() {
		if gv.Group == "" {
			continue
		}
		v := metav1.GroupVersionForDiscovery{GroupVersion: gv.String(), Version: gv.Version}
		if n := len(groups); n > 0 && groups[n-1].Name == gv.Group {
			groups[n-1].Versions = append(groups[n-1].Versions, v)
			continue
		}
		groups = append(groups, metav1.APIGroup{TypeMeta: metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"},
			Name: gv.Group, Versions: []metav1.GroupVersionForDiscovery{v}, PreferredVersion: v})
	}
	return groups
}

func (s *Server) serveAPIVersions(w http.ResponseWriter, r *http.Request) {
	codec.WriteJSON(w, http.StatusOK, &metav1.APIVersions{
		TypeMeta: metav1.TypeMeta{Kind: "APIVersions"},
		Versions: []string{"v1"},
		ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{
			{ClientCIDR: "0.0.0.0/0", ServerAddress: serverAddress(r)},
		},
	})
}

func serverAddress(r *http.Request) string {
	if _, _, err := net.SplitHostPort(r.Host); err == nil {
		return r.Host
	}
	return net.JoinHostPort(r.Host, "443")
}

func (s *Server) serveAPIGroupList(w http.ResponseWriter) {
	list := &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}, Groups: s.apiGroups()}
	if s.extensions != nil {
		list.Groups = append(list.Groups, s.extensions.Groups()...)
	}
	codec.WriteJSON(w, http.StatusOK, list)
}

// serveDiscovery answers /api/v1, /apis/<group> and /apis/<group>/<version>;
// it returns false for other paths.
func (s *Server) serveDiscovery(w http.ResponseWriter, r *http.Request) bool {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	var gv schema.GroupVersion
	switch {
	case len(parts) == 2 && parts[0] == "api":
		gv = schema.GroupVersion{Version: parts[1]}
	case len(parts) == 2 && parts[0] == "apis":
		for _, g := range s.apiGroups() {
			if g.Name == parts[1] {
				codec.WriteJSON(w, http.StatusOK, &g)
				return true
			}
		}
		return false
	case len(parts) == 3 && parts[0] == "apis":
		gv = schema.GroupVersion{Group: parts[1], Version: parts[2]}
	default:
		return false
	}
	if s.byGroupVersion[gv] == nil {
		return false
	}
	codec.WriteJSON(w, http.StatusOK, s.resourceList(gv))
	return true
}

func (s *Server) resourceList(gv schema.GroupVersion) *metav1.APIResourceList {
	list := &metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gv.String()}
	for _, res := range s.resources {
		if res.GVK.GroupVersion() != gv {
			continue
		}
		verbs := crudVerbs
		switch {
		case res.ReadOnly:
			verbs = metav1.Verbs{"get", "list"}
		case res.Review != nil:
			verbs = metav1.Verbs{"create"}
		}
		list.APIResources = append(list.APIResources, metav1.APIResource{
			Name: res.Plural, SingularName: res.Singular, Namespaced: res.Namespaced, Kind: res.GVK.Kind,
			Verbs: verbs, ShortNames: res.ShortNames, Categories: res.Categories,
		})
		for _, sub := range res.Subresources {
			k := subresourceKinds[sub]
			ar := metav1.APIResource{Name: res.Plural + "/" + sub, Namespaced: res.Namespaced, Kind: res.GVK.Kind, Verbs: k.verbs}
			if k.gvk.Kind != "" {
				ar.Group, ar.Version, ar.Kind = k.gvk.Group, k.gvk.Version, k.gvk.Kind
			}
			if sub == "proxy" {
				ar.Group, ar.Version, ar.Kind = "", "v1", res.GVK.Kind+"ProxyOptions"
			}
			list.APIResources = append(list.APIResources, ar)
		}
	}
	return list
}
