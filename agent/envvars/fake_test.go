package envvars

import (
	"context"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// fakeSources serves objects from maps keyed "namespace/name" (services by
// namespace) and records every call as "kind namespace/name".
type fakeSources struct {
	configMaps map[string]*v1.ConfigMap
	secrets    map[string]*v1.Secret
	services   map[string][]*v1.Service
	err        error  // when set, calls fail with it
	failOnly   string // when set, only the call recorded as this fails
	calls      []string
}

// record notes a call and returns the error it fails with, if any.
func (f *fakeSources) record(call string) error {
	f.calls = append(f.calls, call)
	if f.failOnly != "" && f.failOnly != call {
		return nil
	}
	return f.err
}

var _ Sources = (*fakeSources)(nil)

func (f *fakeSources) ConfigMap(_ context.Context, namespace, name string) (*v1.ConfigMap, error) {
	if err := f.record("configmap " + namespace + "/" + name); err != nil {
		return nil, err
	}
	if cm, ok := f.configMaps[namespace+"/"+name]; ok {
		return cm, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, name)
}

func (f *fakeSources) Secret(_ context.Context, namespace, name string) (*v1.Secret, error) {
	if err := f.record("secret " + namespace + "/" + name); err != nil {
		return nil, err
	}
	if s, ok := f.secrets[namespace+"/"+name]; ok {
		return s, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, name)
}

func (f *fakeSources) Services(_ context.Context, namespace string) ([]*v1.Service, error) {
	if err := f.record("services " + namespace); err != nil {
		return nil, err
	}
	return f.services[namespace], nil
}
