package apiserver

import (
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// apiResource finds name in a discovery list.
func apiResource(list *metav1.APIResourceList, name string) (metav1.APIResource, bool) {
	for _, r := range list.APIResources {
		if r.Name == name {
			return r, true
		}
	}
	return metav1.APIResource{}, false
}

func TestGroupVersions(t *testing.T) {
	s := newTestServer(t)
	want := []schema.GroupVersion{{Version: "v1"}, {Group: "admissionregistration.k8s.io", Version: "v1"}, {Group: "apps", Version: "v1"}, {Group: "authentication.k8s.io", Version: "v1"}, {Group: "authorization.k8s.io", Version: "v1"},
		{Group: "autoscaling", Version: "v2"}, {Group: "autoscaling", Version: "v1"}, {Group: "batch", Version: "v1"}, {Group: "certificates.k8s.io", Version: "v1"}, {Group: "coordination.k8s.io", Version: "v1"},
		{Group: "discovery.k8s.io", Version: "v1"}, {Group: "events.k8s.io", Version: "v1"}, {Group: "flowcontrol.apiserver.k8s.io", Version: "v1"}, {Group: "metrics.k8s.io", Version: "v1beta1"},
		{Group: "networking.k8s.io", Version: "v1"}, {Group: "node.k8s.io", Version: "v1"}, {Group: "policy", Version: "v1"}, {Group: "rbac.authorization.k8s.io", Version: "v1"},
		{Group: "resource.k8s.io", Version: "v1"}, {Group: "scheduling.k8s.io", Version: "v1"}, {Group: "storage.k8s.io", Version: "v1"}, {Group: "storagemigration.k8s.io", Version: "v1"}}
	if got := s.groupVersions(); !slices.Equal(got, want) {
		t.Errorf("groupVersions = %v, want %v", got, want)
	}
}

func TestResourceListShortNamesAndCategories(t *testing.T) {
	s := newTestServer(t)
	core, apps := s.resourceList(corev1.SchemeGroupVersion), s.resourceList(appsv1.SchemeGroupVersion)
	tests := []struct {
		list       *metav1.APIResourceList
		name       string
		shortNames []string
		categories []string
		namespaced bool
	}{
		{core, "pods", []string{"po"}, []string{"all"}, true},
		{core, "services", []string{"svc"}, []string{"all"}, true},
		{core, "namespaces", []string{"ns"}, nil, false},
		{core, "nodes", []string{"no"}, nil, false},
		{core, "endpoints", []string{"ep"}, nil, true},
		{core, "events", []string{"ev"}, nil, true},
		{core, "configmaps", []string{"cm"}, nil, true},
		{core, "serviceaccounts", []string{"sa"}, nil, true},
		{core, "secrets", nil, nil, true},
		{apps, "deployments", []string{"deploy"}, []string{"all"}, true},
		{apps, "replicasets", []string{"rs"}, []string{"all"}, true},
		{core, "replicationcontrollers", []string{"rc"}, []string{"all"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, ok := apiResource(tt.list, tt.name)
			if !ok {
				t.Fatalf("%s not in %s discovery", tt.name, tt.list.GroupVersion)
			}
			if !slices.Equal(r.ShortNames, tt.shortNames) || !slices.Equal(r.Categories, tt.categories) || r.Namespaced != tt.namespaced {
				t.Errorf("%s: shortNames %v categories %v namespaced %v", tt.name, r.ShortNames, r.Categories, r.Namespaced)
			}
			if !slices.Equal(r.Verbs, crudVerbs) {
				t.Errorf("%s: verbs %v", tt.name, r.Verbs)
			}
		})
	}
}

func TestResourceListSubresources(t *testing.T) {
	s := newTestServer(t)
	core, apps := s.resourceList(corev1.SchemeGroupVersion), s.resourceList(appsv1.SchemeGroupVersion)
	tests := []struct {
		list                 *metav1.APIResourceList
		name                 string
		group, version, kind string
		verbs                []string
	}{
		{apps, "deployments/scale", "autoscaling", "v1", "Scale", []string{"get", "patch", "update"}},
		{apps, "replicasets/scale", "autoscaling", "v1", "Scale", []string{"get", "patch", "update"}},
		{core, "replicationcontrollers/scale", "autoscaling", "v1", "Scale", []string{"get", "patch", "update"}},
		{core, "replicationcontrollers/status", "", "", "ReplicationController", []string{"get", "patch", "update"}},
		{apps, "deployments/status", "", "", "Deployment", []string{"get", "patch", "update"}},
		{core, "pods/status", "", "", "Pod", []string{"get", "patch", "update"}},
		{core, "pods/binding", "", "v1", "Binding", []string{"create"}},
		{core, "pods/eviction", "policy", "v1", "Eviction", []string{"create"}},
		{core, "namespaces/status", "", "", "Namespace", []string{"get", "patch", "update"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, ok := apiResource(tt.list, tt.name)
			if !ok {
				t.Fatalf("%s not in %s discovery", tt.name, tt.list.GroupVersion)
			}
			if r.Group != tt.group || r.Version != tt.version || r.Kind != tt.kind || !slices.Equal(r.Verbs, tt.verbs) {
				t.Errorf("%s = group %q version %q kind %q verbs %v", tt.name, r.Group, r.Version, r.Kind, r.Verbs)
			}
		})
	}
	if _, ok := apiResource(core, "deployments"); ok {
		t.Error("core discovery lists deployments")
	}
}

// kube-apiserver lists namespaces/finalize with the one verb it serves.
func TestResourceListNamespaceFinalizeVerbs(t *testing.T) {
	s := newTestServer(t)
	r, ok := apiResource(s.resourceList(corev1.SchemeGroupVersion), "namespaces/finalize")
	if !ok || !slices.Equal(r.Verbs, []string{"update"}) {
		t.Errorf("namespaces/finalize = %+v, want verbs [update]", r)
	}
}

// openAPIOp decodes the operation of method on path from an OpenAPI
// document, as a client would read it.
type openAPIOp struct {
	OperationID string              `json:"operationId"`
	Parameters  []openAPIParamEntry `json:"parameters"`
	GVK         map[string]string   `json:"x-kubernetes-group-version-kind"`
	Action      string              `json:"x-kubernetes-action"`
}

type openAPIParamEntry struct {
	Name string `json:"name"`
	In   string `json:"in"`
}

func TestOpenAPIDocument(t *testing.T) {
	s := newTestServer(t)
	tests := []struct {
		gv           schema.GroupVersion
		path, method string
		action       string
		gvk          map[string]string
		param        string
	}{
		{appsv1.SchemeGroupVersion, "/apis/apps/v1/namespaces/{namespace}/deployments/{name}", "patch", "patch",
			map[string]string{"group": "apps", "version": "v1", "kind": "Deployment"}, "fieldValidation"},
		{appsv1.SchemeGroupVersion, "/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale", "patch", "patch",
			map[string]string{"group": "apps", "version": "v1", "kind": "Deployment"}, "fieldValidation"},
		{appsv1.SchemeGroupVersion, "/apis/apps/v1/namespaces/{namespace}/replicasets", "get", "list",
			map[string]string{"group": "apps", "version": "v1", "kind": "ReplicaSet"}, "labelSelector"},
		{corev1.SchemeGroupVersion, "/api/v1/nodes/{name}", "patch", "patch",
			map[string]string{"group": "", "version": "v1", "kind": "Node"}, "fieldValidation"},
		{corev1.SchemeGroupVersion, "/api/v1/namespaces/{namespace}/pods/{name}", "delete", "delete",
			map[string]string{"group": "", "version": "v1", "kind": "Pod"}, "gracePeriodSeconds"},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			full, err := s.openAPIDocument(tt.gv)
			if err != nil {
				t.Fatal(err)
			}
			data, err := json.Marshal(full)
			if err != nil {
				t.Fatal(err)
			}
			var doc struct {
				OpenAPI string                          `json:"openapi"`
				Paths   map[string]map[string]openAPIOp `json:"paths"`
			}
			if err := json.Unmarshal(data, &doc); err != nil {
				t.Fatal(err)
			}
			if doc.OpenAPI != "3.0.0" {
				t.Errorf("openapi = %q", doc.OpenAPI)
			}
			op, ok := doc.Paths[tt.path][tt.method]
			if !ok {
				t.Fatalf("no %s %s in %v", tt.method, tt.path, slices.Sorted(maps.Keys(doc.Paths)))
			}
			if op.Action != tt.action || !maps.Equal(op.GVK, tt.gvk) {
				t.Errorf("action %q gvk %v, want %q %v", op.Action, op.GVK, tt.action, tt.gvk)
			}
			if !slices.Contains(op.Parameters, openAPIParamEntry{Name: tt.param, In: "query"}) {
				t.Errorf("parameters %v lack query parameter %s", op.Parameters, tt.param)
			}
		})
	}
}

func TestOpenAPIDocumentOnlyItsGroupVersion(t *testing.T) {
	s := newTestServer(t)
	doc, err := s.openAPIDocument(appsv1.SchemeGroupVersion)
	if err != nil {
		t.Fatal(err)
	}
	for path := range doc.Paths.Paths {
		if !strings.HasPrefix(path, "/apis/apps/v1/") {
			t.Errorf("apps/v1 document has path %s", path)
		}
	}
}

// TestOpenAPISchemas: a group version's document carries its kinds'
// schemas, marked with their group, version and kind (what kubectl
// explain looks them up by), and its operations refer to them; the v2
// document has every kind's definition.
func TestOpenAPISchemas(t *testing.T) {
	s := newTestServer(t)
	doc, err := s.openAPIDocument(appsv1.SchemeGroupVersion)
	if err != nil {
		t.Fatal(err)
	}
	deployment := doc.Components.Schemas["io.k8s.api.apps.v1.Deployment"]
	if deployment == nil {
		t.Fatalf("no Deployment schema in %v", slices.Sorted(maps.Keys(doc.Components.Schemas)))
	}
	if spec := deployment.Properties["spec"]; len(spec.AllOf) != 1 || spec.AllOf[0].Ref.String() != "#/components/schemas/io.k8s.api.apps.v1.DeploymentSpec" {
		t.Errorf("Deployment's spec: %+v", spec)
	}
	gvks, _ := json.Marshal(deployment.Extensions["x-kubernetes-group-version-kind"])
	if string(gvks) != `[{"group":"apps","kind":"Deployment","version":"v1"}]` {
		t.Errorf("Deployment's x-kubernetes-group-version-kind: %s", gvks)
	}
	if doc.Components.Schemas["io.k8s.api.core.v1.PodTemplateSpec"] == nil {
		t.Errorf("no schema for PodTemplateSpec, which Deployment refers to")
	}
	get := doc.Paths.Paths["/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale"].Get
	if ref := get.Responses.StatusCodeResponses[200].Content["application/json"].Schema.Ref.String(); ref != "#/components/schemas/io.k8s.api.autoscaling.v1.Scale" {
		t.Errorf("GET scale answers %s", ref)
	}
	v2, err := s.openAPIV2()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"io.k8s.api.core.v1.Pod", "io.k8s.api.rbac.v1.ClusterRole", "io.k8s.apimachinery.pkg.apis.meta.v1.Status"} {
		if _, ok := v2.Definitions[name]; !ok {
			t.Errorf("v2 has no definition %s", name)
		}
	}
}

// TestAggregatedDiscovery: /apis answers the aggregated document to a
// client that asks for it (each group's resources with their scope, kind
// and subresources), and the group list to one that does not; /api
// likewise for the core group.
func TestAggregatedDiscovery(t *testing.T) {
	s := newTestServer(t)
	get := func(h http.Handler, accept string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodGet, "/apis", nil)
		r.Header.Set("Accept", accept)
		h.ServeHTTP(rec, r)
		return rec
	}
	const aggregatedV2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
	var list apidiscoveryv2.APIGroupDiscoveryList
	if err := json.Unmarshal(get(s.discovery.apisHandler, aggregatedV2).Body.Bytes(), &list); err != nil {
		t.Fatal(err)
	}
	var deployments *apidiscoveryv2.APIResourceDiscovery
	for _, g := range list.Items {
		for _, v := range g.Versions {
			for i, r := range v.Resources {
				if g.Name == "apps" && r.Resource == "deployments" {
					deployments = &v.Resources[i]
				}
			}
		}
	}
	if deployments == nil {
		t.Fatalf("no apps deployments in %+v", list)
	}
	if deployments.Scope != apidiscoveryv2.ScopeNamespace || deployments.ResponseKind.Kind != "Deployment" || len(deployments.Subresources) < 2 {
		t.Errorf("deployments: %+v", deployments)
	}
	for _, sub := range deployments.Subresources {
		if sub.Subresource == "scale" && (sub.ResponseKind.Group != "autoscaling" || sub.ResponseKind.Kind != "Scale") {
			t.Errorf("deployments/scale answers %v", sub.ResponseKind)
		}
	}
	if body := get(s.discovery.apisHandler, "application/json").Body.String(); !strings.Contains(body, `"kind":"APIGroupList"`) {
		t.Errorf("/apis without aggregated Accept: %.200s", body)
	}
	if body := get(s.discovery.legacyAPIHandle, aggregatedV2).Body.String(); !strings.Contains(body, `"resource":"pods"`) {
		t.Errorf("/api aggregated: %.200s", body)
	}
}
