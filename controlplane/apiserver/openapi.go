package apiserver

import (
	"net/http"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The OpenAPI v3 documents describe each resource's operations and their
// query parameters; they carry no schemas. That is what kubectl reads to
// learn that the server validates fields itself (fieldValidation on PATCH),
// and without schemas kubectl apply computes patches from its built-in
// types, as it does for every resource here.

type openAPIParam struct {
	Name   string            `json:"name"`
	In     string            `json:"in"`
	Schema map[string]string `json:"schema"`
}

type openAPIOperation struct {
	OperationID string            `json:"operationId"`
	Parameters  []openAPIParam    `json:"parameters,omitempty"`
	Responses   map[string]any    `json:"responses"`
	GVK         map[string]string `json:"x-kubernetes-group-version-kind"`
	Action      string            `json:"x-kubernetes-action"`
}

func queryParams(names ...string) []openAPIParam {
	out := make([]openAPIParam, len(names))
	for i, n := range names {
		out[i] = openAPIParam{Name: n, In: "query", Schema: map[string]string{"type": "string"}}
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
		paths := map[string]any{}
		for _, gv := range s.groupVersions() {
			key := gvPath(gv)
			paths[key] = map[string]string{"serverRelativeURL": "/openapi/v3/" + key}
		}
		writeJSON(w, http.StatusOK, map[string]any{"paths": paths})
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

func (s *Server) openAPIDocument(gv schema.GroupVersion) map[string]any {
	paths := map[string]any{}
	for _, res := range s.resources {
		if res.gvk.GroupVersion() != gv {
			continue
		}
		base := "/" + gvPath(gv)
		if res.namespaced {
			base += "/namespaces/{namespace}"
		}
		gvk := map[string]string{"group": res.gvk.Group, "version": res.gvk.Version, "kind": res.gvk.Kind}
		op := func(action string, params []openAPIParam) openAPIOperation {
			return openAPIOperation{OperationID: action + res.gvk.Kind, Parameters: params,
				Responses: map[string]any{"200": map[string]string{"description": "OK"}}, GVK: gvk, Action: action}
		}
		paths[base+"/"+res.plural] = map[string]any{
			"get":    op("list", listParams),
			"post":   op("post", writeParams),
			"delete": op("deletecollection", nil),
		}
		item := base + "/" + res.plural + "/{name}"
		paths[item] = map[string]any{
			"get":    op("get", nil),
			"put":    op("put", writeParams),
			"patch":  op("patch", writeParams),
			"delete": op("delete", queryParams("dryRun", "gracePeriodSeconds", "propagationPolicy")),
		}
		for _, sub := range res.subresources {
			if sub == "status" || sub == "scale" {
				paths[item+"/"+sub] = map[string]any{"get": op("get", nil), "put": op("put", writeParams), "patch": op("patch", writeParams)}
			}
		}
	}
	return map[string]any{
		"openapi":    "3.0.0",
		"info":       map[string]string{"title": "skiff", "version": gv.String()},
		"paths":      paths,
		"components": map[string]any{},
	}
}
