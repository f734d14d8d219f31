package controlplane_test

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensions "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	"github.com/skiff-lab/skiff/controlplane/servertest"
)

// widgetCRD is a namespaced CRD with a structural schema, a CEL rule, a
// default, a status subresource and a printer column.
func widgetCRD() *apiextensionsv1.CustomResourceDefinition {
	schema := &apiextensionsv1.JSONSchemaProps{
		Type: "object",
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"spec": {
				Type: "object",
				Properties: map[string]apiextensionsv1.JSONSchemaProps{
					"size":  {Type: "integer", Minimum: ptr.To(1.0)},
					"color": {Type: "string", Default: &apiextensionsv1.JSON{Raw: []byte(`"blue"`)}},
					"max":   {Type: "integer"},
				},
				XValidations: apiextensionsv1.ValidationRules{{Rule: "!has(self.max) || self.size <= self.max", Message: "size must not exceed max"}},
			},
			"status": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"ready": {Type: "boolean"}}},
		},
	}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList", ShortNames: []string{"wd"}},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema:                   &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: schema},
				Subresources:             &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
				AdditionalPrinterColumns: []apiextensionsv1.CustomResourceColumnDefinition{{Name: "Size", Type: "integer", JSONPath: ".spec.size"}},
			}},
		},
	}
}

var widgets = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}

func widget(name string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": name},
		"spec":     spec,
	}}
}

// TestCustomResourceDefinitions: a CRD becomes Established and its group
// appears in discovery; its custom resources are defaulted, validated by
// schema and CEL rule (with kube-apiserver's messages), pruned of unknown
// fields, and keep status apart; deleting the CRD removes its group.
func TestCustomResourceDefinitions(t *testing.T) {
	s, _ := startServer(t)
	ctx := context.Background()
	ext := apiextensions.NewForConfigOrDie(s.RESTConfig())
	bad := widgetCRD()
	bad.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["size"] = apiextensionsv1.JSONSchemaProps{}
	_, err := ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, bad, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "properties[spec].properties[size].type: Required value") {
		t.Fatalf("a CRD with a non-structural schema: %v, want Invalid naming the field without a type", err)
	}
	if _, err := ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, widgetCRD(), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create CRD: %v", err)
	}
	waitEstablished(t, ext, "widgets.example.com")
	disc := discovery.NewDiscoveryClientForConfigOrDie(s.RESTConfig())
	waitFor(t, "example.com/v1 in discovery", func() bool {
		list, err := disc.ServerResourcesForGroupVersion("example.com/v1")
		return err == nil && len(list.APIResources) > 0 && list.APIResources[0].Name == "widgets"
	})
	// client-go asks for the aggregated document, which the CRD server
	// adds its groups to.
	waitFor(t, "widgets in aggregated discovery", func() bool {
		_, lists, err := disc.ServerGroupsAndResources()
		for _, l := range lists {
			if l.GroupVersion == "example.com/v1" && len(l.APIResources) > 0 && l.APIResources[0].Name == "widgets" {
				return err == nil
			}
		}
		return false
	})
	checkWidgetOpenAPI(t, disc)
	groups, err := disc.ServerGroups()
	if err != nil || !hasGroup(groups, "example.com") {
		t.Fatalf("group list: %v %v, want example.com", groups, err)
	}

	dyn := dynamic.NewForConfigOrDie(s.RESTConfig()).Resource(widgets).Namespace("default")
	w := widget("small", map[string]any{"size": int64(2), "unknown": "x"})
	got, err := dyn.Create(ctx, w, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create widget: %v", err)
	}
	if c, _, _ := unstructured.NestedString(got.Object, "spec", "color"); c != "blue" {
		t.Errorf("spec.color = %q, want the default blue", c)
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(got.Object, "spec", "unknown"); found {
		t.Errorf("spec.unknown kept, want it pruned")
	}
	_, err = dyn.Create(ctx, widget("zero", map[string]any{"size": int64(0)}), metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.size") {
		t.Errorf("size 0: %v, want Invalid naming spec.size", err)
	}
	_, err = dyn.Create(ctx, widget("big", map[string]any{"size": int64(5), "max": int64(3)}), metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "size must not exceed max") {
		t.Errorf("CEL rule: %v, want Invalid with the rule's message", err)
	}
	got.Object["status"] = map[string]any{"ready": true}
	if got, err = dyn.Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update: %v", err)
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(got.Object, "status"); found {
		t.Errorf("status written through the main resource")
	}
	got, err = dyn.Patch(ctx, "small", types.MergePatchType, []byte(`{"spec":{"size":3}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatalf("merge patch: %v", err)
	}
	checkWidgetAccess(t, s)
	s.Restart()
	if _, err := dyn.Get(ctx, "small", metav1.GetOptions{}); err != nil {
		t.Fatalf("widget after a restart: %v", err)
	}

	if err := ext.ApiextensionsV1().CustomResourceDefinitions().Delete(ctx, "widgets.example.com", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete CRD: %v", err)
	}
	waitFor(t, "the CRD to go", func() bool {
		_, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, "widgets.example.com", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	if _, err := dyn.Get(ctx, "small", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("widget after its CRD's deletion: %v, want NotFound", err)
	}
}

// checkWidgetOpenAPI: the CRD's schema is published in the OpenAPI v2
// document beside the built-in kinds', and as a v3 document of its own.
func checkWidgetOpenAPI(t *testing.T, disc *discovery.DiscoveryClient) {
	t.Helper()
	waitFor(t, "Widget in /openapi/v2", func() bool {
		doc, err := disc.OpenAPISchema()
		if err != nil {
			return false
		}
		var widget, pod bool
		for _, d := range doc.GetDefinitions().GetAdditionalProperties() {
			widget = widget || d.GetName() == "com.example.v1.Widget"
			pod = pod || d.GetName() == "io.k8s.api.core.v1.Pod"
		}
		return widget && pod
	})
	paths, err := disc.OpenAPIV3().Paths()
	if err != nil {
		t.Fatal(err)
	}
	gv, ok := paths["apis/example.com/v1"]
	if !ok || paths["api/v1"] == nil {
		t.Fatalf("/openapi/v3 lists %v, want apis/example.com/v1 and api/v1", slices.Sorted(maps.Keys(paths)))
	}
	data, err := gv.Schema("application/json")
	if err != nil || !strings.Contains(string(data), `"com.example.v1.Widget"`) || !strings.Contains(string(data), "size must not exceed max") {
		t.Errorf("example.com/v1 v3 document: %v %.300s", err, data)
	}
}

// checkWidgetAccess: custom resources are authorized by RBAC like any
// resource: forbidden until a role grants them.
func checkWidgetAccess(t *testing.T, s *servertest.Server) {
	t.Helper()
	ctx := context.Background()
	alice := dynamic.NewForConfigOrDie(s.UserConfig("alice")).Resource(widgets).Namespace("default")
	_, err := alice.List(ctx, metav1.ListOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `widgets.example.com`) {
		t.Fatalf("alice listing widgets without a role: %v, want Forbidden naming widgets.example.com", err)
	}
	c := s.Client()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "widget-reader"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"example.com"}, Resources: []string{"widgets"}, Verbs: []string{"get", "list"}}}}
	if _, err := c.RbacV1().Roles("default").Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "alice-widgets"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "widget-reader"},
		Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: "alice"}}}
	if _, err := c.RbacV1().RoleBindings("default").Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "alice allowed to list widgets", func() bool {
		_, err := alice.List(ctx, metav1.ListOptions{})
		return err == nil
	})
	if err := alice.Delete(ctx, "small", metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("alice deleting a widget with a read-only role: %v, want Forbidden", err)
	}
}

func waitEstablished(t *testing.T, ext apiextensions.Interface, name string) {
	t.Helper()
	waitFor(t, name+" established", func() bool {
		crd, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		for _, c := range crd.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true
			}
		}
		return false
	})
}

func hasGroup(list *metav1.APIGroupList, name string) bool {
	for _, g := range list.Groups {
		if g.Name == name {
			return true
		}
	}
	return false
}

// TestCustomResourcesGoWithNamespaceAndOwner: the namespace controller and
// the garbage collector find custom resources through discovery, as
// kube-controller-manager's do: a namespace's deletion removes its
// widgets, and a widget goes with the ConfigMap that owns it.
func TestCustomResourcesGoWithNamespaceAndOwner(t *testing.T) {
	if testing.Short() {
		t.Skip("integration: starts etcd, the API server and the controllers")
	}
	s := servertest.Start(t)
	c := s.Client()
	ctx := context.Background()
	ext := apiextensions.NewForConfigOrDie(s.RESTConfig())
	if _, err := ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, widgetCRD(), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create CRD: %v", err)
	}
	waitEstablished(t, ext, "widgets.example.com")
	if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dyn := dynamic.NewForConfigOrDie(s.RESTConfig()).Resource(widgets)
	if _, err := dyn.Namespace("shop").Create(ctx, widget("in-shop", map[string]any{"size": int64(1)}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	owner, err := c.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	owned := widget("owned", map[string]any{"size": int64(1)})
	owned.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}})
	if _, err := dyn.Namespace("default").Create(ctx, owned, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.CoreV1().Namespaces().Delete(ctx, "shop", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.CoreV1().ConfigMaps("default").Delete(ctx, "owner", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "namespace shop to go with its widget", func() bool {
		_, err := c.CoreV1().Namespaces().Get(ctx, "shop", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	waitFor(t, "the owned widget to be collected", func() bool {
		_, err := dyn.Namespace("default").Get(ctx, "owned", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
}
