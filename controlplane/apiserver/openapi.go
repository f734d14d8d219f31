package apiserver

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"strings"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	"github.com/skiff-lab/skiff/controlplane/apiserver/codec"
	"github.com/skiff-lab/skiff/controlplane/apiserver/registry"
	"github.com/skiff-lab/skiff/controlplane/openapi"
	"google.golang.org/protobuf/proto"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/aggregator"
	"k8s.io/kube-openapi/pkg/handler3"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// The OpenAPI documents: v3, one per group version, with each resource's
// operations, their query parameters (kubectl learns from FieldValidation
// on PATCH that the server validates fields itself) and the schemas of its
// kinds; v2, one document of every kind's definition. The schemas are
// package openapi's, generated from k8s.io/api as kube-apiserver's are.
// The extensions' (CRDs') documents are merged in: their v3 group
// versions listed beside these and served by them, their v2 definitions
// added to these.

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
		s.serveOpenAPIV2(w, r)
		return
	}
	p := strings.TrimPrefix(r.URL.Path, "/openapi/v3")
	if p == "" || p == "/" {
		codec.WriteJSON(w, http.StatusOK, s.openAPIV3Discovery())
		return
	}
	for _, gv := range s.groupVersions() {
		if strings.TrimPrefix(p, "/") == gvPath(gv) {
			doc, err := s.openAPIDocument(gv)
			if err != nil {
				codec.WriteError(w, err)
				return
			}
			codec.WriteJSON(w, http.StatusOK, doc)
			return
		}
	}
	if s.extensions != nil {
		s.extensions.ServeHTTP(w, r)
		return
	}
	http.NotFound(w, r)
}

// openAPIV3Discovery lists the v3 documents: the server's group versions
// and the extensions'.
func (s *Server) openAPIV3Discovery() handler3.OpenAPIV3Discovery {
	discovery := handler3.OpenAPIV3Discovery{Paths: map[string]handler3.OpenAPIV3DiscoveryGroupVersion{}}
	if s.extensions != nil {
		var theirs handler3.OpenAPIV3Discovery
		if body, _, err := getFrom(s.extensions, "/openapi/v3"); err == nil && json.Unmarshal(body, &theirs) == nil {
			maps.Copy(discovery.Paths, theirs.Paths)
		}
	}
	for _, gv := range s.groupVersions() {
		key := gvPath(gv)
		discovery.Paths[key] = handler3.OpenAPIV3DiscoveryGroupVersion{ServerRelativeURL: "/openapi/v3/" + key}
	}
	return discovery
}

func gvPath(gv schema.GroupVersion) string {
	if gv.Group == "" {
		return "api/" + gv.Version
	}
	return "apis/" + gv.Group + "/" + gv.Version
}

func (s *Server) openAPIDocument(gv schema.GroupVersion) (*spec3.OpenAPI, error) {
	paths := map[string]*spec3.Path{}
	var types []string
	for _, res := range s.resources {
		if res.GVK.GroupVersion() != gv {
			continue
		}
		types = append(types, resourceTypes(res)...)
		base := "/" + gvPath(gv)
		if res.Namespaced {
			base += "/namespaces/{namespace}"
		}
		object, status := openapi.TypeName(res.NewObj()), openapi.TypeName(&metav1.Status{})
		op := func(action string, params []*spec3.Parameter) *spec3.Operation {
			answer := object
			switch {
			case action == "list" && res.NewList != nil:
				answer = openapi.TypeName(res.NewList())
			case action == "delete" || action == "deletecollection":
				answer = status
			}
			return openAPIOperation(res.GVK, action, params, answer)
		}
		if res.Review != nil {
			paths[base+"/"+res.Plural] = &spec3.Path{PathProps: spec3.PathProps{Post: op("post", writeParams)}}
			continue
		}
		paths[base+"/"+res.Plural] = &spec3.Path{PathProps: spec3.PathProps{
			Get: op("list", listParams), Post: op("post", writeParams), Delete: op("deletecollection", nil)}}
		item := base + "/" + res.Plural + "/{name}"
		paths[item] = &spec3.Path{PathProps: spec3.PathProps{
			Get: op("get", nil), Put: op("put", writeParams), Patch: op("patch", writeParams),
			Delete: op("delete", queryParams("dryRun", "gracePeriodSeconds", "propagationPolicy"))}}
		for _, sub := range res.Subresources {
			switch sub {
			case "status":
				paths[item+"/"+sub] = &spec3.Path{PathProps: spec3.PathProps{
					Get: op("get", nil), Put: op("put", writeParams), Patch: op("patch", writeParams)}}
			case "scale":
				scale := func(action string, params []*spec3.Parameter) *spec3.Operation {
					return openAPIOperation(res.GVK, action, params, scaleType)
				}
				types = append(types, scaleType)
				paths[item+"/"+sub] = &spec3.Path{PathProps: spec3.PathProps{
					Get: scale("get", nil), Put: scale("put", writeParams), Patch: scale("patch", writeParams)}}
			}
		}
	}
	schemas, err := s.definitions.V3(append(types, metaTypes...)...)
	if err != nil {
		return nil, err
	}
	return &spec3.OpenAPI{Version: "3.0.0",
		Info:       &spec.Info{InfoProps: spec.InfoProps{Title: "skiff", Version: gv.String()}},
		Paths:      &spec3.Paths{Paths: paths},
		Components: &spec3.Components{Schemas: schemas}}, nil
}

// metaTypes are the meta types every group version's operations use.
var metaTypes = []string{openapi.TypeName(&metav1.Status{}), openapi.TypeName(&metav1.DeleteOptions{}), openapi.TypeName(&metav1.WatchEvent{})}

// resourceTypes are the definition names of res's kinds: its object and
// (unless a review) its list.
func resourceTypes(res *registry.Resource) []string {
	types := []string{openapi.TypeName(res.NewObj())}
	if res.NewList != nil {
		types = append(types, openapi.TypeName(res.NewList()))
	}
	return types
}

var scaleType = openapi.TypeName(&autoscalingv1.Scale{})

// openAPIOperation is one operation on a resource of kind gvk, answering
// the type named answer, with the extensions kubectl reads
// (x-kubernetes-group-version-kind, -action).
func openAPIOperation(gvk schema.GroupVersionKind, action string, params []*spec3.Parameter, answer string) *spec3.Operation {
	body := map[string]*spec3.MediaType{"application/json": {MediaTypeProps: spec3.MediaTypeProps{
		Schema: &spec.Schema{SchemaProps: spec.SchemaProps{Ref: spec.MustCreateRef(openapi.RefV3(answer))}}}}}
	ok := &spec3.Response{ResponseProps: spec3.ResponseProps{Description: "OK", Content: body}}
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

// serveOpenAPIV2 answers /openapi/v2: the definitions of every kind served
// here and by the extensions, in protobuf when asked (as kubectl asks).
func (s *Server) serveOpenAPIV2(w http.ResponseWriter, r *http.Request) {
	doc, err := s.openAPIV2()
	if err != nil {
		codec.WriteError(w, err)
		return
	}
	if !strings.Contains(r.Header.Get("Accept"), openAPIV2Protobuf) {
		codec.WriteJSON(w, http.StatusOK, doc)
		return
	}
	data, err := json.Marshal(doc)
	var pb *openapi_v2.Document
	if err == nil {
		pb, err = openapi_v2.ParseDocument(data)
	}
	if err == nil {
		data, err = proto.Marshal(pb)
	}
	if err != nil {
		codec.WriteError(w, err)
		return
	}
	w.Header().Set("Content-Type", openAPIV2ProtobufType)
	_, _ = w.Write(data)
}

// openAPIV2 is the v2 document: the definitions of the server's kinds
// (built once), with the extensions' merged in (merged again only when
// their document's ETag changes, that is when CRDs change).
func (s *Server) openAPIV2() (*spec.Swagger, error) {
	s.openAPIV2Once.Do(func() {
		var types []string
		for _, res := range s.resources {
			types = append(types, resourceTypes(res)...)
		}
		s.openAPIV2Builtin, s.openAPIV2Err = s.definitions.V2(append(types, metaTypes...)...)
	})
	if s.openAPIV2Err != nil || s.extensions == nil {
		return s.openAPIV2Builtin, s.openAPIV2Err
	}
	body, etag, err := getFrom(s.extensions, "/openapi/v2")
	if err != nil {
		return nil, err
	}
	s.openAPIV2Mu.Lock()
	defer s.openAPIV2Mu.Unlock()
	if etag != "" && etag == s.openAPIV2ETag {
		return s.openAPIV2Merged, nil // the extensions' document has not changed
	}
	var theirs spec.Swagger
	if err := json.Unmarshal(body, &theirs); err != nil {
		return nil, fmt.Errorf("the extensions' OpenAPI v2: %w", err)
	}
	merged := *s.openAPIV2Builtin
	merged.Definitions = maps.Clone(s.openAPIV2Builtin.Definitions)
	merged.Paths = &spec.Paths{Paths: map[string]spec.PathItem{}}
	if err := aggregator.MergeSpecsIgnorePathConflictRenamingDefinitionsAndParameters(&merged, &theirs); err != nil {
		return nil, err
	}
	s.openAPIV2Merged, s.openAPIV2ETag = &merged, etag
	return &merged, nil
}
