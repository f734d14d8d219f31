package volumes

import (
	"errors"
	"io/fs"
	"maps"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// sameFiles compares payloads by content and mode.
func sameFiles(a, b map[string]File) bool {
	return maps.EqualFunc(a, b, func(x, y File) bool { return string(x.Data) == string(y.Data) && x.Mode == y.Mode })
}

// wantErr checks err against an expected kind and exact message; a nil
// kind with an empty message expects success.
func wantErr(t *testing.T, err error, kind error, msg string) {
	t.Helper()
	switch {
	case kind == nil && msg == "":
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
	case err == nil:
		t.Fatalf("no error, want %q", msg)
	case kind == errNotFound && !apierrors.IsNotFound(err), kind != errNotFound && !errors.Is(err, kind):
		t.Fatalf("error %q is not of kind %v", err, kind)
	case msg != "" && err.Error() != msg:
		t.Fatalf("error %q, want %q", err, msg)
	}
}

// errNotFound stands for apierrors.IsNotFound in test tables.
var errNotFound = errors.New("apierrors.IsNotFound")

func TestConfigMapFiles(t *testing.T) {
	cm := &v1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "cfg"},
		Data:       map[string]string{"a": "text", "both": "from data"},
		BinaryData: map[string][]byte{"bin": {0, 1, 2}, "both": []byte("from binaryData")},
	}
	file := func(data string, mode fs.FileMode) File { return File{Data: []byte(data), Mode: mode} }
	tests := []struct {
		name    string
		src     v1.ConfigMapVolumeSource
		cm      *v1.ConfigMap
		want    map[string]File
		kind    error
		wantMsg string
	}{
		{"all keys, kubelet default mode", v1.ConfigMapVolumeSource{}, cm,
			map[string]File{"a": file("text", 0o644), "bin": file("\x00\x01\x02", 0o644), "both": file("from data", 0o644)}, nil, ""},
		{"defaultMode", v1.ConfigMapVolumeSource{DefaultMode: ptr.To[int32](0o400)}, cm,
			map[string]File{"a": file("text", 0o400), "bin": file("\x00\x01\x02", 0o400), "both": file("from data", 0o400)}, nil, ""},
		{"items map keys to paths with their own modes", v1.ConfigMapVolumeSource{
			DefaultMode: ptr.To[int32](0o440),
			Items:       []v1.KeyToPath{{Key: "a", Path: "dir/a.txt", Mode: ptr.To[int32](0o600)}, {Key: "bin", Path: "bin.dat"}},
		}, cm, map[string]File{"dir/a.txt": file("text", 0o600), "bin.dat": file("\x00\x01\x02", 0o440)}, nil, ""},
		{"data wins over binaryData", v1.ConfigMapVolumeSource{Items: []v1.KeyToPath{{Key: "both", Path: "b"}}}, cm,
			map[string]File{"b": file("from data", 0o644)}, nil, ""},
		{"missing key", v1.ConfigMapVolumeSource{Items: []v1.KeyToPath{{Key: "a", Path: "a"}, {Key: "nope", Path: "n"}}}, cm,
			nil, ErrMissingKey, "configmap references non-existent config key: nope"},
		{"missing key of an optional config map is skipped", v1.ConfigMapVolumeSource{
			Optional: ptr.To(true), Items: []v1.KeyToPath{{Key: "a", Path: "a"}, {Key: "nope", Path: "n"}},
		}, cm, map[string]File{"a": file("text", 0o644)}, nil, ""},
		{"missing config map", v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}, nil,
			nil, errNotFound, `configmap "cfg" not found`},
		{"missing optional config map is empty", v1.ConfigMapVolumeSource{Optional: ptr.To(true)}, nil, map[string]File{}, nil, ""},
		{"item path with backstep", v1.ConfigMapVolumeSource{Items: []v1.KeyToPath{{Key: "a", Path: "../a"}}}, cm,
			nil, ErrInvalidPath, "invalid path: must not contain '..': ../a"},
		{"absolute item path", v1.ConfigMapVolumeSource{Items: []v1.KeyToPath{{Key: "a", Path: "/a"}}}, cm,
			nil, ErrInvalidPath, "invalid path: must be relative path: /a"},
		{"key that is not a valid file name", v1.ConfigMapVolumeSource{}, &v1.ConfigMap{Data: map[string]string{"..x": "v"}},
			nil, ErrInvalidPath, "invalid path: must not start with '..': ..x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ConfigMapFiles(&tt.src, tt.cm)
			wantErr(t, err, tt.kind, tt.wantMsg)
			if !sameFiles(got, tt.want) {
				t.Errorf("files %v, want %v", got, tt.want)
			}
		})
	}
}

func TestSecretFiles(t *testing.T) {
	s := &v1.Secret{Data: map[string][]byte{"user": []byte("admin"), "pass": []byte("s3cret")}}
	tests := []struct {
		name    string
		src     v1.SecretVolumeSource
		secret  *v1.Secret
		want    map[string]File
		kind    error
		wantMsg string
	}{
		{"all keys, kubelet default mode", v1.SecretVolumeSource{}, s,
			map[string]File{"user": {Data: []byte("admin"), Mode: 0o644}, "pass": {Data: []byte("s3cret"), Mode: 0o644}}, nil, ""},
		{"items and modes", v1.SecretVolumeSource{DefaultMode: ptr.To[int32](0o400), Items: []v1.KeyToPath{
			{Key: "pass", Path: "creds/pass"}, {Key: "user", Path: "creds/user", Mode: ptr.To[int32](0o444)}}}, s,
			map[string]File{"creds/pass": {Data: []byte("s3cret"), Mode: 0o400}, "creds/user": {Data: []byte("admin"), Mode: 0o444}}, nil, ""},
		{"missing key", v1.SecretVolumeSource{Items: []v1.KeyToPath{{Key: "token", Path: "t"}}}, s,
			nil, ErrMissingKey, "references non-existent secret key: token"},
		{"missing key, optional", v1.SecretVolumeSource{Optional: ptr.To(true), Items: []v1.KeyToPath{{Key: "token", Path: "t"}}}, s,
			map[string]File{}, nil, ""},
		{"missing secret", v1.SecretVolumeSource{SecretName: "db"}, nil, nil, errNotFound, `secret "db" not found`},
		{"missing optional secret", v1.SecretVolumeSource{SecretName: "db", Optional: ptr.To(true)}, nil, map[string]File{}, nil, ""},
		{"optional false is not optional", v1.SecretVolumeSource{SecretName: "db", Optional: ptr.To(false)}, nil, nil, errNotFound, `secret "db" not found`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := SecretFiles(&tt.src, tt.secret)
			wantErr(t, err, tt.kind, tt.wantMsg)
			if !sameFiles(got, tt.want) {
				t.Errorf("files %v, want %v", got, tt.want)
			}
		})
	}
}
