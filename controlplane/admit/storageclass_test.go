package admit

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/skiff-lab/skiff/controlplane/apiserver/registry"
)

type fakeStorageClasses []*storagev1.StorageClass

func (f fakeStorageClasses) StorageClass(_ context.Context, name string) (*storagev1.StorageClass, error) {
	for _, sc := range f {
		if sc.Name == name {
			return sc, nil
		}
	}
	return nil, apierrors.NewNotFound(storagev1.Resource("storageclasses"), name)
}

func (f fakeStorageClasses) StorageClasses() ([]*storagev1.StorageClass, error) { return f, nil }

func storageClass(name string, created time.Time, isDefault, expandable bool) *storagev1.StorageClass {
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(created)},
		AllowVolumeExpansion: &expandable}
	if isDefault {
		sc.Annotations = map[string]string{registry.DefaultStorageClassAnnotation: "true"}
	}
	return sc
}

func claim(class *string, size string) *v1.PersistentVolumeClaim {
	return &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"},
		Spec: v1.PersistentVolumeClaimSpec{StorageClassName: class,
			Resources: v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse(size)}}}}
}

// TestDefaultStorageClass: a claim without a class gets the newest
// default; one that names a class, even "", keeps it; no default, no class.
func TestDefaultStorageClass(t *testing.T) {
	now := time.Now()
	admit := func(classes fakeStorageClasses, class *string) *string {
		t.Helper()
		pvc := claim(class, "1Gi")
		a := attrs(admission.Create, pvcResource, "", "ns", "c", pvc, nil, &user.DefaultInfo{Name: "bob"})
		if err := NewDefaultStorageClass(classes).Admit(t.Context(), a, nil); err != nil {
			t.Fatal(err)
		}
		return pvc.Spec.StorageClassName
	}
	classes := fakeStorageClasses{storageClass("old", now.Add(-time.Hour), true, false),
		storageClass("new", now, true, false), storageClass("fast", now.Add(time.Hour), false, false)}
	if got := admit(classes, nil); got == nil || *got != "new" {
		t.Errorf("no class: got %v, want the newest default", got)
	}
	empty, fast := "", "fast"
	if got := admit(classes, &empty); *got != "" {
		t.Errorf(`class "": got %q`, *got)
	}
	if got := admit(classes, &fast); *got != "fast" {
		t.Errorf("class fast: got %q", *got)
	}
	if got := admit(classes[2:], nil); got != nil {
		t.Errorf("no default class: got %q", *got)
	}
}

// TestPersistentVolumeClaimResize: a claim grows only in a class that
// allows expansion; shrinking or keeping its size is not this plugin's.
func TestPersistentVolumeClaimResize(t *testing.T) {
	classes := fakeStorageClasses{storageClass("grows", time.Now(), false, true), storageClass("fixed", time.Now(), false, false)}
	resize := func(class, from, to string) error {
		a := attrs(admission.Update, pvcResource, "", "ns", "c", claim(&class, to), claim(&class, from), &user.DefaultInfo{Name: "bob"})
		return NewPersistentVolumeClaimResize(classes).Validate(t.Context(), a, nil)
	}
	if err := resize("grows", "1Gi", "2Gi"); err != nil {
		t.Errorf("expandable class: %v", err)
	}
	if err := resize("fixed", "2Gi", "2Gi"); err != nil {
		t.Errorf("same size: %v", err)
	}
	for _, class := range []string{"fixed", "missing", ""} {
		err := resize(class, "1Gi", "2Gi")
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "must support resize") {
			t.Errorf("class %q: got %v, want Forbidden", class, err)
		}
	}
}
