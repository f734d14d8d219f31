package envvars

import (
	"context"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Sources reads the API objects a container's environment refers to,
// typically from informer caches. A missing ConfigMap or Secret must be
// reported with an error for which apierrors.IsNotFound is true (as
// client-go and listers do); any other error fails For. Returned objects
// are only read. For calls Sources from one goroutine.
type Sources interface {
	ConfigMap(ctx context.Context, namespace, name string) (*v1.ConfigMap, error)
	Secret(ctx context.Context, namespace, name string) (*v1.Secret, error)
	// Services lists the services of one namespace.
	Services(ctx context.Context, namespace string) ([]*v1.Service, error)
}

const (
	configMapKind = "ConfigMap"
	secretKind    = "Secret"
)

type objectRef struct{ kind, name string }

// objects reads the ConfigMaps and Secrets of one pod's namespace for one
// container, each at most once, so every reference to an object sees the
// same version of it (as in the kubelet). A missing object is not
// remembered.
type objects struct {
	src       Sources
	namespace string
	data      map[objectRef]map[string]string
}

// get returns the data of a ConfigMap, or of a Secret as strings. found is
// false when the object does not exist and optional is true; a missing
// required object is a *MissingError.
func (o *objects) get(ctx context.Context, kind, name string, optional bool) (data map[string]string, found bool, err error) {
	ref := objectRef{kind, name}
	if d, ok := o.data[ref]; ok {
		return d, true, nil
	}
	d, err := o.fetch(ctx, kind, name)
	switch {
	case apierrors.IsNotFound(err) && optional:
		return nil, false, nil
	case apierrors.IsNotFound(err):
		return nil, false, &MissingError{Kind: kind, Namespace: o.namespace, Name: name, Err: err}
	case err != nil:
		return nil, false, fmt.Errorf("get %s %s/%s: %w", strings.ToLower(kind), o.namespace, name, err)
	}
	o.data[ref] = d
	return d, true, nil
}

func (o *objects) fetch(ctx context.Context, kind, name string) (map[string]string, error) {
	if kind == configMapKind {
		cm, err := o.src.ConfigMap(ctx, o.namespace, name)
		if err != nil {
			return nil, err
		}
		return cm.Data, nil
	}
	s, err := o.src.Secret(ctx, o.namespace, name)
	if err != nil {
		return nil, err
	}
	d := make(map[string]string, len(s.Data))
	for k, v := range s.Data {
		d[k] = string(v)
	}
	return d, nil
}
