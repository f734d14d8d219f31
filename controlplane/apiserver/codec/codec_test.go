package codec

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/skiff-lab/skiff/controlplane/apiserver/apitest"
	"github.com/skiff-lab/skiff/controlplane/apiserver/registry"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestDecoderFor(t *testing.T) {
	tests := []struct {
		contentType string
		want        runtime.Decoder
	}{
		{"", StrictJSON},
		{"application/json", StrictJSON},
		{"application/json; charset=utf-8", StrictJSON},
		{"*/*", nil},
		{"application/yaml", strictYAML},
		{"application/x-yaml", nil},
		{"application/vnd.kubernetes.protobuf", protoCodec},
		{"text/plain", nil},
		{"application/json;;", nil},
	}
	for _, tt := range tests {
		t.Run(tt.contentType, func(t *testing.T) {
			dec, err := DecoderFor(tt.contentType)
			if tt.want == nil {
				var se apierrors.APIStatus
				if !errors.As(err, &se) || se.Status().Code != http.StatusUnsupportedMediaType {
					t.Errorf("err = %v, want 415", err)
				}
				return
			}
			if err != nil || dec != tt.want {
				t.Errorf("decoderFor(%q) = %v, %v", tt.contentType, dec, err)
			}
		})
	}
}

func TestDecodeInto(t *testing.T) {
	podGVK := corev1.SchemeGroupVersion.WithKind("Pod")
	tests := []struct {
		name     string
		dec      runtime.Decoder
		body     string
		gvk      bool // decode as a Deployment instead of a Pod
		fv       FieldValidation
		badReq   bool
		warnings int
	}{
		{"pod with type meta", StrictJSON, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"}}`, false, ValidationStrict, false, 0},
		{"pod without type meta", StrictJSON, `{"metadata":{"name":"p"}}`, false, ValidationStrict, false, 0},
		{"YAML pod", strictYAML, "kind: Pod\napiVersion: v1\nmetadata:\n  name: p\n", false, ValidationStrict, false, 0},
		{"other kind", StrictJSON, `{"apiVersion":"v1","kind":"Service","metadata":{"name":"p"}}`, false, ValidationStrict, true, 0},
		{"other version", StrictJSON, `{"apiVersion":"v2","kind":"Pod","metadata":{"name":"p"}}`, false, ValidationStrict, true, 0},
		{"other group", StrictJSON, `{"apiVersion":"apps/v1","kind":"Pod","metadata":{"name":"p"}}`, false, ValidationStrict, true, 0},
		{"pod as deployment", StrictJSON, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"}}`, true, ValidationStrict, true, 0},
		{"unknown field, strict", StrictJSON, `{"metadata":{"name":"p"},"spec":{"bogus":1}}`, false, ValidationStrict, true, 0},
		{"unknown field, warn", StrictJSON, `{"metadata":{"name":"p"},"spec":{"bogus":1}}`, false, ValidationWarn, false, 1},
		{"unknown and duplicate fields, warn", StrictJSON, `{"metadata":{"name":"p","generateName":"a","generateName":"b"},"bogus":1}`, false, ValidationWarn, false, 2},
		{"unknown field, ignore", StrictJSON, `{"metadata":{"name":"p"},"spec":{"bogus":1}}`, false, ValidationIgnore, false, 0},
		{"wrong type", StrictJSON, `{"metadata":{"name":5}}`, false, ValidationIgnore, true, 0},
		{"not JSON", StrictJSON, `name: p`, false, ValidationStrict, true, 0},
		{"not protobuf", protoCodec, `{"metadata":{"name":"p"}}`, false, ValidationStrict, true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gvk, into := podGVK, runtime.Object(&corev1.Pod{})
			if tt.gvk {
				gvk, into = appsv1.SchemeGroupVersion.WithKind("Deployment"), &appsv1.Deployment{}
			}
			w := httptest.NewRecorder()
			err := DecodeInto(w, tt.dec, []byte(tt.body), gvk, into, tt.fv)
			if apitest.BadRequestCase(t, err, tt.badReq) {
				return
			}
			if name := registry.ObjectMeta(into).Name; name != "p" {
				t.Errorf("decoded name %q", name)
			}
			if got := len(w.Header().Values("Warning")); got != tt.warnings {
				t.Errorf("%d warnings %q, want %d", got, w.Header().Values("Warning"), tt.warnings)
			}
		})
	}
}

func TestParseFieldValidation(t *testing.T) {
	tests := []struct {
		query  string
		want   FieldValidation
		badReq bool
	}{
		{"", ValidationWarn, false},
		{"fieldValidation=Strict", ValidationStrict, false},
		{"fieldValidation=Ignore", ValidationIgnore, false},
		{"fieldValidation=strict", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			got, err := ParseFieldValidation(httptest.NewRequest(http.MethodPost, "/api/v1/pods?"+tt.query, nil))
			if apierrors.IsBadRequest(err) != tt.badReq || got != tt.want {
				t.Errorf("parseFieldValidation = %q, %v; want %q, bad request %v", got, err, tt.want, tt.badReq)
			}
		})
	}
}

// TestAcceptsConversion: the Accept headers that ask for a Table or for
// the objects' metadata alone, each checked against both.
func TestAcceptsConversion(t *testing.T) {
	tests := []struct {
		accept          string
		table, metadata bool
	}{
		{"", false, false},
		{"application/json", false, false},
		{"application/json;as=Table;v=v1;g=meta.k8s.io", true, false},
		{"application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json", true, false},
		{"application/json;as=Table;v=v2;g=meta.k8s.io", false, false},
		{"application/yaml;as=Table;v=v1;g=meta.k8s.io", true, false},
		{"application/json;as=Table;v=v1;g=example.com,application/json;as=Table;v=v1;g=meta.k8s.io", true, false},
		{"application/vnd.kubernetes.protobuf, application/json;as=Table;v=v1;g=meta.k8s.io", false, false},
		{"application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json", false, true},
		{"application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1", false, true},
		{"application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1beta1", false, true},
		{"application/json;as=PartialObjectMetadata;g=apps;v=v1", false, false},
		{"application/json,application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1", false, false}, // plain JSON first
	}
	for _, tt := range tests {
		r := httptest.NewRequest(http.MethodGet, "/api/v1/pods", nil)
		r.Header.Set("Accept", tt.accept)
		if table, metadata := AcceptsTable(r), AcceptsMetadata(r); table != tt.table || metadata != tt.metadata {
			t.Errorf("Accept %q: table %v, metadata %v; want %v, %v", tt.accept, table, metadata, tt.table, tt.metadata)
		}
	}
}

func TestWriteObjectNegotiates(t *testing.T) {
	tests := []struct {
		accept, want string
		prefix       string
	}{
		{"", MediaJSON, "{"},
		{"*/*", MediaJSON, "{"},
		{"application/yaml", MediaYAML, "apiVersion: v1\n"},
		{"application/vnd.kubernetes.protobuf, application/json", MediaProtobuf, "k8s\x00"},
		{"text/html, application/yaml;q=0.5", MediaYAML, "apiVersion: v1\n"},
		{"text/html", MediaJSON, "{"}, // nothing acceptable: JSON
	}
	for _, tt := range tests {
		t.Run(tt.accept, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/api/v1/namespaces/default/pods/p", nil)
			r.Header.Set("Accept", tt.accept)
			w := httptest.NewRecorder()
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
			pod.GetObjectKind().SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Pod"))
			WriteNegotiated(w, r, http.StatusOK, pod)
			if got := w.Header().Get("Content-Type"); got != tt.want {
				t.Errorf("Content-Type = %q, want %q", got, tt.want)
			}
			if body := w.Body.String(); !strings.HasPrefix(body, tt.prefix) {
				t.Errorf("body starts %q, want %q", body[:min(len(body), 20)], tt.prefix)
			}
		})
	}
}
