package apiserver

import (
	"encoding/json"
	"net/http"

	"github.com/skiff-lab/skiff/controlplane/apiserver/codec"
	"github.com/skiff-lab/skiff/controlplane/apiserver/registry"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

var scaleGVK = autoscalingv1.SchemeGroupVersion.WithKind("Scale")

func newScale() runtime.Object { return &autoscalingv1.Scale{} }

func scaleOf(res *registry.Resource, obj runtime.Object) *autoscalingv1.Scale {
	sc := res.Strategy.(registry.Scaler).Scale(obj)
	m := registry.ObjectMeta(obj)
	sc.ObjectMeta = *m.DeepCopy()
	sc.ObjectMeta.Labels, sc.ObjectMeta.Annotations, sc.ObjectMeta.ManagedFields = nil, nil, nil
	sc.ObjectMeta.OwnerReferences, sc.ObjectMeta.Finalizers = nil, nil
	return &sc
}

func writeScale(w http.ResponseWriter, r *http.Request, res *registry.Resource, obj runtime.Object) error {
	writeObject(w, r, http.StatusOK, scaleOf(res, obj), scaleGVK)
	return nil
}

// updateScale changes replicas through the scale subresource: from the
// request body (PUT) or by patching the current Scale (PATCH).
func (s *Server) updateScale(w http.ResponseWriter, r *http.Request, req request, patch func(scale []byte) ([]byte, error)) error {
	var body *autoscalingv1.Scale
	if patch == nil {
		body = &autoscalingv1.Scale{}
		if err := decodeBody(w, r, scaleGVK, body); err != nil {
			return err
		}
		if err := checkIdentity(req, body); err != nil {
			return err
		}
	}
	return s.applyUpdate(w, r, req, func(cur runtime.Object) (runtime.Object, error) {
		sc := body
		if patch != nil {
			current := scaleOf(req.res, cur)
			current.GetObjectKind().SetGroupVersionKind(scaleGVK)
			data, err := json.Marshal(current)
			if err != nil {
				return nil, err
			}
			if data, err = patch(data); err != nil {
				return nil, err
			}
			sc = &autoscalingv1.Scale{}
			if err := codec.DecodeInto(w, codec.StrictJSON, data, scaleGVK, sc, codec.ValidationWarn); err != nil {
				return nil, err
			}
		}
		if sc.ResourceVersion != "" && sc.ResourceVersion != registry.ObjectMeta(cur).ResourceVersion {
			return nil, codec.Conflict(req.res.GroupResource(), req.name)
		}
		registry.ObjectMeta(cur).ResourceVersion = ""
		req.res.Strategy.(registry.Scaler).SetReplicas(cur, sc.Spec.Replicas)
		return cur, nil
	})
}
