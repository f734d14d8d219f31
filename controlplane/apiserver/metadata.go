package apiserver

import (
	"mime"
	"net/http"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Clients that ask for metadata only (client-go's metadata client, whose
// informers the garbage collector uses) get each object as a
// meta.k8s.io/v1 PartialObjectMetadata, and lists as a
// PartialObjectMetadataList, in JSON or protobuf, as from kube-apiserver.

var (
	partialGVK     = metav1.SchemeGroupVersion.WithKind("PartialObjectMetadata")
	partialListGVK = metav1.SchemeGroupVersion.WithKind("PartialObjectMetadataList")
)

// acceptsMetadata reports whether the Accept header asks for
// PartialObjectMetadata (or its list) before anything else.
func acceptsMetadata(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		media, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil || (media != mediaJSON && media != mediaProtobuf) {
			continue
		}
		as := params["as"]
		return (as == partialGVK.Kind || as == partialListGVK.Kind) && params["g"] == metav1.GroupName &&
			(params["v"] == "v1" || params["v"] == "v1beta1")
	}
	return false
}

// partialMetadata is obj's metadata alone.
func partialMetadata(obj runtime.Object) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{Kind: partialGVK.Kind, APIVersion: partialGVK.GroupVersion().String()},
		ObjectMeta: *objectMeta(obj),
	}
}

// partialList is items' metadata alone, as a list.
func partialList(items []runtime.Object, lm metav1.ListMeta) *metav1.PartialObjectMetadataList {
	list := &metav1.PartialObjectMetadataList{ListMeta: lm, Items: make([]metav1.PartialObjectMetadata, len(items))}
	for i, obj := range items {
		list.Items[i] = *partialMetadata(obj)
	}
	return list
}
