package apiserver

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/skiff-lab/skiff/controlplane/apiserver/codec"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericrequest "k8s.io/apiserver/pkg/endpoints/request"
)

// Extensions serve the API groups the server does not serve itself
// (package crds: CustomResourceDefinitions and their custom resources), as
// kube-apiserver delegates to the apiextensions-apiserver behind it. They
// get requests authenticated and authorized, with the user in the context.
type Extensions interface {
	http.Handler
	// Groups are the groups they serve, for the API group list.
	Groups() []metav1.APIGroup
}

// SetExtensions installs the server behind this one; it is called before
// Serve.
func (s *Server) SetExtensions(e Extensions) { s.extensions = e }

// NotFound answers a path nothing serves, with the NotFound Status the
// server gives for any such path.
func (s *Server) NotFound() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { codec.WriteError(w, errNotServed) })
}

// Authorize decides attrs as the server decides requests (system:masters
// and the installed authorizer), for the extensions' CEL authorizer.
func (s *Server) Authorize(ctx context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	allowed, reason, err := s.decide(ctx, attrs)
	if allowed {
		return authorizer.DecisionAllow, reason, err
	}
	return authorizer.DecisionNoOpinion, reason, err
}

// ConditionsAwareAuthorize is Authorize's decision: the server's
// authorizers set no conditions.
func (s *Server) ConditionsAwareAuthorize(ctx context.Context, attrs authorizer.Attributes) authorizer.ConditionsAwareDecision {
	return authorizer.ConditionsAwareDecisionFromParts(s.Authorize(ctx, attrs))
}

// EvaluateConditions fails closed, as an authorizer without conditions
// must.
func (s *Server) EvaluateConditions(context.Context, authorizer.ConditionsAwareDecision, authorizer.ConditionsData) (authorizer.Decision, string, error) {
	return authorizer.DecisionDeny, "", authorizer.ErrorConditionEvaluationNotSupported
}

// delegated says whether path is under /apis/<group> of a group the
// extensions serve: one the server does not serve itself.
func (s *Server) delegated(path string) bool {
	if s.extensions == nil {
		return false
	}
	parts := strings.Split(strings.Trim(path, "/"), "/")
	return len(parts) >= 2 && parts[0] == "apis" && !s.groups.Has(parts[1])
}

var extensionRequests = &genericrequest.RequestInfoFactory{APIPrefixes: sets.NewString("api", "apis"), GrouplessAPIPrefixes: sets.NewString("api")}

// extensionAttributes describes a delegated request as kube-apiserver's
// request info does, for the authorizer.
func extensionAttributes(r *http.Request, u user.Info) (authorizer.AttributesRecord, error) {
	info, err := extensionRequests.NewRequestInfo(r)
	if err != nil {
		return authorizer.AttributesRecord{}, err
	}
	return authorizer.AttributesRecord{
		User: u, Verb: info.Verb, Path: info.Path, ResourceRequest: info.IsResourceRequest,
		APIGroup: info.APIGroup, APIVersion: info.APIVersion, Resource: info.Resource, Subresource: info.Subresource,
		Namespace: info.Namespace, Name: info.Name,
	}, nil
}

// getFrom asks h for path as the server itself (its OpenAPI documents), in
// memory, and returns the body and its ETag.
func getFrom(h http.Handler, path string) (body []byte, etag string, err error) {
	r, err := http.NewRequest(http.MethodGet, path, nil)
	if err != nil {
		return nil, "", err
	}
	r.Header.Set("Accept", "application/json")
	rec := &recorder{header: http.Header{}, code: http.StatusOK}
	h.ServeHTTP(rec, r.WithContext(genericrequest.WithUser(r.Context(), &user.DefaultInfo{Name: user.APIServerUser, Groups: []string{user.SystemPrivilegedGroup}})))
	if rec.code != http.StatusOK {
		return nil, "", fmt.Errorf("GET %s from the extensions: %d %s", path, rec.code, strings.TrimSpace(rec.body.String()))
	}
	return rec.body.Bytes(), rec.header.Get("ETag"), nil
}

// recorder is an in-memory http.ResponseWriter.
type recorder struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header         { return r.header }
func (r *recorder) Write(b []byte) (int, error) { return r.body.Write(b) }
func (r *recorder) WriteHeader(code int)        { r.code = code }
