package registry

import (
	"reflect"
	"strings"
	"testing"

	"github.com/skiff-lab/skiff/controlplane/apiserver/apitest"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func TestConfigMapValidate(t *testing.T) {
	tests := []struct {
		name string
		cm   corev1.ConfigMap
		want []string
	}{
		{"valid keys", corev1.ConfigMap{Data: map[string]string{"app.conf": "x", "A_B-c": "y"}, BinaryData: map[string][]byte{"logo.png": {1}}}, nil},
		{"slash in key", corev1.ConfigMap{Data: map[string]string{"a/b": "x"}}, []string{"data[a/b]: Invalid value"}},
		{"dot-dot key", corev1.ConfigMap{Data: map[string]string{"..": "x"}}, []string{"data[..]: Invalid value"}},
		{"space in binary key", corev1.ConfigMap{BinaryData: map[string][]byte{"a b": {1}}}, []string{"data[a b]: Invalid value"}},
		{"key in data and binaryData", corev1.ConfigMap{Data: map[string]string{"k": "x"}, BinaryData: map[string][]byte{"k": {1}}},
			[]string{"binaryData[k]: Invalid value"}},
		{"too large", corev1.ConfigMap{Data: map[string]string{"a": strings.Repeat("x", maxDataBytes), "b": "y"}}, []string{"data: Too long"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			apitest.CheckErrorFields(t, configMapStrategy{}.Validate(&tt.cm), tt.want...)
		})
	}
}

func TestConfigMapImmutable(t *testing.T) {
	yes, no := ptr.To(true), ptr.To(false)
	tests := []struct {
		name string
		old  corev1.ConfigMap
		new  corev1.ConfigMap
		want []string
	}{
		{"mutable: data may change", corev1.ConfigMap{Data: map[string]string{"a": "1"}}, corev1.ConfigMap{Data: map[string]string{"a": "2"}}, nil},
		{"becoming immutable", corev1.ConfigMap{Data: map[string]string{"a": "1"}, Immutable: no},
			corev1.ConfigMap{Data: map[string]string{"a": "2"}, Immutable: yes}, nil},
		{"immutable: same data", corev1.ConfigMap{Data: map[string]string{"a": "1"}, Immutable: yes},
			corev1.ConfigMap{Data: map[string]string{"a": "1"}, Immutable: yes}, nil},
		{"immutable: data change", corev1.ConfigMap{Data: map[string]string{"a": "1"}, Immutable: yes},
			corev1.ConfigMap{Data: map[string]string{"a": "2"}, Immutable: yes}, []string{"data: Forbidden"}},
		{"immutable: binaryData change", corev1.ConfigMap{BinaryData: map[string][]byte{"a": {1}}, Immutable: yes},
			corev1.ConfigMap{BinaryData: map[string][]byte{"a": {2}}, Immutable: yes}, []string{"data: Forbidden"}},
		{"immutable: unset", corev1.ConfigMap{Immutable: yes}, corev1.ConfigMap{}, []string{"immutable: Forbidden"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			apitest.CheckErrorFields(t, configMapStrategy{}.ValidateUpdate(&tt.new, &tt.old), tt.want...)
		})
	}
}

func TestPrepareSecret(t *testing.T) {
	tests := []struct {
		name     string
		secret   corev1.Secret
		wantType corev1.SecretType
		wantData map[string][]byte
	}{
		{"type defaults to Opaque", corev1.Secret{}, corev1.SecretTypeOpaque, nil},
		{"stringData folded into data", corev1.Secret{Type: corev1.SecretTypeBasicAuth, StringData: map[string]string{"username": "admin"}},
			corev1.SecretTypeBasicAuth, map[string][]byte{"username": []byte("admin")}},
		{"stringData wins over data", corev1.Secret{Data: map[string][]byte{"a": []byte("old"), "b": []byte("keep")}, StringData: map[string]string{"a": "new"}},
			corev1.SecretTypeOpaque, map[string][]byte{"a": []byte("new"), "b": []byte("keep")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.secret.DeepCopy()
			secretStrategy{}.PrepareForCreate(s)
			if s.Type != tt.wantType || !reflect.DeepEqual(s.Data, tt.wantData) || s.StringData != nil {
				t.Errorf("secret = type %q data %q stringData %v; want type %q data %q, no stringData", s.Type, s.Data, s.StringData, tt.wantType, tt.wantData)
			}
		})
	}
}

func TestSecretValidate(t *testing.T) {
	tests := []struct {
		name   string
		secret corev1.Secret
		want   []string
	}{
		{"opaque", corev1.Secret{Data: map[string][]byte{"password": []byte("x")}}, nil},
		{"bad key", corev1.Secret{Data: map[string][]byte{"pass word": []byte("x")}}, []string{"data[pass word]: Invalid value"}},
		{"dockerconfigjson without its key", corev1.Secret{Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{"config.json": []byte("{}")}},
			[]string{"data[.dockerconfigjson]: Required value"}},
		{"dockerconfigjson from stringData", corev1.Secret{Type: corev1.SecretTypeDockerConfigJson, StringData: map[string]string{".dockerconfigjson": "{}"}}, nil},
		{"tls without key", corev1.Secret{Type: corev1.SecretTypeTLS, Data: map[string][]byte{"tls.crt": []byte("c")}}, []string{"data[tls.key]: Required value"}},
		{"service account token without annotation", corev1.Secret{Type: corev1.SecretTypeServiceAccountToken},
			[]string{"metadata.annotations[kubernetes.io/service-account.name]: Required value"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.secret.DeepCopy()
			secretStrategy{}.PrepareForCreate(s)
			apitest.CheckErrorFields(t, secretStrategy{}.Validate(s), tt.want...)
		})
	}
}

func TestSecretValidateUpdate(t *testing.T) {
	yes := ptr.To(true)
	tests := []struct {
		name string
		old  corev1.Secret
		new  corev1.Secret
		want []string
	}{
		{"data change", corev1.Secret{Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"a": []byte("1")}},
			corev1.Secret{Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"a": []byte("2")}}, nil},
		{"type change", corev1.Secret{Type: corev1.SecretTypeOpaque}, corev1.Secret{Type: corev1.SecretTypeBasicAuth}, []string{"type: Invalid value"}},
		{"immutable: data change", corev1.Secret{Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"a": []byte("1")}, Immutable: yes},
			corev1.Secret{Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"a": []byte("2")}, Immutable: yes}, []string{"data: Forbidden"}},
		{"immutable: stringData change", corev1.Secret{Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"a": []byte("1")}, Immutable: yes},
			corev1.Secret{Type: corev1.SecretTypeOpaque, StringData: map[string]string{"a": "2"}, Immutable: yes}, []string{"data: Forbidden"}},
		{"immutable: same data, empty vs nil", corev1.Secret{Type: corev1.SecretTypeOpaque, Immutable: yes},
			corev1.Secret{Type: corev1.SecretTypeOpaque, Data: map[string][]byte{}, Immutable: yes}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.new.DeepCopy()
			secretStrategy{}.PrepareForUpdate(s, &tt.old)
			apitest.CheckErrorFields(t, secretStrategy{}.ValidateUpdate(s, &tt.old), tt.want...)
		})
	}
}
