package volumes

import (
	"context"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestPayload(t *testing.T) {
	objs := func() *fakeObjects {
		return &fakeObjects{
			configMaps: map[string]*v1.ConfigMap{"prod/cfg": {Data: map[string]string{"k": "v"}}},
			secrets:    map[string]*v1.Secret{"prod/db": {Data: map[string][]byte{"pass": []byte("pw")}}},
		}
	}
	volume := func(name string, src v1.VolumeSource) *v1.Volume { return &v1.Volume{Name: name, VolumeSource: src} }
	cmRef := func(name string) v1.LocalObjectReference { return v1.LocalObjectReference{Name: name} }
	tests := []struct {
		name      string
		vol       *v1.Volume
		fail      error
		want      map[string]File
		wantCalls []string
		kind      error
		wantMsg   string
	}{
		{"configMap", volume("config", v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: cmRef("cfg")}}), nil,
			map[string]File{"k": {Data: []byte("v"), Mode: 0o644}}, []string{"configmap prod/cfg"}, nil, ""},
		{"secret", volume("creds", v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "db"}}), nil,
			map[string]File{"pass": {Data: []byte("pw"), Mode: 0o644}}, []string{"secret prod/db"}, nil, ""},
		{"downwardAPI", volume("info", v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{Items: []v1.DownwardAPIVolumeFile{
			{Path: "ns", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}}}), nil,
			map[string]File{"ns": {Data: []byte("prod"), Mode: 0o644}}, nil, nil, ""},
		{"projected looks up each object", volume("all", v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
			{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: cmRef("cfg")}},
			{Secret: &v1.SecretProjection{LocalObjectReference: cmRef("db")}},
			{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: cmRef("maybe"), Optional: ptr.To(true)}},
		}}}), nil, map[string]File{"k": {Data: []byte("v"), Mode: 0o644}, "pass": {Data: []byte("pw"), Mode: 0o644}},
			[]string{"configmap prod/cfg", "secret prod/db", "configmap prod/maybe"}, nil, ""},
		{"missing config map, kubelet wording", volume("config", v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: cmRef("nope")}}), nil,
			nil, []string{"configmap prod/nope"}, errNotFound, `volume "config": configmap "nope" not found`},
		{"missing optional secret", volume("creds", v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "nope", Optional: ptr.To(true)}}), nil,
			map[string]File{}, []string{"secret prod/nope"}, nil, ""},
		{"missing key", volume("config", v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: cmRef("cfg"),
			Items: []v1.KeyToPath{{Key: "other", Path: "o"}}}}), nil,
			nil, []string{"configmap prod/cfg"}, ErrMissingKey, `volume "config": configmap references non-existent config key: other`},
		{"lookup failure is not a missing object", volume("creds", v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "db", Optional: ptr.To(true)}}),
			errUnavailable, nil, []string{"secret prod/db"}, errUnavailable, `volume "creds": get secret "db": apiserver unavailable`},
		{"lookup failure in a projection", volume("all", v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
			{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: cmRef("cfg")}}}}}),
			errUnavailable, nil, []string{"configmap prod/cfg"}, errUnavailable, `volume "all": get configmap "cfg": apiserver unavailable`},
		{"a projected token", volume("api", v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
			{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token", Audience: "vault"}}}}}),
			nil, map[string]File{"token": {Data: []byte("token of web for vault"), Mode: 0o644}}, []string{"token prod/web for vault"}, nil, ""},
		{"other volume types", volume("scratch", v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}), nil,
			nil, nil, ErrUnsupported, `volume "scratch": not a configMap, secret, downwardAPI or projected volume`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := objs()
			o.fail = tt.fail
			fields := &fakeFields{fields: map[string]string{"metadata.namespace": "prod"}}
			got, err := Payload(context.Background(), prodPod, tt.vol, o, fields)
			wantErr(t, err, tt.kind, tt.wantMsg)
			if !sameFiles(got, tt.want) {
				t.Errorf("files %q, want %q", got, tt.want)
			}
			if !slices.Equal(o.calls, tt.wantCalls) {
				t.Errorf("lookups %v, want %v", o.calls, tt.wantCalls)
			}
		})
	}
}

// prodPod is the pod whose volumes the tests compute.
var prodPod = &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "prod", Name: "web"}}

// TestPayloadWritten checks that the two halves fit: what Payload computes
// WriteAtomic accepts and publishes.
func TestPayloadWritten(t *testing.T) {
	o := &fakeObjects{configMaps: map[string]*v1.ConfigMap{"prod/cfg": {
		Data:       map[string]string{"app.conf": "x=1"},
		BinaryData: map[string][]byte{"logo.png": {0x89, 'P', 'N', 'G'}},
	}}}
	vol := &v1.Volume{Name: "config", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
		LocalObjectReference: v1.LocalObjectReference{Name: "cfg"},
		Items:                []v1.KeyToPath{{Key: "app.conf", Path: "etc/app.conf"}, {Key: "logo.png", Path: "logo.png"}},
	}}}
	files, err := Payload(context.Background(), prodPod, vol, o, nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	mustWrite(t, dir, files)
	got := visible(t, dir)
	if got["etc/app.conf"] != "x=1" || got["logo.png"] != "\x89PNG" || len(got) != 2 {
		t.Errorf("volume holds %q", got)
	}
}
