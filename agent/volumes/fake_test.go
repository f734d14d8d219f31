package volumes

import (
	"context"
	"errors"
	"fmt"

	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// fakeFields resolves downwardAPI items from maps and records calls.
type fakeFields struct {
	fields    map[string]string
	resources map[string]string // "<container>/<resource>"
	calls     []string
}

var _ FieldResolver = (*fakeFields)(nil)

func (f *fakeFields) Field(fieldPath string) (string, error) {
	f.calls = append(f.calls, "field "+fieldPath)
	v, ok := f.fields[fieldPath]
	if !ok {
		return "", fmt.Errorf("unsupported fieldPath %q", fieldPath)
	}
	return v, nil
}

func (f *fakeFields) Resource(container string, sel *v1.ResourceFieldSelector) (string, error) {
	f.calls = append(f.calls, "resource "+container+"/"+sel.Resource)
	v, ok := f.resources[container+"/"+sel.Resource]
	if !ok {
		return "", fmt.Errorf("unsupported resource %q", sel.Resource)
	}
	return v, nil
}

// fakeObjects serves config maps and secrets from maps keyed
// "<namespace>/<name>" (the plural resource in NotFound errors, as a
// client would) and records lookups.
type fakeObjects struct {
	configMaps map[string]*v1.ConfigMap
	secrets    map[string]*v1.Secret
	bundles    []*certificatesv1.ClusterTrustBundle
	fail       error // returned by every lookup when set
	calls      []string
}

var _ Objects = (*fakeObjects)(nil)

// ServiceAccountToken makes a token naming the pod and the audience.
func (f *fakeObjects) ServiceAccountToken(_ context.Context, pod *v1.Pod, src *v1.ServiceAccountTokenProjection) (string, error) {
	f.calls = append(f.calls, "token "+pod.Namespace+"/"+pod.Name+" for "+src.Audience)
	if f.fail != nil {
		return "", f.fail
	}
	return "token of " + pod.Name + " for " + src.Audience, nil
}

func (f *fakeObjects) ClusterTrustBundles(context.Context) ([]*certificatesv1.ClusterTrustBundle, error) {
	f.calls = append(f.calls, "clustertrustbundles")
	return f.bundles, f.fail
}

// PodCertificate makes credentials naming the pod, volume and source.
func (f *fakeObjects) PodCertificate(_ context.Context, pod *v1.Pod, volume string, i int, _ *v1.PodCertificateProjection) (Credentials, error) {
	f.calls = append(f.calls, fmt.Sprintf("certificate %s/%s %s[%d]", pod.Namespace, pod.Name, volume, i))
	return Credentials{Key: []byte("KEY"), Chain: []byte("CHAIN")}, f.fail
}

func (f *fakeObjects) ConfigMap(_ context.Context, ns, name string) (*v1.ConfigMap, error) {
	f.calls = append(f.calls, "configmap "+ns+"/"+name)
	if f.fail != nil {
		return nil, f.fail
	}
	if cm, ok := f.configMaps[ns+"/"+name]; ok {
		return cm, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, name)
}

func (f *fakeObjects) Secret(_ context.Context, ns, name string) (*v1.Secret, error) {
	f.calls = append(f.calls, "secret "+ns+"/"+name)
	if f.fail != nil {
		return nil, f.fail
	}
	if s, ok := f.secrets[ns+"/"+name]; ok {
		return s, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, name)
}

var errUnavailable = errors.New("apiserver unavailable")
