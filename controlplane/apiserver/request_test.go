package apiserver

import (
	"net/http/httptest"
	"testing"

	"github.com/skiff-lab/skiff/controlplane/apiserver/registry"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

func TestParseResourcePath(t *testing.T) {
	s := newTestServer(t)
	// What is not served is a missing resource, never a missing object.
	notServed := func(err error) bool {
		return apierrors.IsNotFound(err) && err.Error() == "the server could not find the requested resource"
	}
	type want struct {
		plural, namespace, name, subresource, verb string
	}
	tests := []struct {
		method, target string
		want           want
		notResource    bool
		wantErr        func(error) bool
	}{
		{method: "GET", target: "/api/v1/pods", want: want{plural: "pods", verb: "list"}},
		{method: "GET", target: "/api/v1/namespaces/ns1/pods", want: want{plural: "pods", namespace: "ns1", verb: "list"}},
		{method: "GET", target: "/api/v1/namespaces/ns1/pods/p", want: want{plural: "pods", namespace: "ns1", name: "p", verb: "get"}},
		{method: "PUT", target: "/api/v1/namespaces/ns1/pods/p/status", want: want{"pods", "ns1", "p", "status", "update"}},
		{method: "PATCH", target: "/api/v1/namespaces/ns1/pods/p/status", want: want{"pods", "ns1", "p", "status", "patch"}},
		{method: "POST", target: "/api/v1/namespaces/ns1/pods/p/binding", want: want{"pods", "ns1", "p", "binding", "create"}},
		{method: "POST", target: "/api/v1/namespaces/ns1/pods/p/eviction", want: want{"pods", "ns1", "p", "eviction", "create"}},
		{method: "GET", target: "/api/v1/namespaces/foo", want: want{plural: "namespaces", name: "foo", verb: "get"}},
		{method: "GET", target: "/api/v1/namespaces", want: want{plural: "namespaces", verb: "list"}},
		{method: "PUT", target: "/api/v1/namespaces/foo/finalize", want: want{"namespaces", "", "foo", "finalize", "update"}},
		{method: "GET", target: "/api/v1/namespaces/foo/status", want: want{"namespaces", "", "foo", "status", "get"}},
		{method: "GET", target: "/apis/apps/v1/namespaces/x/deployments/d/scale", want: want{"deployments", "x", "d", "scale", "get"}},
		{method: "PATCH", target: "/apis/apps/v1/namespaces/x/deployments/d/scale", want: want{"deployments", "x", "d", "scale", "patch"}},
		{method: "GET", target: "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases", want: want{plural: "leases", namespace: "kube-node-lease", verb: "list"}},
		{method: "GET", target: "/api/v1/nodes/n1/", want: want{plural: "nodes", name: "n1", verb: "get"}},
		{method: "GET", target: "/api/v1/pods?watch=1", want: want{plural: "pods", verb: "watch"}},
		{method: "GET", target: "/api/v1/namespaces/ns1/pods?watch=true", want: want{plural: "pods", namespace: "ns1", verb: "watch"}},
		{method: "GET", target: "/api/v1/namespaces/ns1/pods?watch=false", want: want{plural: "pods", namespace: "ns1", verb: "list"}},
		{method: "POST", target: "/api/v1/namespaces/ns1/pods", want: want{plural: "pods", namespace: "ns1", verb: "create"}},
		{method: "DELETE", target: "/api/v1/namespaces/ns1/pods", want: want{plural: "pods", namespace: "ns1", verb: "deletecollection"}},
		{method: "DELETE", target: "/api/v1/namespaces/ns1/pods/p", want: want{plural: "pods", namespace: "ns1", name: "p", verb: "delete"}},

		{method: "GET", target: "/healthz", notResource: true},
		{method: "GET", target: "/api", notResource: true},
		{method: "GET", target: "/api/v1", notResource: true},
		{method: "GET", target: "/apis/apps/v1", notResource: true},

		{method: "GET", target: "/api/v1/widgets", wantErr: notServed},
		{method: "GET", target: "/apis/apps/v2/deployments", wantErr: notServed},
		{method: "GET", target: "/apis/batch/v1beta1/jobs", wantErr: notServed},
		{method: "GET", target: "/api/v1/namespaces/ns1/pods/p/logs", wantErr: notServed},
		{method: "GET", target: "/api/v1/namespaces/ns1/pods/p/status/extra", wantErr: notServed},
		{method: "GET", target: "/api/v1/namespaces/ns1/configmaps/c/status", wantErr: notServed},
		// Shaped as kubectl create quota, create token and create
		// rolebinding ask, for what is not served.
		{method: "POST", target: "/api/v1/namespaces/limited/widgetquotas", wantErr: notServed},
		{method: "POST", target: "/api/v1/namespaces/default/serviceaccounts/default/widget", wantErr: notServed},
		{method: "POST", target: "/apis/widgets.example.com/v1/namespaces/x/widgetbindings", wantErr: notServed},
		{method: "GET", target: "/api/v1/pods/p", wantErr: apierrors.IsBadRequest},
		{method: "GET", target: "/api/v1/namespaces/ns1/pods/..", wantErr: apierrors.IsBadRequest},
		{method: "GET", target: "/api/v1/namespaces/../pods/x", wantErr: apierrors.IsBadRequest},
		{method: "GET", target: "/api/v1/namespaces/ns1/pods/a%25b", wantErr: apierrors.IsBadRequest},
		{method: "PUT", target: "/api/v1/namespaces/ns1/pods", wantErr: apierrors.IsMethodNotSupported},
		{method: "PATCH", target: "/api/v1/namespaces/ns1/pods", wantErr: apierrors.IsMethodNotSupported},
		{method: "POST", target: "/api/v1/namespaces/ns1/pods/p", wantErr: apierrors.IsMethodNotSupported},
		{method: "DELETE", target: "/api/v1/namespaces/ns1/pods/p/status", wantErr: apierrors.IsMethodNotSupported},
		{method: "OPTIONS", target: "/api/v1/namespaces/ns1/pods/p", wantErr: apierrors.IsMethodNotSupported},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.target, func(t *testing.T) {
			req, ok, err := s.parseResourcePath(httptest.NewRequest(tt.method, tt.target, nil))
			if tt.notResource {
				if ok {
					t.Errorf("parsed as a resource path: %+v", req)
				}
				return
			}
			if !ok {
				t.Fatal("not parsed as a resource path")
			}
			if tt.wantErr != nil {
				if !tt.wantErr(err) {
					t.Errorf("err = %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := want{req.res.Plural, req.namespace, req.name, req.subresource, req.verb}
			if got != tt.want {
				t.Errorf("parsed %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestResourceKeys(t *testing.T) {
	s := newTestServer(t)
	tests := []struct {
		plural, ns, name string
		key, prefix      string
	}{
		{"pods", "default", "web", "/registry/pods/default/web", "/registry/pods/default/"},
		{"pods", "", "", "", "/registry/pods/"},
		{"nodes", "ignored", "n1", "/registry/nodes/n1", "/registry/nodes/"},
		{"deployments", "prod", "api", "/registry/deployments/prod/api", "/registry/deployments/prod/"},
	}
	for _, tt := range tests {
		t.Run(tt.plural+"/"+tt.ns+"/"+tt.name, func(t *testing.T) {
			var res *registry.Resource
			for _, r := range s.resources {
				if r.Plural == tt.plural {
					res = r
				}
			}
			if got := res.Key(tt.ns, tt.name); tt.key != "" && got != tt.key {
				t.Errorf("key = %q, want %q", got, tt.key)
			}
			if got := res.Prefix(tt.ns); got != tt.prefix {
				t.Errorf("prefix = %q, want %q", got, tt.prefix)
			}
		})
	}
}
