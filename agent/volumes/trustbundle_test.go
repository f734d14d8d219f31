package volumes

import (
	"bytes"
	"context"
	"encoding/pem"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// certPEM is a PEM block of a certificate (its bytes need not parse:
// TrustAnchors re-encodes blocks, it does not read certificates).
func certPEM(name string) string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("certificate " + name)}))
}

func bundle(name, signer string, labels map[string]string, pems ...string) *certificatesv1.ClusterTrustBundle {
	var all string
	for _, p := range pems {
		all += "\n" + p // blank lines between blocks, as users write them
	}
	return &certificatesv1.ClusterTrustBundle{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: certificatesv1.ClusterTrustBundleSpec{SignerName: signer, TrustBundle: all}}
}

func TestTrustAnchors(t *testing.T) {
	a, b, c := certPEM("a"), certPEM("b"), certPEM("c")
	alive := map[string]string{"alive": "true"}
	all := []*certificatesv1.ClusterTrustBundle{
		bundle("plain", "", nil, a),
		bundle("example.com:one:1", "example.com/one", alive, b, a),
		bundle("example.com:one:2", "example.com/one", nil, c),
		bundle("example.com:two:1", "example.com/two", alive, c),
	}
	one := ptr.To("example.com/one")
	tests := []struct {
		name    string
		src     v1.ClusterTrustBundleProjection
		want    []string // the certificates, in any order
		wantErr string
	}{
		{"by name", v1.ClusterTrustBundleProjection{Name: ptr.To("plain")}, []string{a}, ""},
		{"missing name", v1.ClusterTrustBundleProjection{Name: ptr.To("nope")}, nil, `clustertrustbundles.certificates.k8s.io "nope" not found`},
		{"missing optional name", v1.ClusterTrustBundleProjection{Name: ptr.To("nope"), Optional: ptr.To(true)}, []string{}, ""},
		{"signer and labels", v1.ClusterTrustBundleProjection{SignerName: one, LabelSelector: &metav1.LabelSelector{MatchLabels: alive}}, []string{a, b}, ""},
		{"empty selector: every bundle of the signer, each certificate once", v1.ClusterTrustBundleProjection{SignerName: one, LabelSelector: &metav1.LabelSelector{}}, []string{a, b, c}, ""},
		{"nil selector matches nothing", v1.ClusterTrustBundleProjection{SignerName: one}, nil, `clustertrustbundles.certificates.k8s.io "of signer \"example.com/one\" matching the label selector" not found`},
		{"nothing matches, optional", v1.ClusterTrustBundleProjection{SignerName: one, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"x": "y"}}, Optional: ptr.To(true)}, []string{}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := TrustAnchors(&tt.src, all)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("error %v, want %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var want []byte
			for _, p := range tt.want {
				if !bytes.Contains(got, []byte(p)) {
					t.Errorf("%q is missing from\n%s", p, got)
				}
				want = append(want, p...)
			}
			if len(got) != len(want) {
				t.Errorf("got %d bytes, want the %d of %d certificates:\n%s", len(got), len(want), len(tt.want), got)
			}
		})
	}
}

func TestProjectedTrustBundle(t *testing.T) {
	a := certPEM("a")
	objs := &fakeObjects{bundles: []*certificatesv1.ClusterTrustBundle{bundle("plain", "", nil, a)}}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "prod"}}
	vol := &v1.Volume{Name: "ca", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
		{ClusterTrustBundle: &v1.ClusterTrustBundleProjection{Name: ptr.To("plain"), Path: "ca.pem"}},
		{ClusterTrustBundle: &v1.ClusterTrustBundleProjection{Name: ptr.To("plain"), Path: "again.pem"}},
	}}}}
	files, err := Payload(context.Background(), pod, vol, objs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if string(files["ca.pem"].Data) != a || string(files["again.pem"].Data) != a || files["ca.pem"].Mode != 0o644 {
		t.Errorf("files %v", files)
	}
	if len(objs.calls) != 1 {
		t.Errorf("bundles listed %d times (%v), want once a volume", len(objs.calls), objs.calls)
	}
}
