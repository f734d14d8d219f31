package controllers

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
)

// HashLabel tells the pods and revisions of an owner's different
// templates apart.
const HashLabel = appsv1.ControllerRevisionHashLabelKey

// ErrRevisionNameTaken is Record's answer when another template holds
// the new revision's name: the owner raises its collisionCount and tries
// again.
var ErrRevisionNameTaken = errors.New("revision name taken by another template")

// History keeps the ControllerRevisions of DaemonSets and StatefulSets:
// one per distinct pod template, numbered in the order the templates were
// last current, which `kubectl rollout history|undo` read.
type History struct {
	Client    kubernetes.Interface
	Revisions appslisters.ControllerRevisionLister
}

// TemplatePatch is what a revision holds, as Kubernetes writes it: the
// strategic merge patch that puts tmpl back (`kubectl rollout undo`
// applies it).
func TemplatePatch(tmpl *corev1.PodTemplateSpec) ([]byte, error) {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(tmpl)
	if err != nil {
		return nil, err
	}
	u["$patch"] = "replace"
	return json.Marshal(map[string]any{"spec": map[string]any{"template": u}})
}

// TemplateOf reads back the template a revision of TemplatePatch holds.
func TemplateOf(rev *appsv1.ControllerRevision) (*corev1.PodTemplateSpec, error) {
	var data struct {
		Spec struct {
			Template corev1.PodTemplateSpec `json:"template"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(rev.Data.Raw, &data); err != nil {
		return nil, err
	}
	return &data.Spec.Template, nil
}

// Owned lists the revisions owner controls, oldest first.
func (h History) Owned(owner metav1.Object) ([]*appsv1.ControllerRevision, error) {
	all, err := h.Revisions.ControllerRevisions(owner.GetNamespace()).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	var owned []*appsv1.ControllerRevision
	for _, r := range all {
		if ref := metav1.GetControllerOfNoCopy(r); ref != nil && ref.UID == owner.GetUID() {
			owned = append(owned, r)
		}
	}
	slices.SortFunc(owned, func(a, b *appsv1.ControllerRevision) int { return int(a.Revision - b.Revision) })
	return owned, nil
}

// Record returns the revision of want's data among revs (owned, oldest
// first), made the newest if it was not (a rollback), or creates want as
// the newest.
func (h History) Record(ctx context.Context, owner metav1.Object, revs []*appsv1.ControllerRevision, want *appsv1.ControllerRevision) (*appsv1.ControllerRevision, error) {
	newest := int64(0)
	var same *appsv1.ControllerRevision
	for _, r := range revs {
		newest = max(newest, r.Revision)
		if sameJSON(r.Data.Raw, want.Data.Raw) {
			same = r
		}
	}
	revisions := h.Client.AppsV1().ControllerRevisions(owner.GetNamespace())
	switch {
	case same != nil && same.Revision == newest:
		return same, nil
	case same != nil:
		next := same.DeepCopy()
		next.Revision = newest + 1
		return revisions.Update(ctx, next, metav1.UpdateOptions{})
	}
	want = want.DeepCopy()
	want.Namespace, want.Revision = owner.GetNamespace(), newest+1
	created, err := revisions.Create(ctx, want, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		return created, err
	}
	existing, err := revisions.Get(ctx, want.Name, metav1.GetOptions{})
	if err == nil && sameJSON(existing.Data.Raw, want.Data.Raw) && metav1.IsControlledBy(existing, owner) {
		return existing, nil
	}
	return nil, ErrRevisionNameTaken
}

// Prune deletes the oldest of revs (oldest first) beyond limit whose
// names are not live.
func (h History) Prune(ctx context.Context, revs []*appsv1.ControllerRevision, live sets.Set[string], limit int) error {
	var old []*appsv1.ControllerRevision
	for _, r := range revs {
		if !live.Has(r.Name) {
			old = append(old, r)
		}
	}
	if limit < 0 || len(old) <= limit {
		return nil
	}
	for _, r := range old[:len(old)-limit] {
		err := h.Client.AppsV1().ControllerRevisions(r.Namespace).Delete(ctx, r.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}

// sameJSON reports whether two revisions' data are the same JSON.
func sameJSON(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}

// WithLabel is a copy of labels with key set to value.
func WithLabel(labels map[string]string, key, value string) map[string]string {
	out := make(map[string]string, len(labels)+1)
	for k, v := range labels {
		out[k] = v
	}
	out[key] = value
	return out
}
