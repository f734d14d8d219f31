// Package codec is how the API server reads request bodies and writes
// answers, as kube-apiserver does: the Scheme of every served type, content
// negotiation (JSON, YAML, protobuf; as=Table and PartialObjectMetadata),
// decoding with the fieldValidation modes, and errors written as Status.
package codec

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/skiff-lab/skiff/controlplane/apiserver/registry"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apiserver/pkg/endpoints/handlers/negotiation"
	"k8s.io/client-go/kubernetes/scheme"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
)

// Scheme holds every type the API server serves: client-go's scheme with
// the meta.k8s.io/v1 types (Table, PartialObjectMetadata) and the metrics
// API's added, and the conversions between the two APIs of Events.
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
	for _, add := range []func(*runtime.Scheme) error{registry.AddEventConversions, registry.AddAutoscalerConversions} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}

const (
	MediaJSON     = "application/json"
	MediaYAML     = "application/yaml"
	MediaProtobuf = "application/vnd.kubernetes.protobuf"
)

// FieldValidation is how strictly a request body is decoded.
type FieldValidation string

const (
	ValidationIgnore FieldValidation = "Ignore"
	ValidationWarn   FieldValidation = "Warn"
	ValidationStrict FieldValidation = "Strict"
)

// ParseFieldValidation is the request's fieldValidation mode; Warn by
// default.
func ParseFieldValidation(r *http.Request) (FieldValidation, error) {
	switch v := FieldValidation(r.URL.Query().Get("fieldValidation")); v {
	case "":
		return ValidationWarn, nil
	case ValidationIgnore, ValidationWarn, ValidationStrict:
		return v, nil
	default:
		return "", apierrors.NewBadRequest(fmt.Sprintf("fieldValidation must be one of Ignore, Warn or Strict, got %q", v))
	}
}

// codecs are the media types the server speaks, as kube-apiserver's:
// JSON, YAML and protobuf, with strict decoders for JSON and YAML.
var codecs = serializer.NewCodecFactory(Scheme, serializer.EnableStrict)

var (
	StrictJSON = SerializerFor(MediaJSON).StrictSerializer
	strictYAML = SerializerFor(MediaYAML).StrictSerializer
	protoCodec = SerializerFor(MediaProtobuf).Serializer
)

// SerializerFor is the serializer of media type media.
func SerializerFor(media string) runtime.SerializerInfo {
	info, ok := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), media)
	if !ok {
		panic("no serializer for " + media)
	}
	return info
}

// DecoderFor picks the body decoder for a Content-Type (JSON when there
// is none), with apiserver's negotiation.
func DecoderFor(contentType string) (runtime.Decoder, error) {
	info, err := negotiation.NegotiateInputSerializerForMediaType(contentType, false, codecs)
	if err != nil {
		return nil, UnsupportedMediaType(contentType)
	}
	if info.StrictSerializer != nil {
		return info.StrictSerializer, nil
	}
	return info.Serializer, nil
}

// DecodeInto decodes data into into, expecting kind gvk. Unknown or
// duplicate fields are errors, warnings or ignored as fv says. A body of
// another kind or version is a BadRequest.
func DecodeInto(w http.ResponseWriter, dec runtime.Decoder, data []byte, gvk schema.GroupVersionKind, into runtime.Object, fv FieldValidation) error {
	obj, got, err := dec.Decode(data, &gvk, into)
	if err != nil && runtime.IsStrictDecodingError(err) && obj != nil {
		if fv == ValidationStrict {
			return apierrors.NewBadRequest(err.Error())
		}
		if fv == ValidationWarn {
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

// WriteJSON writes v as a JSON response with the given status code.
func WriteJSON(w http.ResponseWriter, code int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		WriteError(w, apierrors.NewInternalError(err))
		return
	}
	w.Header().Set("Content-Type", MediaJSON)
	w.WriteHeader(code)
	_, _ = w.Write(append(data, '\n'))
}

// WriteNegotiated writes obj in the media type the client negotiated:
// protobuf (client-go's typed clients ask for it), YAML or JSON. An object
// with no protobuf form (a Table) is written as JSON.
func WriteNegotiated(w http.ResponseWriter, r *http.Request, code int, obj runtime.Object) {
	info, _ := NegotiateOutput(r)
	var buf bytes.Buffer
	if err := info.Serializer.Encode(obj, &buf); err != nil {
		WriteJSON(w, code, obj)
		return
	}
	w.Header().Set("Content-Type", info.MediaType)
	w.WriteHeader(code)
	_, _ = w.Write(buf.Bytes())
}

// output is what a request's Accept header asks for, negotiated as
// kube-apiserver does (apiserver's negotiation): the media type to answer
// in and, for as=Table or as=PartialObjectMetadata(List), the kind to
// answer with.
type output struct {
	info    runtime.SerializerInfo
	convert *schema.GroupVersionKind
}

type outputKey struct{}

// WithOutput negotiates r's output once, for every later NegotiateOutput
// on the request it returns; a header the server cannot satisfy is a 406.
func WithOutput(r *http.Request) (*http.Request, error) {
	opts, info, err := negotiation.NegotiateOutputMediaType(r, codecs, conversions{})
	if err != nil {
		return r, err
	}
	return r.WithContext(context.WithValue(r.Context(), outputKey{}, output{info: info, convert: opts.Convert})), nil
}

// NegotiateOutput is r's negotiated output: as WithOutput found it, or
// negotiated now, with JSON for a header the server cannot satisfy.
func NegotiateOutput(r *http.Request) (runtime.SerializerInfo, *schema.GroupVersionKind) {
	if o, ok := r.Context().Value(outputKey{}).(output); ok {
		return o.info, o.convert
	}
	opts, info, err := negotiation.NegotiateOutputMediaType(r, codecs, conversions{})
	if err != nil {
		return SerializerFor(MediaJSON), nil
	}
	return info, opts.Convert
}

// conversions are the kinds a response may be turned into on request: a
// Table, or the objects' metadata alone.
type conversions struct{}

func (conversions) AllowsMediaTypeTransform(_, _ string, to *schema.GroupVersionKind) bool {
	if to == nil {
		return true
	}
	if to.Group != metav1.GroupName || (to.Version != "v1" && to.Version != "v1beta1") {
		return false
	}
	return to.Kind == "Table" || to.Kind == PartialGVK.Kind || to.Kind == PartialListGVK.Kind
}

func (conversions) AllowsServerVersion(string) bool { return false }

func (conversions) AllowsStreamSchema(s string) bool { return s == "watch" }

// prefersProtobuf reports whether the client negotiated protobuf.
func prefersProtobuf(r *http.Request) bool {
	info, _ := NegotiateOutput(r)
	return info.MediaType == MediaProtobuf
}

// AcceptsTable reports whether the client asked for a meta.k8s.io Table.
func AcceptsTable(r *http.Request) bool {
	_, to := NegotiateOutput(r)
	return to != nil && to.Kind == "Table"
}
