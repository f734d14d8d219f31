package registry

import (
	"maps"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// maxDataBytes is the most a ConfigMap or Secret may hold.
const maxDataBytes = 1 << 20

// validateDataKeys checks the keys of a ConfigMap's or Secret's data and
// their total size.
func validateDataKeys(path *field.Path, keys map[string]int) field.ErrorList {
	var errs field.ErrorList
	total := 0
	for k, n := range keys {
		for _, msg := range validation.IsConfigMapKey(k) {
			errs = append(errs, field.Invalid(path.Key(k), k, msg))
		}
		total += n
	}
	if total > maxDataBytes {
		errs = append(errs, field.TooLong(path, "", maxDataBytes))
	}
	return errs
}

// immutableData refuses a change of data once the object is immutable.
func immutableData(wasImmutable *bool, changed bool, isImmutable *bool) field.ErrorList {
	if wasImmutable == nil || !*wasImmutable {
		return nil
	}
	var errs field.ErrorList
	if changed {
		errs = append(errs, field.Forbidden(field.NewPath("data"), "field is immutable when `immutable` is set"))
	}
	if isImmutable == nil || !*isImmutable {
		errs = append(errs, field.Forbidden(field.NewPath("immutable"), "field is immutable when `immutable` is set"))
	}
	return errs
}

type configMapStrategy struct{ BaseStrategy }

func (configMapStrategy) Validate(obj runtime.Object) field.ErrorList {
	cm := obj.(*corev1.ConfigMap)
	keys := map[string]int{}
	var errs field.ErrorList
	for k, v := range cm.Data {
		keys[k] = len(v)
	}
	for k, v := range cm.BinaryData {
		if _, dup := keys[k]; dup {
			errs = append(errs, field.Invalid(field.NewPath("binaryData").Key(k), k, "duplicate of key present in data"))
		}
		keys[k] = len(v)
	}
	return append(errs, validateDataKeys(field.NewPath("data"), keys)...)
}

func (configMapStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	cm, oldCM := obj.(*corev1.ConfigMap), old.(*corev1.ConfigMap)
	changed := !reflect.DeepEqual(cm.Data, oldCM.Data) || !reflect.DeepEqual(cm.BinaryData, oldCM.BinaryData)
	return immutableData(oldCM.Immutable, changed, cm.Immutable)
}

func (configMapStrategy) Columns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{nameColumn, column("Data", "string", "Number of data entries."), ageColumn}
}

func (configMapStrategy) Row(obj runtime.Object) []any {
	cm := obj.(*corev1.ConfigMap)
	return []any{cm.Name, int64(len(cm.Data) + len(cm.BinaryData)), age(cm.CreationTimestamp)}
}

type secretStrategy struct{ BaseStrategy }

// prepareSecret folds stringData into data and defaults the type.
func prepareSecret(s *corev1.Secret) {
	if s.Type == "" {
		s.Type = corev1.SecretTypeOpaque
	}
	if len(s.StringData) > 0 {
		if s.Data == nil {
			s.Data = map[string][]byte{}
		}
		for k, v := range s.StringData {
			s.Data[k] = []byte(v)
		}
		s.StringData = nil
	}
}

func (secretStrategy) PrepareForCreate(obj runtime.Object) { prepareSecret(obj.(*corev1.Secret)) }

func (secretStrategy) PrepareForUpdate(obj, _ runtime.Object) { prepareSecret(obj.(*corev1.Secret)) }

// requiredSecretKeys are the data keys each well-known secret type needs.
var requiredSecretKeys = map[corev1.SecretType][]string{
	corev1.SecretTypeDockerConfigJson: {corev1.DockerConfigJsonKey},
	corev1.SecretTypeDockercfg:        {corev1.DockerConfigKey},
	corev1.SecretTypeTLS:              {corev1.TLSCertKey, corev1.TLSPrivateKeyKey},
	corev1.SecretTypeBasicAuth:        nil,
}

func (secretStrategy) Validate(obj runtime.Object) field.ErrorList {
	s := obj.(*corev1.Secret)
	keys := map[string]int{}
	for k, v := range s.Data {
		keys[k] = len(v)
	}
	errs := validateDataKeys(field.NewPath("data"), keys)
	for _, k := range requiredSecretKeys[s.Type] {
		if _, ok := s.Data[k]; !ok {
			errs = append(errs, field.Required(field.NewPath("data").Key(k), ""))
		}
	}
	if s.Type == corev1.SecretTypeServiceAccountToken && s.Annotations[corev1.ServiceAccountNameKey] == "" {
		errs = append(errs, field.Required(field.NewPath("metadata", "annotations").Key(corev1.ServiceAccountNameKey), ""))
	}
	return errs
}

func (secretStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	s, oldS := obj.(*corev1.Secret), old.(*corev1.Secret)
	errs := immutable(s.Type != oldS.Type, field.NewPath("type"), s.Type)
	return append(errs, immutableData(oldS.Immutable, !maps.EqualFunc(s.Data, oldS.Data, bytesEqual), s.Immutable)...)
}

func bytesEqual(a, b []byte) bool { return string(a) == string(b) }

func (secretStrategy) Fields(obj runtime.Object) fields.Set {
	return fields.Set{"type": string(obj.(*corev1.Secret).Type)}
}

func (secretStrategy) Columns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{nameColumn, column("Type", "string", "The type of the secret."),
		column("Data", "string", "Number of data entries."), ageColumn}
}

func (secretStrategy) Row(obj runtime.Object) []any {
	s := obj.(*corev1.Secret)
	return []any{s.Name, string(s.Type), int64(len(s.Data)), age(s.CreationTimestamp)}
}

type serviceAccountStrategy struct{ BaseStrategy }
