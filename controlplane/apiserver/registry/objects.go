package registry

import (
	"reflect"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ObjectMeta is the metadata of a served object.
func ObjectMeta(obj runtime.Object) *metav1.ObjectMeta {
	return obj.(metav1.ObjectMetaAccessor).GetObjectMeta().(*metav1.ObjectMeta)
}

// Now is the server's clock, at the second precision objects keep.
func Now() metav1.Time { return metav1.NewTime(time.Now().Truncate(time.Second)) }

// EqualField reports whether a and b (structs of one type) hold equal
// values in their field called name (true when there is none).
func EqualField(a, b runtime.Object, name string) bool {
	fa, fb := reflect.ValueOf(a).Elem().FieldByName(name), reflect.ValueOf(b).Elem().FieldByName(name)
	if !fa.IsValid() {
		return true
	}
	return reflect.DeepEqual(fa.Interface(), fb.Interface())
}

// Invalid is a 422 naming every field error.
func Invalid(gk schema.GroupKind, name string, errs field.ErrorList) error {
	return apierrors.NewInvalid(gk, name, errs)
}
