package garbagecollector_test

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensions "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/skiff-lab/skiff/controlplane/servertest"
)

var gadgets = schema.GroupVersionResource{Group: "gc.example.com", Version: "v1", Resource: "gadgets"}

// testLaterCRD checks that objects of a resource that came after the
// collector's first discovery are collected, both ways: a gadget whose
// owner goes, and a ConfigMap whose gadget owner goes.
func testLaterCRD(t *testing.T, s *servertest.Server) {
	ctx := t.Context()
	c := s.Client()
	ext := apiextensions.NewForConfigOrDie(s.RESTConfig())
	createGadgetCRD(t, ext)
	ns := namespace(t, c, "gc-later-crd")
	dyn := dynamic.NewForConfigOrDie(s.RESTConfig()).Resource(gadgets).Namespace(ns)

	owner := configMap(t, c, ns, "owner")
	owned := gadget("owned", metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID})
	if _, err := dyn.Create(ctx, owned, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ownerGadget, err := dyn.Create(ctx, gadget("owner"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dependent := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dependent", OwnerReferences: []metav1.OwnerReference{{
		APIVersion: "gc.example.com/v1", Kind: "Gadget", Name: ownerGadget.GetName(), UID: ownerGadget.GetUID(),
	}}}}
	if _, err := c.CoreV1().ConfigMaps(ns).Create(ctx, dependent, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	if err := c.CoreV1().ConfigMaps(ns).Delete(ctx, owner.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := dyn.Delete(ctx, ownerGadget.GetName(), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, "the gadget of the deleted ConfigMap gone", func(ctx context.Context) (bool, string) {
		_, err := dyn.Get(ctx, "owned", metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	poll(t, "the ConfigMap of the deleted gadget gone", func(ctx context.Context) (bool, string) {
		_, err := c.CoreV1().ConfigMaps(ns).Get(ctx, "dependent", metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	if err := ext.ApiextensionsV1().CustomResourceDefinitions().Delete(ctx, "gadgets.gc.example.com", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

func createGadgetCRD(t *testing.T, ext apiextensions.Interface) {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "gadgets.gc.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "gc.example.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "gadgets", Singular: "gadget", Kind: "Gadget", ListKind: "GadgetList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: new(true),
				}},
			}},
		},
	}
	if _, err := ext.ApiextensionsV1().CustomResourceDefinitions().Create(t.Context(), crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, "the gadget CRD established", func(ctx context.Context) (bool, string) {
		got, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, cond := range got.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				return true, ""
			}
		}
		return false, fmt.Sprint(got.Status.Conditions)
	})
}

func gadget(name string, owners ...metav1.OwnerReference) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "gc.example.com/v1", "kind": "Gadget"}}
	u.SetName(name)
	u.SetOwnerReferences(owners)
	return u
}
