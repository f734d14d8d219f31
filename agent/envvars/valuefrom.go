package envvars

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/skiff-lab/skiff/agent/downward"
)

// value resolves one env entry. A non-empty Value is expanded (valueFrom is
// then ignored, as in the kubelet); otherwise valueFrom is resolved, and an
// entry with neither is the empty string. ok is false when the entry is to
// be left out: its optional ConfigMap, Secret or key is missing.
func (b *builder) value(ctx context.Context, e v1.EnvVar) (value string, ok bool, err error) {
	if e.Value != "" || e.ValueFrom == nil {
		return Expand(e.Value, b.vars.lookup), true, nil
	}
	from := e.ValueFrom
	switch {
	case from.FieldRef != nil:
		value, err = b.field(from.FieldRef)
	case from.ResourceFieldRef != nil:
		value, err = downward.ResourceValue(b.pod, b.container.Name, from.ResourceFieldRef, b.in.NodeAllocatable)
	case from.ConfigMapKeyRef != nil:
		ref := from.ConfigMapKeyRef
		return b.key(ctx, configMapKind, ref.Name, ref.Key, ref.Optional)
	case from.SecretKeyRef != nil:
		ref := from.SecretKeyRef
		return b.key(ctx, secretKind, ref.Name, ref.Key, ref.Optional)
	case from.FileKeyRef != nil:
		err = fmt.Errorf("fileKeyRef is not supported")
	}
	if err != nil {
		return "", false, fmt.Errorf("env %s: %w", e.Name, err)
	}
	return value, true, nil
}

// field resolves a fieldRef; its apiVersion must be v1 (empty means v1).
func (b *builder) field(ref *v1.ObjectFieldSelector) (string, error) {
	if ref.APIVersion != "" && ref.APIVersion != "v1" {
		return "", fmt.Errorf("unsupported pod version: %s", ref.APIVersion)
	}
	return downward.FieldValue(b.pod, ref.FieldPath, b.in.IPs)
}

// key resolves a configMapKeyRef or secretKeyRef.
func (b *builder) key(ctx context.Context, kind, name, key string, optional *bool) (string, bool, error) {
	opt := optional != nil && *optional
	data, found, err := b.objects.get(ctx, kind, name, opt)
	if err != nil || !found {
		return "", false, err
	}
	value, ok := data[key]
	if !ok && !opt {
		return "", false, &MissingError{Kind: kind, Namespace: b.pod.Namespace, Name: name, Key: key}
	}
	return value, ok, nil
}
