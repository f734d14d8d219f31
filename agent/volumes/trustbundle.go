package volumes

import (
	"encoding/pem"
	"fmt"
	"slices"

	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
)

// TrustAnchors computes the file of a clusterTrustBundle projection from
// every ClusterTrustBundle of the cluster, as the kubelet does: the bundle
// named, or those of the signer that the label selector matches (a nil
// selector matches none, an empty one all), their certificates once each
// as PEM blocks (in a stable order: sorted by their bytes). Nothing to
// project is an error unless the source is optional, when the file is
// empty.
func TrustAnchors(src *v1.ClusterTrustBundleProjection, all []*certificatesv1.ClusterTrustBundle) ([]byte, error) {
	chosen, err := selectBundles(src, all)
	if err != nil {
		return nil, err
	}
	if len(chosen) == 0 {
		if isTrue(src.Optional) {
			return []byte{}, nil
		}
		if src.Name != nil {
			return nil, apierrors.NewNotFound(certificatesv1.Resource("clustertrustbundles"), *src.Name)
		}
		return nil, apierrors.NewNotFound(certificatesv1.Resource("clustertrustbundles"),
			fmt.Sprintf("of signer %q matching the label selector", ptr.Deref(src.SignerName, "")))
	}
	return normalizedAnchors(chosen), nil
}

// selectBundles picks the bundles a projection names.
func selectBundles(src *v1.ClusterTrustBundleProjection, all []*certificatesv1.ClusterTrustBundle) ([]*certificatesv1.ClusterTrustBundle, error) {
	var chosen []*certificatesv1.ClusterTrustBundle
	if src.Name != nil {
		for _, b := range all {
			if b.Name == *src.Name {
				chosen = append(chosen, b)
			}
		}
		return chosen, nil
	}
	if src.LabelSelector == nil {
		return nil, nil
	}
	selector, err := metav1.LabelSelectorAsSelector(src.LabelSelector)
	if err != nil {
		return nil, fmt.Errorf("clusterTrustBundle label selector: %w", err)
	}
	for _, b := range all {
		if b.Spec.SignerName == ptr.Deref(src.SignerName, "") && selector.Matches(labels.Set(b.Labels)) {
			chosen = append(chosen, b)
		}
	}
	return chosen, nil
}

// normalizedAnchors re-encodes the certificates of the bundles, each once.
func normalizedAnchors(bundles []*certificatesv1.ClusterTrustBundle) []byte {
	var certs []string
	for _, b := range bundles {
		rest := []byte(b.Spec.TrustBundle)
		for {
			var block *pem.Block
			if block, rest = pem.Decode(rest); block == nil {
				break
			}
			certs = append(certs, string(block.Bytes))
		}
	}
	slices.Sort(certs)
	out := []byte{}
	for _, c := range slices.Compact(certs) {
		out = append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte(c)})...)
	}
	return out
}
