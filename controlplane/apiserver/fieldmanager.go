package apiserver

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"unicode"

	"github.com/skiff-lab/skiff/controlplane/apiserver/codec"
	"github.com/skiff-lab/skiff/controlplane/apiserver/registry"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/client-go/applyconfigurations"
	"sigs.k8s.io/yaml"
)

// Server-side apply and managedFields, as kube-apiserver has them, with
// k8s.io/apimachinery's field manager over the schemas of the built-in
// kinds that client-go carries (structured-merge-diff): every create and
// update records which manager set which fields; an apply patch
// (application/apply-patch+yaml) merges the fields its manager states,
// refusing with 409 to take fields another manager set unless forced.

// maxManagerLength bounds a field manager's name, as kube-apiserver does.
const maxManagerLength = 128

// typeConverter knows the structure of every built-in kind.
var typeConverter = applyconfigurations.NewTypeConverter(codec.Scheme)

// fieldManagers holds one field manager per resource and subresource,
// made on first use.
type fieldManagers struct {
	mu sync.Mutex
	m  map[string]*managedfields.FieldManager
}

// noDefaults is the field manager's defaulter: skiff's strategies set
// defaults after it, on create and update alike.
type noDefaults struct{}

func (noDefaults) Default(runtime.Object) {}

// fieldManager returns the field manager of res (through sub), or nil for
// kinds that are not stored (reviews, metrics).
func (s *Server) fieldManager(res *registry.Resource, sub string) *managedfields.FieldManager {
	if res.ReadOnly || res.Review != nil {
		return nil
	}
	key := res.GVK.String() + "/" + sub
	s.fields.mu.Lock()
	defer s.fields.mu.Unlock()
	if fm, ok := s.fields.m[key]; ok {
		return fm
	}
	fm, err := managedfields.NewDefaultFieldManager(typeConverter, codec.Scheme, noDefaults{}, codec.Scheme, res.GVK, res.GVK.GroupVersion(), sub, nil)
	if err != nil {
		fm = nil // a kind outside the schemas: its objects keep no managedFields
	}
	if s.fields.m == nil {
		s.fields.m = map[string]*managedfields.FieldManager{}
	}
	s.fields.m[key] = fm
	return fm
}

// managerName is the request's field manager: ?fieldManager=, else what
// its User-Agent starts with, as kube-apiserver names it.
func managerName(r *http.Request) (string, error) {
	name := r.URL.Query().Get("fieldManager")
	if name == "" {
		name, _, _ = strings.Cut(r.UserAgent(), "/")
		if len(name) > maxManagerLength {
			name = name[:maxManagerLength]
		}
		return name, nil
	}
	if len(name) > maxManagerLength {
		return "", apierrors.NewBadRequest(fmt.Sprintf("fieldManager: Too long: may not be more than %d bytes", maxManagerLength))
	}
	for _, c := range name {
		if !unicode.IsPrint(c) {
			return "", apierrors.NewBadRequest(fmt.Sprintf("fieldManager: Invalid value: %q: must only contain printable characters", name))
		}
	}
	return name, nil
}

// trackFields records in obj's managedFields what manager changed from
// live (a new, empty object on create).
func (s *Server) trackFields(req request, live, obj runtime.Object, manager string) runtime.Object {
	fm := s.fieldManager(req.res, req.subresource)
	if fm == nil {
		return obj
	}
	if live == nil {
		live = req.res.NewObj()
	}
	return fm.UpdateNoErrors(live, obj, manager)
}

// isApply says the request is a server-side apply.
func isApply(r *http.Request) bool {
	return r.Method == http.MethodPatch && strings.HasPrefix(r.Header.Get("Content-Type"), string(types.ApplyYAMLPatchType))
}

// applyTo merges an apply patch into live for manager.
func (s *Server) applyTo(req request, live runtime.Object, patch []byte, manager string, force bool) (runtime.Object, error) {
	fm := s.fieldManager(req.res, req.subresource)
	if fm == nil {
		return nil, apierrors.NewMethodNotSupported(req.res.GroupResource(), "apply")
	}
	applied := &unstructured.Unstructured{Object: map[string]any{}}
	if err := yaml.Unmarshal(patch, &applied.Object); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("error decoding patch: %v", err))
	}
	if gvk := applied.GroupVersionKind(); gvk != req.res.GVK {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the apply patch is a %s, the resource takes %s", gvk, req.res.GVK))
	}
	if applied.GetName() != req.name {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", applied.GetName(), req.name))
	}
	return fm.Apply(live, applied, manager, force)
}
