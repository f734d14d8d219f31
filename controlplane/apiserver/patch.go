package apiserver

import (
	"encoding/json"
	"fmt"
	"mime"
	"net/http"

	"github.com/skiff-lab/skiff/controlplane/apiserver/codec"
	"github.com/skiff-lab/skiff/controlplane/apiserver/registry"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// maxJSONPatchOps bounds the operations of one JSON patch.
const maxJSONPatchOps = 10000

// The JSON patch library copies without a limit unless told one, and a
// few dozen copy operations, each of the document into itself, double it
// past any memory. As kube-apiserver, one patch may copy at most the
// largest request body. (A process-wide setting, made before any patch.)
func init() { jsonpatch.AccumulatedCopySizeLimit = maxBodyBytes }

func (s *Server) patch(w http.ResponseWriter, r *http.Request, req request) error {
	media, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil {
		return codec.UnsupportedMediaType(r.Header.Get("Content-Type"))
	}
	pt := types.PatchType(media)
	switch pt {
	case types.JSONPatchType, types.MergePatchType, types.StrategicMergePatchType, types.ApplyYAMLPatchType:
	default:
		return apierrors.NewGenericServerResponse(http.StatusUnsupportedMediaType, "patch", req.res.GroupResource(), req.name,
			fmt.Sprintf("the body of the request was in an unknown format - accepted media types include: %s, %s, %s, %s",
				types.JSONPatchType, types.MergePatchType, types.StrategicMergePatchType, types.ApplyYAMLPatchType), 0, false)
	}
	body, err := readBody(r)
	if err != nil {
		return err
	}
	if pt == types.ApplyYAMLPatchType {
		return s.apply(w, r, req, body)
	}
	fv, err := codec.ParseFieldValidation(r)
	if err != nil {
		return err
	}
	if req.subresource == "scale" {
		return s.updateScale(w, r, req, func(scale []byte) ([]byte, error) { return applyPatch(pt, scale, body, newScale()) })
	}
	return s.applyUpdate(w, r, req, func(cur runtime.Object) (runtime.Object, error) {
		return patchObject(w, req, pt, body, fv, cur)
	})
}

// patchObject applies a JSON, merge or strategic merge patch to cur, the
// stored object of req, and decodes the result as an update's body: with
// field validation fv (warnings go to w), keeping the name and namespace.
// A patch it refuses is a 4xx status error.
func patchObject(w http.ResponseWriter, req request, pt types.PatchType, patch []byte, fv codec.FieldValidation, cur runtime.Object) (runtime.Object, error) {
	cur.GetObjectKind().SetGroupVersionKind(req.res.GVK)
	original, err := json.Marshal(cur)
	if err != nil {
		return nil, err
	}
	patched, err := applyPatch(pt, original, patch, req.res.NewObj())
	if err != nil {
		return nil, err
	}
	obj := req.res.NewObj()
	if err := codec.DecodeInto(w, codec.StrictJSON, patched, req.res.GVK, obj, fv); err != nil {
		return nil, err
	}
	if err := checkIdentity(req, obj); err != nil {
		return nil, err
	}
	return obj, nil
}

// apply runs a server-side apply: on the stored object, or, when there is
// none, on a new one that is then created.
func (s *Server) apply(w http.ResponseWriter, r *http.Request, req request, body []byte) error {
	if req.subresource == "scale" {
		return apierrors.NewMethodNotSupported(req.res.GroupResource(), "apply")
	}
	manager := r.URL.Query().Get("fieldManager")
	if manager == "" {
		return apierrors.NewBadRequest("PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch")
	}
	force := r.URL.Query().Get("force") == "true"
	err := s.applyUpdate(w, r, req, func(cur runtime.Object) (runtime.Object, error) {
		return s.applyTo(req, cur, body, manager, force)
	})
	if !apierrors.IsNotFound(err) || req.subresource != "" {
		return err
	}
	obj := req.res.NewObj()
	m := registry.ObjectMeta(obj)
	m.Name, m.Namespace = req.name, req.namespace
	if obj, err = s.applyTo(req, obj, body, manager, force); err != nil {
		return err
	}
	managed := registry.ObjectMeta(obj).ManagedFields
	return s.createObject(w, r, req, obj, func(obj runtime.Object) runtime.Object {
		registry.ObjectMeta(obj).ManagedFields = managed // admitCreate cleared what the apply recorded
		return obj
	})
}

// applyPatch applies a patch of type pt to the JSON document original;
// schema is a value of the document's Go type (for strategic merge keys).
func applyPatch(pt types.PatchType, original, patch []byte, schema runtime.Object) ([]byte, error) {
	var out []byte
	var err error
	switch pt {
	case types.JSONPatchType:
		var ops jsonpatch.Patch
		if ops, err = jsonpatch.DecodePatch(patch); err == nil {
			if len(ops) > maxJSONPatchOps {
				return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("the json patch has %d operations, the limit is %d", len(ops), maxJSONPatchOps))
			}
			if err = checkValues(ops); err == nil {
				out, err = ops.Apply(original)
			}
		}
	case types.MergePatchType:
		out, err = jsonpatch.MergePatch(original, patch)
	case types.StrategicMergePatchType:
		out, err = strategicpatch.StrategicMergePatch(original, patch, schema)
	}
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("apply %s: %v", pt, err))
	}
	return out, nil
}

// checkValues refuses an add, replace or test operation without a value,
// which RFC 6902 requires: json-patch v4 dereferences the missing value, a
// nil pointer panic when the path is "" (the whole document).
func checkValues(ops jsonpatch.Patch) error {
	for i, op := range ops {
		switch op.Kind() {
		case "add", "replace", "test":
			if _, ok := op["value"]; !ok {
				return fmt.Errorf("operation %d: %s needs a value", i, op.Kind())
			}
		}
	}
	return nil
}

// setList puts items into a typed list.
func setList(list runtime.Object, items []runtime.Object) error {
	if items == nil {
		items = []runtime.Object{}
	}
	return meta.SetList(list, items)
}
