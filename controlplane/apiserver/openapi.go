package apiserver

import (
	"net/http"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/handler3"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// The OpenAPI v3 documents describe each resource's operations and their
// query parameters; they carry no schemas. That is what kubectl reads to
// learn that the server validates fields itself (fieldValidation on PATCH),
// and without schemas kubectl apply computes patches from its built-in
// types, as it does for every resource here.

func queryParams(names ...string) []*spec3.Parameter {
	out := make([]*spec3.Parameter, len(names))
	for i, n := range names {
		out[i] = &spec3.Parameter{ParameterProps: spec3.ParameterProps{Name: n, In: "query",
			Schema: &spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"string"}}}}}
	}
	return out
}

var (
	writeParams = queryParams("dryRun", "fieldManager", "fieldValidation", "pretty")
	listParams  = queryParams("allowWatchBookmarks", "continue", "fieldSelector", "labelSelector", "limit",
		"resourceVersion", "resourceVersionMatch", "sendInitialEvents", "timeoutSeconds", "watch")
)

func (s *Server) serveOpenAPI(w http.ResponseWriter, r *http.Request) {
	p := strings.TrimPrefix(r.URL.Path, "/openapi/v3")
	if p == "" || p == "/" {
		discovery := handler3.OpenAPIV3Discovery{Paths: map[string]handler3.OpenAPIV3DiscoveryGroupVersion{}}
		for _, gv := range s.groupVersions() {
			key := gvPath(gv)
			discovery.Paths[key] = handler3.OpenAPIV3DiscoveryGroupVersion{ServerRelativeURL: "/openapi/v3/" + key}
		}
		writeJSON(w, http.StatusOK, discovery)
		return
	}
	for _, gv := range s.groupVersions() {
		if strings.TrimPrefix(p, "/") == gvPath(gv) {
			writeJSON(w, http.StatusOK, s.openAPIDocument(gv))
			return
		}
	}
	http.NotFound(w, r)
}

func gvPath(gv schema.GroupVersion) string {
	if gv.Group == "" {
		return "api/" + gv.Version
	}
	return "apis/" + gv.Group + "/" + gv.Version
}

func (s *Server) openAPIDocument(gv schema.GroupVersion) *spec3.OpenAPI {
	paths := map[string]*spec3.Path{}
	for _, res := range s.resources {
		if res.gvk.GroupVersion() != gv {
			continue
		}
		base := "/" + gvPath(gv)
		if res.namespaced {
			base += "/namespaces/{namespace}"
		}
		op := func(action string, params []*spec3.Parameter) *spec3.Operation {
			return openAPIOperation(res.gvk, action, params)
		}
		if res.review != nil {
			paths[base+"/"+res.plural] = &spec3.Path{PathProps: spec3.PathProps{Post: op("post", writeParams)}}
			continue
		}
		paths[base+"/"+res.plural] = &spec3.Path{PathProps: spec3.PathProps{
			Get: op("list", listParams), Post: op("post", writeParams), Delete: op("deletecollection", nil)}}
		item := base + "/" + res.plural + "/{name}"
		paths[item] = &spec3.Path{PathProps: spec3.PathProps{
			Get: op("get", nil), Put: op("put", writeParams), Patch: op("patch", writeParams),
			Delete: op("delete", queryParams("dryRun", "gracePeriodSeconds", "propagationPolicy"))}}
		for _, sub := range res.subresources {
			if sub == "status" || sub == "scale" {
				paths[item+"/"+sub] = &spec3.Path{PathProps: spec3.PathProps{
					Get: op("get", nil), Put: op("put", writeParams), Patch: op("patch", writeParams)}}
			}
		}
	}
	return &spec3.OpenAPI{Version: "3.0.0",
		Info:       &spec.Info{InfoProps: spec.InfoProps{Title: "skiff", Version: gv.String()}},
		Paths:      &spec3.Paths{Paths: paths},
		Components: &spec3.Components{}}
}

// openAPIOperation is one operation on a resource of kind gvk, with the
// extensions kubectl reads (x-kubernetes-group-version-kind, -action).
func openAPIOperation(gvk schema.GroupVersionKind, action string, params []*spec3.Parameter) *spec3.Operation {
	ok := &spec3.Response{ResponseProps: spec3.ResponseProps{Description: "OK"}}
	return &spec3.Operation{
		OperationProps: spec3.OperationProps{OperationId: action + gvk.Kind, Parameters: params,
			Responses: &spec3.Responses{ResponsesProps: spec3.ResponsesProps{StatusCodeResponses: map[int]*spec3.Response{200: ok}}}},
		VendorExtensible: spec.VendorExtensible{Extensions: spec.Extensions{
			"x-kubernetes-group-version-kind": map[string]string{"group": gvk.Group, "version": gvk.Version, "kind": gvk.Kind},
			"x-kubernetes-action":             action,
		}},
	}
}
