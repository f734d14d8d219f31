package apiserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	jsonserializer "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes/scheme"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
)

// Scheme holds every type the API server serves: client-go's scheme with
// the meta.k8s.io/v1 types (Table, PartialObjectMetadata) and the metrics
// API's added.
var Scheme = newScheme()

func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := scheme.AddToScheme(s); err != nil {
		panic(err)
	}
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	if err := metav1.AddMetaToScheme(s); err != nil {
		panic(err)
	}
	if err := metricsv1beta1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}

const (
	mediaJSON     = "application/json"
	mediaYAML     = "application/yaml"
	mediaProtobuf = "application/vnd.kubernetes.protobuf"
)

// fieldValidation is how strictly a request body is decoded.
type fieldValidation string

const (
	validationIgnore fieldValidation = "Ignore"
	validationWarn   fieldValidation = "Warn"
	validationStrict fieldValidation = "Strict"
)

func parseFieldValidation(r *http.Request) (fieldValidation, error) {
	switch v := fieldValidation(r.URL.Query().Get("fieldValidation")); v {
	case "":
		return validationWarn, nil
	case validationIgnore, validationWarn, validationStrict:
		return v, nil
	default:
		return "", apierrors.NewBadRequest(fmt.Sprintf("fieldValidation must be one of Ignore, Warn or Strict, got %q", v))
	}
}

var (
	strictJSON = jsonserializer.NewSerializerWithOptions(jsonserializer.DefaultMetaFactory, Scheme, Scheme, jsonserializer.SerializerOptions{Strict: true})
	strictYAML = jsonserializer.NewSerializerWithOptions(jsonserializer.DefaultMetaFactory, Scheme, Scheme, jsonserializer.SerializerOptions{Yaml: true, Strict: true})
	protoCodec = protobuf.NewSerializer(Scheme, Scheme)
)

// decoderFor picks the body decoder for a Content-Type.
func decoderFor(contentType string) (runtime.Decoder, error) {
	media, _, err := mime.ParseMediaType(contentType)
	if contentType == "" {
		media, err = mediaJSON, nil
	}
	if err != nil {
		return nil, unsupportedMediaType(contentType)
	}
	switch media {
	case mediaJSON, "*/*":
		return strictJSON, nil
	case mediaYAML, "application/x-yaml", "text/yaml":
		return strictYAML, nil
	case mediaProtobuf:
		return protoCodec, nil
	}
	return nil, unsupportedMediaType(contentType)
}

// decodeInto decodes data into into, expecting kind gvk. Unknown or
// duplicate fields are errors, warnings or ignored as fv says. A body of
// another kind or version is a BadRequest.
func decodeInto(w http.ResponseWriter, dec runtime.Decoder, data []byte, gvk schema.GroupVersionKind, into runtime.Object, fv fieldValidation) error {
	obj, got, err := dec.Decode(data, &gvk, into)
	if err != nil && runtime.IsStrictDecodingError(err) && obj != nil {
		if fv == validationStrict {
			return apierrors.NewBadRequest(err.Error())
		}
		if fv == validationWarn {
			for _, e := range err.(interface{ Errors() []error }).Errors() {
				addWarning(w, e.Error())
			}
		}
		err = nil
	}
	if err != nil && !(runtime.IsNotRegisteredError(err) && got != nil) {
		return apierrors.NewBadRequest(fmt.Sprintf("decode %s: %v", gvk.Kind, err))
	}
	if got.GroupVersion() != gvk.GroupVersion() {
		return apierrors.NewBadRequest(fmt.Sprintf("the API version in the data (%s) does not match the expected API version (%s)", got.GroupVersion(), gvk.GroupVersion()))
	}
	if got.Kind != gvk.Kind || obj != into {
		return apierrors.NewBadRequest(fmt.Sprintf("the kind in the data (%s) does not match the expected kind (%s)", got.Kind, gvk.Kind))
	}
	return nil
}

func addWarning(w http.ResponseWriter, text string) {
	w.Header().Add("Warning", fmt.Sprintf("299 - %q", text))
}

// writeJSON writes v as a JSON response with the given status code.
func writeJSON(w http.ResponseWriter, code int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		writeError(w, apierrors.NewInternalError(err))
		return
	}
	w.Header().Set("Content-Type", mediaJSON)
	w.WriteHeader(code)
	_, _ = w.Write(append(data, '\n'))
}

// writeObject writes an API object, stamping its apiVersion and kind, as
// protobuf when the client prefers it (client-go's typed clients do) and
// as JSON otherwise.
func writeObject(w http.ResponseWriter, r *http.Request, code int, obj runtime.Object, gvk schema.GroupVersionKind) {
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	if prefersProtobuf(r) {
		var buf bytes.Buffer
		if err := protoCodec.Encode(obj, &buf); err == nil {
			w.Header().Set("Content-Type", mediaProtobuf)
			w.WriteHeader(code)
			_, _ = w.Write(buf.Bytes())
			return
		}
	}
	writeJSON(w, code, obj)
}

// prefersProtobuf reports whether the Accept header names protobuf before
// any JSON type.
func prefersProtobuf(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		media, _, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		switch media {
		case mediaProtobuf:
			return true
		case mediaJSON, "*/*", "application/*":
			return false
		}
	}
	return false
}

// acceptsTable reports whether the Accept header asks for a meta.k8s.io Table.
func acceptsTable(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		media, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil || media != mediaJSON {
			continue
		}
		if params["as"] == "Table" && params["g"] == "meta.k8s.io" && (params["v"] == "v1" || params["v"] == "v1beta1") {
			return true
		}
	}
	return false
}
