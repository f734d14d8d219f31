package volumes

import (
	"errors"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
)

func TestProjectedFiles(t *testing.T) {
	found := Found{
		ConfigMaps:   map[string]*v1.ConfigMap{"ca": {Data: map[string]string{"ca.crt": "CA", "shared": "from configmap"}}},
		Secrets:      map[string]*v1.Secret{"tls": {Data: map[string][]byte{"tls.key": []byte("KEY"), "shared": []byte("from secret")}}},
		Tokens:       map[string]string{"token": "JWT"},
		Certificates: map[int]Credentials{0: {Key: []byte("KEY"), Chain: []byte("CHAIN")}},
	}
	cmSource := func(name string, optional bool, items ...v1.KeyToPath) v1.VolumeProjection {
		return v1.VolumeProjection{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: name}, Optional: &optional, Items: items}}
	}
	secretSource := func(name string, items ...v1.KeyToPath) v1.VolumeProjection {
		return v1.VolumeProjection{Secret: &v1.SecretProjection{LocalObjectReference: v1.LocalObjectReference{Name: name}, Items: items}}
	}
	namespace := v1.VolumeProjection{DownwardAPI: &v1.DownwardAPIProjection{Items: []v1.DownwardAPIVolumeFile{
		{Path: "namespace", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.namespace"}},
	}}}
	tests := []struct {
		name    string
		src     v1.ProjectedVolumeSource
		want    map[string]File
		kind    error
		wantMsg string // exact, or the lines the joined error must contain
	}{
		{"sources merge with the projected default mode", v1.ProjectedVolumeSource{DefaultMode: ptr.To[int32](0o440), Sources: []v1.VolumeProjection{
			cmSource("ca", false, v1.KeyToPath{Key: "ca.crt", Path: "ca.crt"}),
			secretSource("tls", v1.KeyToPath{Key: "tls.key", Path: "tls.key", Mode: ptr.To[int32](0o400)}),
			namespace,
		}}, map[string]File{
			"ca.crt": {Data: []byte("CA"), Mode: 0o440}, "tls.key": {Data: []byte("KEY"), Mode: 0o400}, "namespace": {Data: []byte("prod"), Mode: 0o440},
		}, nil, ""},
		{"kubelet default mode", v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{cmSource("ca", false, v1.KeyToPath{Key: "ca.crt", Path: "ca"})}},
			map[string]File{"ca": {Data: []byte("CA"), Mode: 0o644}}, nil, ""},
		{"a later source wins a shared path", v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
			cmSource("ca", false, v1.KeyToPath{Key: "shared", Path: "shared"}), secretSource("tls", v1.KeyToPath{Key: "shared", Path: "shared"}),
		}}, map[string]File{"shared": {Data: []byte("from secret"), Mode: 0o644}}, nil, ""},
		{"missing key names its source", v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
			cmSource("ca", false, v1.KeyToPath{Key: "nope", Path: "n"}),
		}}, nil, ErrMissingKey, `configmap "ca": configmap references non-existent config key: nope`},
		{"missing object", v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{secretSource("gone")}},
			nil, errNotFound, `secret "gone" not found`},
		{"missing optional object", v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{cmSource("gone", true), namespace}},
			map[string]File{"namespace": {Data: []byte("prod"), Mode: 0o644}}, nil, ""},
		{"a service account token", v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
			namespace, {ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token"}},
		}}, map[string]File{"namespace": {Data: []byte("prod"), Mode: 0o644}, "token": {Data: []byte("JWT"), Mode: 0o644}}, nil, ""},
		{"unsupported source", v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
			namespace, {},
		}}, nil, ErrUnsupported, "projected source 1 (empty) is not supported"},
		{"a pod certificate", v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
			{PodCertificate: &v1.PodCertificateProjection{KeyPath: "key", CertificateChainPath: "chain", CredentialBundlePath: "bundle"}},
		}}, map[string]File{"key": {Data: []byte("KEY"), Mode: 0o644}, "chain": {Data: []byte("CHAIN"), Mode: 0o644},
			"bundle": {Data: []byte("KEYCHAIN"), Mode: 0o644}}, nil, ""},
		{"errors of all sources are joined", v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
			secretSource("gone"), secretSource("tls", v1.KeyToPath{Key: "nope", Path: "n"}),
		}}, nil, errNotFound, "secret \"gone\" not found\nsecret \"tls\": references non-existent secret key: nope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ProjectedFiles(&tt.src, found, &fakeFields{fields: map[string]string{"metadata.namespace": "prod"}})
			wantErr(t, err, tt.kind, tt.wantMsg)
			if !sameFiles(got, tt.want) {
				t.Errorf("files %q, want %q", got, tt.want)
			}
		})
	}
	t.Run("joined errors keep every kind", func(t *testing.T) {
		src := tests[len(tests)-1].src
		_, err := ProjectedFiles(&src, found, nil)
		if !apierrors.IsNotFound(err) || !errors.Is(err, ErrMissingKey) {
			t.Errorf("%v: want both a NotFound and ErrMissingKey inside", err)
		}
	})
}
