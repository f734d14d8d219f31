package registry

import (
	storagemigrationv1 "k8s.io/api/storagemigration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// StorageVersionMigrations ask for every object of a resource to be
// written again, so that etcd holds each in the current storage encoding
// (after an encryption key is put first, say); the
// storage-version-migrator controller does the writing and reports in
// status.
type storageMigrationStrategy struct{ BaseStrategy }

func (storageMigrationStrategy) PrepareForCreate(obj runtime.Object) {
	obj.(*storagemigrationv1.StorageVersionMigration).Status = storagemigrationv1.StorageVersionMigrationStatus{}
}

func (storageMigrationStrategy) Validate(obj runtime.Object) field.ErrorList {
	if obj.(*storagemigrationv1.StorageVersionMigration).Spec.Resource.Resource == "" {
		return field.ErrorList{field.Required(field.NewPath("spec", "resource", "resource"), "")}
	}
	return nil
}

func (storageMigrationStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	spec, prev := obj.(*storagemigrationv1.StorageVersionMigration).Spec, old.(*storagemigrationv1.StorageVersionMigration).Spec
	return immutable(spec != prev, field.NewPath("spec"), spec)
}

func (storageMigrationStrategy) Columns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{nameColumn, column("Resource", "string", "The resource migrated."), ageColumn}
}

func (storageMigrationStrategy) Row(obj runtime.Object) []any {
	m := obj.(*storagemigrationv1.StorageVersionMigration)
	return []any{m.Name, m.Spec.Resource.String(), age(m.CreationTimestamp)}
}
