package apiserver

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/skiff-lab/skiff/controlplane/apiserver/codec"
	"github.com/skiff-lab/skiff/controlplane/apiserver/registry"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

var tableGVK = metav1.SchemeGroupVersion.WithKind("Table")

// table renders objs as a meta.k8s.io/v1 Table. Each row carries the
// object as includeObject asks: its metadata (the default), all of it, or
// nothing.
func (s *Server) table(r *http.Request, res *registry.Resource, objs []runtime.Object, headers bool) (*metav1.Table, error) {
	include := metav1.IncludeObjectPolicy(r.URL.Query().Get("includeObject"))
	if include == "" {
		include = metav1.IncludeMetadata
	}
	if include != metav1.IncludeMetadata && include != metav1.IncludeObject && include != metav1.IncludeNone {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("includeObject must be None, Metadata or Object, got %q", include))
	}
	t := &metav1.Table{TypeMeta: metav1.TypeMeta{Kind: tableGVK.Kind, APIVersion: tableGVK.GroupVersion().String()}}
	if headers {
		t.ColumnDefinitions = res.Strategy.Columns()
	}
	t.Rows = make([]metav1.TableRow, 0, len(objs))
	for _, obj := range objs {
		row := metav1.TableRow{Cells: res.Strategy.Row(obj)}
		raw, err := rowObject(res, obj, include)
		if err != nil {
			return nil, err
		}
		row.Object = raw
		t.Rows = append(t.Rows, row)
	}
	return t, nil
}

func rowObject(res *registry.Resource, obj runtime.Object, include metav1.IncludeObjectPolicy) (runtime.RawExtension, error) {
	var v any
	switch include {
	case metav1.IncludeNone:
		return runtime.RawExtension{}, nil
	case metav1.IncludeObject:
		obj.GetObjectKind().SetGroupVersionKind(res.GVK)
		v = obj
	default:
		v = codec.PartialMetadata(obj)
	}
	data, err := json.Marshal(v)
	return runtime.RawExtension{Raw: data}, err
}
