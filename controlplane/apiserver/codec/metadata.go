package codec

import (
	"net/http"

	"github.com/skiff-lab/skiff/controlplane/apiserver/registry"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Clients that ask for metadata only (client-go's metadata client, whose
// informers the garbage collector uses) get each object as a
// meta.k8s.io/v1 PartialObjectMetadata, and lists as a
// PartialObjectMetadataList, in JSON or protobuf, as from kube-apiserver.

var (
	PartialGVK     = metav1.SchemeGroupVersion.WithKind("PartialObjectMetadata")
	PartialListGVK = metav1.SchemeGroupVersion.WithKind("PartialObjectMetadataList")
)

// AcceptsMetadata reports whether the client asked for
// PartialObjectMetadata (or its list).
func AcceptsMetadata(r *http.Request) bool {
	_, to := NegotiateOutput(r)
	return to != nil && (to.Kind == PartialGVK.Kind || to.Kind == PartialListGVK.Kind)
}

// PartialMetadata is obj's metadata alone.
func PartialMetadata(obj runtime.Object) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{Kind: PartialGVK.Kind, APIVersion: PartialGVK.GroupVersion().String()},
		ObjectMeta: *registry.ObjectMeta(obj),
	}
}

// PartialList is items' metadata alone, as a list.
func PartialList(items []runtime.Object, lm metav1.ListMeta) *metav1.PartialObjectMetadataList {
	list := &metav1.PartialObjectMetadataList{ListMeta: lm, Items: make([]metav1.PartialObjectMetadata, len(items))}
	for i, obj := range items {
		list.Items[i] = *PartialMetadata(obj)
	}
	return list
}
