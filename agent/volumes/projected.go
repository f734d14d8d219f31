package volumes

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"

	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Found holds the objects a projected volume's sources name, as looked up
// in the pod's namespace (a name missing from a map does not exist), and
// the service account tokens got for it, by path.
type Found struct {
	ConfigMaps map[string]*v1.ConfigMap
	Secrets    map[string]*v1.Secret
	Tokens     map[string]string
	// TrustBundles are all the cluster's ClusterTrustBundles, when a
	// source projects some.
	TrustBundles []*certificatesv1.ClusterTrustBundle
	// Certificates are the issued credentials of podCertificate sources,
	// by the source's index.
	Certificates map[int]Credentials
}

// ProjectedFiles computes the files of a projected volume: the files of
// its configMap, secret, downwardAPI, serviceAccountToken and
// clusterTrustBundle and podCertificate sources, in order, a later source
// winning a path two share. Each source follows the rules of
// ConfigMapFiles, SecretFiles, DownwardAPIFiles and TrustAnchors, with the
// projected volume's defaultMode (else 0644); a token is the file at its
// path, a certificate's key and chain are files at keyPath and
// certificateChainPath and, one after the other, at credentialBundlePath.
// Errors of all sources are joined, each naming its source.
func ProjectedFiles(src *v1.ProjectedVolumeSource, found Found, fields FieldResolver) (map[string]File, error) {
	mode := modeOr(src.DefaultMode, v1.ProjectedVolumeSourceDefaultMode)
	files := map[string]File{}
	var errs []error
	for i, s := range src.Sources {
		part, err := sourceFiles(i, s, found, mode, fields)
		errs = append(errs, err)
		maps.Copy(files, part)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return validated(files)
}

// sourceFiles computes the files of the i-th source of a projected volume.
func sourceFiles(i int, s v1.VolumeProjection, found Found, mode fs.FileMode, fields FieldResolver) (map[string]File, error) {
	switch {
	case s.ConfigMap != nil:
		cm := found.ConfigMaps[s.ConfigMap.Name]
		ks := keySource{"configmap", s.ConfigMap.Name, s.ConfigMap.Items, isTrue(s.ConfigMap.Optional), mode}
		files, err := keyFiles(ks, configMapData(cm), cm != nil)
		return files, nameSource(err, ks)
	case s.Secret != nil:
		sec := found.Secrets[s.Secret.Name]
		ks := keySource{"secret", s.Secret.Name, s.Secret.Items, isTrue(s.Secret.Optional), mode}
		files, err := keyFiles(ks, secretData(sec), sec != nil)
		return files, nameSource(err, ks)
	case s.DownwardAPI != nil:
		return downwardAPIFiles(s.DownwardAPI.Items, mode, fields)
	case s.ServiceAccountToken != nil:
		return map[string]File{s.ServiceAccountToken.Path: {Data: []byte(found.Tokens[s.ServiceAccountToken.Path]), Mode: mode}}, nil
	case s.ClusterTrustBundle != nil:
		data, err := TrustAnchors(s.ClusterTrustBundle, found.TrustBundles)
		if err != nil {
			return nil, err
		}
		return map[string]File{s.ClusterTrustBundle.Path: {Data: data, Mode: mode}}, nil
	case s.PodCertificate != nil:
		return certificateFiles(s.PodCertificate, found.Certificates[i], mode), nil
	}
	return nil, newError(ErrUnsupported, fmt.Sprintf("projected source %d (%s) is not supported", i, sourceKind(s)), nil)
}

// certificateFiles places a pod certificate's key and chain where the
// source asks.
func certificateFiles(src *v1.PodCertificateProjection, c Credentials, mode fs.FileMode) map[string]File {
	files := map[string]File{}
	for path, data := range map[string][]byte{src.KeyPath: c.Key, src.CertificateChainPath: c.Chain,
		src.CredentialBundlePath: append(append([]byte{}, c.Key...), c.Chain...)} {
		if path != "" {
			files[path] = File{Data: data, Mode: mode}
		}
	}
	return files
}

// nameSource prefixes an error of a projected configMap or secret source
// with the object's name, which a NotFound error already carries.
func nameSource(err error, src keySource) error {
	if err == nil || apierrors.IsNotFound(err) {
		return err
	}
	return fmt.Errorf("%s %q: %w", src.kind, src.name, err)
}

// sourceKind names the field set in a projection the package does not handle.
func sourceKind(s v1.VolumeProjection) string {
	switch {
	case s.ServiceAccountToken != nil:
		return "serviceAccountToken"
	case s.ClusterTrustBundle != nil:
		return "clusterTrustBundle"
	case s.PodCertificate != nil:
		return "podCertificate"
	}
	return "empty"
}
