package apiserver

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

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
		{"", strictJSON},
		{"application/json", strictJSON},
		{"application/json; charset=utf-8", strictJSON},
		{"*/*", nil},
		{"application/yaml", strictYAML},
		{"application/x-yaml", nil},
		{"application/vnd.kubernetes.protobuf", protoCodec},
		{"text/plain", nil},
		{"application/json;;", nil},
	}
	for _, tt := range tests {
		t.Run(tt.contentType, func(t *testing.T) {
			dec, err := decoderFor(tt.contentType)
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
		fv       fieldValidation
		badReq   bool
		warnings int
	}{
		{"pod with type meta", strictJSON, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"}}`, false, validationStrict, false, 0},
		{"pod without type meta", strictJSON, `{"metadata":{"name":"p"}}`, false, validationStrict, false, 0},
		{"YAML pod", strictYAML, "kind: Pod\napiVersion: v1\nmetadata:\n  name: p\n", false, validationStrict, false, 0},
		{"other kind", strictJSON, `{"apiVersion":"v1","kind":"Service","metadata":{"name":"p"}}`, false, validationStrict, true, 0},
		{"other version", strictJSON, `{"apiVersion":"v2","kind":"Pod","metadata":{"name":"p"}}`, false, validationStrict, true, 0},
		{"other group", strictJSON, `{"apiVersion":"apps/v1","kind":"Pod","metadata":{"name":"p"}}`, false, validationStrict, true, 0},
		{"pod as deployment", strictJSON, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"}}`, true, validationStrict, true, 0},
		{"unknown field, strict", strictJSON, `{"metadata":{"name":"p"},"spec":{"bogus":1}}`, false, validationStrict, true, 0},
		{"unknown field, warn", strictJSON, `{"metadata":{"name":"p"},"spec":{"bogus":1}}`, false, validationWarn, false, 1},
		{"unknown and duplicate fields, warn", strictJSON, `{"metadata":{"name":"p","generateName":"a","generateName":"b"},"bogus":1}`, false, validationWarn, false, 2},
		{"unknown field, ignore", strictJSON, `{"metadata":{"name":"p"},"spec":{"bogus":1}}`, false, validationIgnore, false, 0},
		{"wrong type", strictJSON, `{"metadata":{"name":5}}`, false, validationIgnore, true, 0},
		{"not JSON", strictJSON, `name: p`, false, validationStrict, true, 0},
		{"not protobuf", protoCodec, `{"metadata":{"name":"p"}}`, false, validationStrict, true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gvk, into := podGVK, runtime.Object(&corev1.Pod{})
			if tt.gvk {
				gvk, into = appsv1.SchemeGroupVersion.WithKind("Deployment"), &appsv1.Deployment{}
			}
			w := httptest.NewRecorder()
			err := decodeInto(w, tt.dec, []byte(tt.body), gvk, into, tt.fv)
			if badRequestCase(t, err, tt.badReq) {
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
		want   fieldValidation
		badReq bool
	}{
		{"", validationWarn, false},
		{"fieldValidation=Strict", validationStrict, false},
		{"fieldValidation=Ignore", validationIgnore, false},
		{"fieldValidation=strict", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			got, err := parseFieldValidation(httptest.NewRequest(http.MethodPost, "/api/v1/pods?"+tt.query, nil))
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
		if table, metadata := acceptsTable(r), acceptsMetadata(r); table != tt.table || metadata != tt.metadata {
			t.Errorf("Accept %q: table %v, metadata %v; want %v, %v", tt.accept, table, metadata, tt.table, tt.metadata)
		}
	}
}

func TestWriteObjectNegotiates(t *testing.T) {
	tests := []struct {
		accept, want string
		prefix       string
	}{
		{"", mediaJSON, "{"},
		{"*/*", mediaJSON, "{"},
		{"application/yaml", mediaYAML, "apiVersion: v1\n"},
		{"application/vnd.kubernetes.protobuf, application/json", mediaProtobuf, "k8s\x00"},
		{"text/html, application/yaml;q=0.5", mediaYAML, "apiVersion: v1\n"},
		{"text/html", mediaJSON, "{"}, // nothing acceptable: JSON
	}
	for _, tt := range tests {
		t.Run(tt.accept, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/api/v1/namespaces/default/pods/p", nil)
			r.Header.Set("Accept", tt.accept)
			w := httptest.NewRecorder()
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
			writeObject(w, r, http.StatusOK, pod, corev1.SchemeGroupVersion.WithKind("Pod"))
			if got := w.Header().Get("Content-Type"); got != tt.want {
				t.Errorf("Content-Type = %q, want %q", got, tt.want)
			}
			if body := w.Body.String(); !strings.HasPrefix(body, tt.prefix) {
				t.Errorf("body starts %q, want %q", body[:min(len(body), 20)], tt.prefix)
			}
		})
	}
}

// badRequestCase checks err against a case that wants a BadRequest or
// success, failing t otherwise; it reports whether the case wanted the
// error, so that there is nothing more to check.
func badRequestCase(t *testing.T, err error, wantBadRequest bool) bool {
	t.Helper()
	if wantBadRequest {
		if !apierrors.IsBadRequest(err) {
			t.Fatalf("err = %v, want BadRequest", err)
		}
		return true
	}
	if err != nil {
		t.Fatal(err)
	}
	return false
}
