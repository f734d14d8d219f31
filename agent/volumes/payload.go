package volumes

import (
	"context"
	"errors"
	"fmt"

	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Objects looks up the config maps, secrets and cluster trust bundles that
// volumes project, and gets the service account tokens and certificates
// (key and chain of the i-th source of a volume) they project for a pod. A
// missing object is an error satisfying apierrors.IsNotFound. The agent
// implements it over its API client or watch cache.
type Objects interface {
	ConfigMap(ctx context.Context, namespace, name string) (*v1.ConfigMap, error)
	Secret(ctx context.Context, namespace, name string) (*v1.Secret, error)
	ServiceAccountToken(ctx context.Context, pod *v1.Pod, src *v1.ServiceAccountTokenProjection) (string, error)
	ClusterTrustBundles(ctx context.Context) ([]*certificatesv1.ClusterTrustBundle, error)
	PodCertificate(ctx context.Context, pod *v1.Pod, volume string, i int, src *v1.PodCertificateProjection) (Credentials, error)
}

// Credentials are a pod certificate's private key (a PEM PRIVATE KEY
// block, PKCS#8) and certificate chain (PEM, leaf first).
type Credentials struct {
	Key, Chain []byte
}

// Payload computes the files of a pod's configMap, secret, downwardAPI or
// projected volume, looking objects up in the pod's namespace and getting
// its service account tokens; it is the
// I/O around ConfigMapFiles, SecretFiles, DownwardAPIFiles and
// ProjectedFiles. fields may be nil when the volume has no downwardAPI
// items. Errors start with `volume "<name>": ` and keep their kind: a
// missing object is apierrors.IsNotFound (`configmap "x" not found`), a
// missing key ErrMissingKey, a bad path ErrInvalidPath, any other volume
// type ErrUnsupported.
func Payload(ctx context.Context, pod *v1.Pod, vol *v1.Volume, objs Objects, fields FieldResolver) (map[string]File, error) {
	files, err := payload(ctx, pod, vol, objs, fields)
	if err != nil {
		return nil, fmt.Errorf("volume %q: %w", vol.Name, err)
	}
	return files, nil
}

func payload(ctx context.Context, pod *v1.Pod, vol *v1.Volume, objs Objects, fields FieldResolver) (map[string]File, error) {
	ns, src := pod.Namespace, &vol.VolumeSource
	switch {
	case src.ConfigMap != nil:
		cm, err := lookup(ctx, objs.ConfigMap, ns, "configmap", src.ConfigMap.Name)
		if err != nil {
			return nil, err
		}
		return ConfigMapFiles(src.ConfigMap, cm)
	case src.Secret != nil:
		s, err := lookup(ctx, objs.Secret, ns, "secret", src.Secret.SecretName)
		if err != nil {
			return nil, err
		}
		return SecretFiles(src.Secret, s)
	case src.DownwardAPI != nil:
		return DownwardAPIFiles(src.DownwardAPI, fields)
	case src.Projected != nil:
		found, err := lookupProjected(ctx, pod, vol.Name, src.Projected, objs)
		if err != nil {
			return nil, err
		}
		return ProjectedFiles(src.Projected, found, fields)
	}
	return nil, newError(ErrUnsupported, "not a configMap, secret, downwardAPI or projected volume", nil)
}

// lookup fetches one object; a missing one is returned as nil without
// error, for the pure builders to judge against optional.
func lookup[T any](ctx context.Context, get func(context.Context, string, string) (*T, error), ns, kind, name string) (*T, error) {
	obj, err := get(ctx, ns, name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get %s %q: %w", kind, name, err)
	}
	return obj, nil
}

// lookupProjected fetches every object, token and certificate the
// projected volume vol names.
func lookupProjected(ctx context.Context, pod *v1.Pod, vol string, src *v1.ProjectedVolumeSource, objs Objects) (Found, error) {
	ns := pod.Namespace
	found := Found{ConfigMaps: map[string]*v1.ConfigMap{}, Secrets: map[string]*v1.Secret{}, Tokens: map[string]string{},
		Certificates: map[int]Credentials{}}
	var errs []error
	for i, s := range src.Sources {
		switch {
		case s.ConfigMap != nil:
			cm, err := lookup(ctx, objs.ConfigMap, ns, "configmap", s.ConfigMap.Name)
			errs = append(errs, err)
			if cm != nil {
				found.ConfigMaps[s.ConfigMap.Name] = cm
			}
		case s.Secret != nil:
			sec, err := lookup(ctx, objs.Secret, ns, "secret", s.Secret.Name)
			errs = append(errs, err)
			if sec != nil {
				found.Secrets[s.Secret.Name] = sec
			}
		case s.ServiceAccountToken != nil:
			token, err := objs.ServiceAccountToken(ctx, pod, s.ServiceAccountToken)
			if err != nil {
				err = fmt.Errorf("service account token %q: %w", s.ServiceAccountToken.Path, err)
			}
			errs = append(errs, err)
			found.Tokens[s.ServiceAccountToken.Path] = token
		case s.ClusterTrustBundle != nil && found.TrustBundles == nil:
			bundles, err := objs.ClusterTrustBundles(ctx)
			if err != nil {
				err = fmt.Errorf("list clustertrustbundles: %w", err)
			}
			errs = append(errs, err)
			found.TrustBundles = append([]*certificatesv1.ClusterTrustBundle{}, bundles...)
		case s.PodCertificate != nil:
			creds, err := objs.PodCertificate(ctx, pod, vol, i, s.PodCertificate)
			if err != nil {
				err = fmt.Errorf("pod certificate of signer %q: %w", s.PodCertificate.SignerName, err)
			}
			errs = append(errs, err)
			found.Certificates[i] = creds
		}
	}
	return found, errors.Join(errs...)
}
