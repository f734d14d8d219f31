package apiserver

import (
	"fmt"
	"net/http"

	"github.com/skiff-lab/skiff/controlplane/apiserver/codec"
	"github.com/skiff-lab/skiff/controlplane/apiserver/registry"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// bind assigns a pod to a node (pods/binding).
func (s *Server) bind(w http.ResponseWriter, r *http.Request, req request) error {
	binding := &corev1.Binding{}
	if err := decodeBody(w, r, corev1.SchemeGroupVersion.WithKind("Binding"), binding); err != nil {
		return err
	}
	if binding.Name == "" {
		binding.Name = req.name
	}
	if err := checkIdentity(req, binding); err != nil {
		return err
	}
	if binding.Target.Kind != "" && binding.Target.Kind != "Node" {
		return registry.Invalid(corev1.SchemeGroupVersion.WithKind("Binding").GroupKind(), binding.Name,
			field.ErrorList{field.NotSupported(field.NewPath("target", "kind"), binding.Target.Kind, []string{"Node"})})
	}
	if binding.Target.Name == "" {
		return registry.Invalid(corev1.SchemeGroupVersion.WithKind("Binding").GroupKind(), binding.Name,
			field.ErrorList{field.Required(field.NewPath("target", "name"), "")})
	}
	pod := &corev1.Pod{}
	err := s.store.Update(r.Context(), req.res.Key(req.namespace, req.name), pod, func(cur runtime.Object) (runtime.Object, error) {
		p := cur.(*corev1.Pod)
		if p.DeletionTimestamp != nil {
			return nil, apierrors.NewConflict(req.res.GroupResource(), req.name, fmt.Errorf("pod %s is being deleted, cannot be assigned to a host", req.name))
		}
		if p.Spec.NodeName != "" {
			return nil, apierrors.NewConflict(req.res.GroupResource(), req.name, fmt.Errorf("pod %s is already assigned to node %q", req.name, p.Spec.NodeName))
		}
		if binding.UID != "" && binding.UID != p.UID {
			return nil, apierrors.NewConflict(req.res.GroupResource(), req.name, fmt.Errorf("pod uid %s does not match binding", p.UID))
		}
		p.Spec.NodeName = binding.Target.Name
		setPodCondition(&p.Status, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: registry.Now()})
		return p, nil
	})
	if err != nil {
		return codec.StoreError(err, req.res.GroupResource(), req.name)
	}
	codec.WriteJSON(w, http.StatusCreated, codec.SuccessStatus(nil))
	return nil
}

func setPodCondition(status *corev1.PodStatus, c corev1.PodCondition) {
	for i := range status.Conditions {
		if status.Conditions[i].Type == c.Type {
			if status.Conditions[i].Status == c.Status {
				c.LastTransitionTime = status.Conditions[i].LastTransitionTime
			}
			status.Conditions[i] = c
			return
		}
	}
	status.Conditions = append(status.Conditions, c)
}
