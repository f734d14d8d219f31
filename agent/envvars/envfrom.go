package envvars

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// ReasonInvalidNames is the kubelet's event reason for SkippedKeys.
const ReasonInvalidNames = "InvalidEnvironmentVariableNames"

// SkippedKeys are the keys of one envFrom source that were left out of the
// environment because, with the source's prefix, they are not valid
// variable names. Validity is the API server's current (relaxed) rule:
// printable ASCII other than '='; names such as "1st" or "a.b" are valid.
type SkippedKeys struct {
	Kind      string // "ConfigMap" or "Secret"
	Namespace string
	Name      string
	Keys      []string // sorted, prefix included
}

// Message is the kubelet's warning event message for s.
func (s SkippedKeys) Message() string {
	kind := "configMap"
	if s.Kind == secretKind {
		kind = "secret"
	}
	return fmt.Sprintf("Keys [%s] from the EnvFrom %s %s/%s were skipped since they are considered invalid environment variable names.",
		strings.Join(s.Keys, ", "), kind, s.Namespace, s.Name)
}

// addEnvFrom sets every key of one envFrom source, prefixed, in key order.
// A missing optional source adds nothing; a source that names neither a
// ConfigMap nor a Secret is ignored.
func (b *builder) addEnvFrom(ctx context.Context, from v1.EnvFromSource) error {
	var kind, name string
	var optional *bool
	switch {
	case from.ConfigMapRef != nil:
		kind, name, optional = configMapKind, from.ConfigMapRef.Name, from.ConfigMapRef.Optional
	case from.SecretRef != nil:
		kind, name, optional = secretKind, from.SecretRef.Name, from.SecretRef.Optional
	default:
		return nil
	}
	data, found, err := b.objects.get(ctx, kind, name, optional != nil && *optional)
	if err != nil || !found {
		return err
	}
	var invalid []string
	for _, key := range slices.Sorted(maps.Keys(data)) {
		n := from.Prefix + key
		if len(validation.IsRelaxedEnvVarName(n)) != 0 {
			invalid = append(invalid, n)
			continue
		}
		b.vars.set(n, data[key])
	}
	if len(invalid) > 0 {
		b.skipped = append(b.skipped, SkippedKeys{Kind: kind, Namespace: b.pod.Namespace, Name: name, Keys: invalid})
	}
	return nil
}
