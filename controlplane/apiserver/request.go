package apiserver

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/skiff-lab/skiff/controlplane/apiserver/registry"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	pathvalidation "k8s.io/apimachinery/pkg/api/validation/path"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// request is a parsed resource request.
type request struct {
	res         *registry.Resource
	namespace   string
	name        string
	subresource string
	proxyPath   string // <resource>/<name>/proxy<proxyPath>: "" or from its "/"
	verb        string
}

// parseResourcePath splits /api/v1/... or /apis/<group>/<version>/... into a
// request. ok is false when the path is not a resource path at all.
func (s *Server) parseResourcePath(r *http.Request) (req request, ok bool, err error) {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	var gv schema.GroupVersion
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		gv, parts = schema.GroupVersion{Version: parts[1]}, parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		gv, parts = schema.GroupVersion{Group: parts[1], Version: parts[2]}, parts[3:]
	default:
		return req, false, nil
	}
	resources := s.byGroupVersion[gv]
	if resources == nil {
		return req, true, errNotServed
	}
	if len(parts) >= 3 && parts[0] == "namespaces" && resources[parts[2]] != nil && resources[parts[2]].Namespaced {
		req.namespace, parts = parts[1], parts[2:]
	}
	req.res = resources[parts[0]]
	if req.res != nil && req.res.HasSubresource("proxy") && len(parts) >= 3 && parts[2] == "proxy" {
		if len(parts) > 3 {
			req.proxyPath = "/" + strings.Join(parts[3:], "/")
		}
		parts = parts[:3]
	}
	if req.res == nil || len(parts) > 3 {
		return req, true, errNotServed
	}
	if len(parts) > 1 {
		req.name = parts[1]
	}
	if len(parts) > 2 {
		req.subresource = parts[2]
		if !req.res.HasSubresource(req.subresource) {
			return req, true, errNotServed
		}
	}
	for _, segment := range []string{req.namespace, req.name} {
		if msgs := pathvalidation.IsValidPathSegmentName(segment); segment != "" && len(msgs) > 0 {
			return req, true, apierrors.NewBadRequest(fmt.Sprintf("invalid name %q: %s", segment, msgs[0]))
		}
	}
	if req.res.Namespaced && req.name != "" && req.namespace == "" {
		return req, true, apierrors.NewBadRequest("a namespace is required for namespaced resources")
	}
	req.verb, err = verbOf(r, req)
	return req, true, err
}

// errNotServed answers a path that names no resource or subresource this
// server serves, as kube-apiserver does: 404, "the server could not find
// the requested resource" (not "<resource> not found", which would send
// the user looking for a missing object).
var errNotServed = apierrors.NewGenericServerResponse(http.StatusNotFound, "", schema.GroupResource{}, "", "", 0, false)

func verbOf(r *http.Request, req request) (string, error) {
	collection := req.name == ""
	if req.subresource == "proxy" {
		return proxyVerb(r.Method), nil
	}
	switch r.Method {
	case http.MethodGet:
		switch {
		case !collection:
			return "get", nil
		case isTrue(r.URL.Query().Get("watch")):
			return "watch", nil
		}
		return "list", nil
	case http.MethodPost:
		if collection || req.subresource != "" {
			return "create", nil
		}
	case http.MethodPut:
		if !collection {
			return "update", nil
		}
	case http.MethodPatch:
		if !collection {
			return "patch", nil
		}
	case http.MethodDelete:
		if collection {
			return "deletecollection", nil
		}
		if req.subresource == "" {
			return "delete", nil
		}
	}
	return "", apierrors.NewMethodNotSupported(req.res.GroupResource(), fmt.Sprintf("%s on this path", r.Method))
}

// proxyVerb is the verb of a request through a proxy subresource, which
// takes every method: as kube-apiserver names them.
func proxyVerb(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead:
		return "get"
	case http.MethodPost:
		return "create"
	case http.MethodPut:
		return "update"
	case http.MethodPatch:
		return "patch"
	case http.MethodDelete:
		return "delete"
	}
	return strings.ToLower(method)
}

func isTrue(v string) bool { return v == "true" || v == "1" }
