package controlplane_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"
)

// TestMetadataClient: client-go's metadata client (protobuf first, as the
// garbage collector's informers use it) gets, lists and watches objects as
// PartialObjectMetadata, with their metadata and nothing else.
func TestMetadataClient(t *testing.T) {
	s, c := startServer(t)
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "meta", Labels: map[string]string{"app": "x"}},
		Data: map[string]string{"big": "not in metadata"}}
	if _, err := c.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mc := metadata.NewForConfigOrDie(s.RESTConfig()).Resource(corev1.SchemeGroupVersion.WithResource("configmaps")).Namespace("default")

	got, err := mc.Get(ctx, "meta", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The metadata client decodes nothing but meta.k8s.io types: a ConfigMap
	// answered in full would have failed to decode.
	if got.Name != "meta" || got.Labels["app"] != "x" || got.UID == "" {
		t.Errorf("get: %+v", got)
	}
	list, err := mc.List(ctx, metav1.ListOptions{LabelSelector: "app=x"})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].Name != "meta" || list.ResourceVersion == "" {
		t.Errorf("list: %+v", list)
	}

	w, err := mc.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if err := c.CoreV1().ConfigMaps("default").Delete(ctx, "meta", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	ev := nextEvent(t, w)
	if m, ok := ev.Object.(*metav1.PartialObjectMetadata); ev.Type != watch.Deleted || !ok || m.Name != "meta" {
		t.Errorf("watch event %s %T %v, want DELETED PartialObjectMetadata meta", ev.Type, ev.Object, ev.Object)
	}
}
