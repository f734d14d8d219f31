package volumes

import (
	"io/fs"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// keySource is what configMap and secret sources, in volumes and in
// projections, have in common.
type keySource struct {
	kind     string // "configmap" or "secret", as the kubelet names them
	name     string
	items    []v1.KeyToPath
	optional bool
	mode     fs.FileMode // default file mode
}

// ConfigMapFiles computes the files of a configMap volume from the config
// map it names; cm is nil when that config map does not exist.
//
// Without items every key of data and binaryData becomes a file of that
// name; with items only the listed keys are projected, each to its path
// (data wins over binaryData). A file's mode is its item's mode, else
// defaultMode, else 0644. A missing config map or key is an error
// (apierrors.IsNotFound, ErrMissingKey) unless the source is optional, in
// which case it projects nothing. Paths are checked like WriteAtomic does.
func ConfigMapFiles(src *v1.ConfigMapVolumeSource, cm *v1.ConfigMap) (map[string]File, error) {
	ks := keySource{"configmap", src.Name, src.Items, isTrue(src.Optional), modeOr(src.DefaultMode, v1.ConfigMapVolumeSourceDefaultMode)}
	return keyFiles(ks, configMapData(cm), cm != nil)
}

// SecretFiles is ConfigMapFiles for a secret volume: the files come from
// the secret's data, and s is nil when the secret does not exist.
func SecretFiles(src *v1.SecretVolumeSource, s *v1.Secret) (map[string]File, error) {
	ks := keySource{"secret", src.SecretName, src.Items, isTrue(src.Optional), modeOr(src.DefaultMode, v1.SecretVolumeSourceDefaultMode)}
	return keyFiles(ks, secretData(s), s != nil)
}

// keyFiles projects data, the content of the object src names, following
// src's items; exists is false when that object does not exist.
func keyFiles(src keySource, data map[string][]byte, exists bool) (map[string]File, error) {
	if !exists && !src.optional {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: src.kind}, src.name)
	}
	files := make(map[string]File, len(data))
	if len(src.items) == 0 {
		for key, value := range data {
			files[key] = File{Data: value, Mode: src.mode}
		}
		return validated(files)
	}
	for _, item := range src.items {
		value, ok := data[item.Key]
		if !ok {
			if src.optional {
				continue
			}
			return nil, missingKey(src.kind, item.Key)
		}
		files[item.Path] = File{Data: value, Mode: modeOr(item.Mode, int32(src.mode))}
	}
	return validated(files)
}

// missingKey words a missing key the way the kubelet does.
func missingKey(kind, key string) error {
	msg := "references non-existent secret key: " + key
	if kind == "configmap" {
		msg = "configmap references non-existent config key: " + key
	}
	return newError(ErrMissingKey, msg, nil)
}

// configMapData merges a config map's data and binaryData, data winning.
func configMapData(cm *v1.ConfigMap) map[string][]byte {
	if cm == nil {
		return nil
	}
	data := make(map[string][]byte, len(cm.Data)+len(cm.BinaryData))
	for k, v := range cm.BinaryData {
		data[k] = v
	}
	for k, v := range cm.Data {
		data[k] = []byte(v)
	}
	return data
}

// secretData is a secret's data (stringData is merged in by the API server).
func secretData(s *v1.Secret) map[string][]byte {
	if s == nil {
		return nil
	}
	return s.Data
}

// validated returns files, or nil and the error when a path is invalid.
func validated(files map[string]File) (map[string]File, error) {
	if _, err := cleanPayload(files); err != nil {
		return nil, err
	}
	return files, nil
}

// modeOr is *mode, or def when mode is nil.
func modeOr(mode *int32, def int32) fs.FileMode {
	if mode != nil {
		return fs.FileMode(*mode) & fs.ModePerm
	}
	return fs.FileMode(def) & fs.ModePerm
}

func isTrue(b *bool) bool { return b != nil && *b }
