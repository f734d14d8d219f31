package apiserver

import (
	"net/http"
	"strings"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	"google.golang.org/protobuf/proto"

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
	if r.URL.Path == "/openapi/v2" {
		serveOpenAPIV2(w, r)
		return
	}
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

// openAPIV2Protobuf is the media type clients ask a protobuf OpenAPI v2
// document with; the answer carries openAPIV2ProtobufType, which (no '@')
// parses as a media type.
const (
	openAPIV2Protobuf     = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
	openAPIV2ProtobufType = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
)

// serveOpenAPIV2 answers /openapi/v2 with a Swagger 2.0 document of no
// definitions, in protobuf when asked (as kubectl asks): kubectl falls back
// to it to validate kinds whose v3 paths have no PATCH (the reviews), and
// skips validation of a kind it has no schema for, leaving it to the
// server.
func serveOpenAPIV2(w http.ResponseWriter, r *http.Request) {
	doc := &openapi_v2.Document{Swagger: "2.0", Info: &openapi_v2.Info{Title: "skiff", Version: "v2"},
		Paths: &openapi_v2.Paths{}, Definitions: &openapi_v2.Definitions{}}
	if strings.Contains(r.Header.Get("Accept"), openAPIV2Protobuf) {
		data, err := proto.Marshal(doc)
		if err != nil {
			writeError(w, err)
			return
		}
		w.Header().Set("Content-Type", openAPIV2ProtobufType)
		_, _ = w.Write(data)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"swagger": "2.0", "info": map[string]string{"title": "skiff", "version": "v2"},
		"paths": map[string]any{}, "definitions": map[string]any{}})
}
