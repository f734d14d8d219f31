package admit

import (
	"context"
	"errors"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apiserver/pkg/admission"

	"github.com/skiff-lab/skiff/controlplane/apiserver/registry"
)

var pvcResource = v1.Resource("persistentvolumeclaims")

// StorageClasses finds storage classes.
type StorageClasses interface {
	StorageClass(ctx context.Context, name string) (*storagev1.StorageClass, error)
	StorageClasses() ([]*storagev1.StorageClass, error)
}

// DefaultClass is the default among classes: the newest of those marked
// (by name when made in the same second), or nil.
func DefaultClass(classes []*storagev1.StorageClass) *storagev1.StorageClass {
	var marked []*storagev1.StorageClass
	for _, sc := range classes {
		if registry.IsDefaultStorageClass(sc) {
			marked = append(marked, sc)
		}
	}
	if len(marked) == 0 {
		return nil
	}
	return slices.MaxFunc(marked, func(a, b *storagev1.StorageClass) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(b.Name, a.Name)
	})
}

// DefaultStorageClass gives a new claim that names no class the default
// class, as kube-apiserver's plugin of that name. A claim that sets
// storageClassName, even to "", keeps it.
type DefaultStorageClass struct {
	*admission.Handler
	classes StorageClasses
}

// NewDefaultStorageClass returns the plugin.
func NewDefaultStorageClass(classes StorageClasses) *DefaultStorageClass {
	return &DefaultStorageClass{Handler: admission.NewHandler(admission.Create), classes: classes}
}

// Admit sets the class of a claim that has none.
func (p *DefaultStorageClass) Admit(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	pvc, ok := a.GetObject().(*v1.PersistentVolumeClaim)
	if !ok || a.GetResource().GroupResource() != pvcResource || a.GetSubresource() != "" || pvc.Spec.StorageClassName != nil {
		return nil
	}
	classes, err := p.classes.StorageClasses()
	if err != nil {
		return admission.NewForbidden(a, err)
	}
	if sc := DefaultClass(classes); sc != nil {
		pvc.Spec.StorageClassName = &sc.Name
	}
	return nil
}

// PersistentVolumeClaimResize lets a claim grow only when its class
// allows expansion, as kube-apiserver's plugin of that name.
type PersistentVolumeClaimResize struct {
	*admission.Handler
	classes StorageClasses
}

// NewPersistentVolumeClaimResize returns the plugin.
func NewPersistentVolumeClaimResize(classes StorageClasses) *PersistentVolumeClaimResize {
	return &PersistentVolumeClaimResize{Handler: admission.NewHandler(admission.Update), classes: classes}
}

// Validate refuses a larger request for a claim whose class cannot grow.
func (p *PersistentVolumeClaimResize) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	pvc, ok := a.GetObject().(*v1.PersistentVolumeClaim)
	old, oldOK := a.GetOldObject().(*v1.PersistentVolumeClaim)
	if !ok || !oldOK || a.GetResource().GroupResource() != pvcResource || a.GetSubresource() != "" {
		return nil
	}
	size, oldSize := pvc.Spec.Resources.Requests[v1.ResourceStorage], old.Spec.Resources.Requests[v1.ResourceStorage]
	if size.Cmp(oldSize) <= 0 {
		return nil
	}
	if !p.expandable(ctx, pvc) {
		return admission.NewForbidden(a, errors.New("only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize"))
	}
	return nil
}

func (p *PersistentVolumeClaimResize) expandable(ctx context.Context, pvc *v1.PersistentVolumeClaim) bool {
	if pvc.Spec.StorageClassName == nil || *pvc.Spec.StorageClassName == "" {
		return false
	}
	sc, err := p.classes.StorageClass(ctx, *pvc.Spec.StorageClassName)
	return err == nil && sc.AllowVolumeExpansion != nil && *sc.AllowVolumeExpansion
}
