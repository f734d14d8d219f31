package apiserver

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/skiff-lab/skiff/controlplane/apiserver/authn"
	"github.com/skiff-lab/skiff/controlplane/apiserver/codec"
	"github.com/skiff-lab/skiff/controlplane/apiserver/registry"
	"k8s.io/apimachinery/pkg/runtime"
)

// fuzzContentTypes are the body formats the fuzzer picks from.
var fuzzContentTypes = []string{codec.MediaJSON, codec.MediaYAML, codec.MediaProtobuf}

// FuzzDecodeValidate feeds arbitrary request bodies, as JSON, YAML or
// protobuf, to every resource's create path short of the store: decode,
// defaults, validation, an update to itself and the table row. None of it
// may panic; an object updated to itself must pass the update rules, and
// its row must fill every column.
func FuzzDecodeValidate(f *testing.F) {
	f.Add([]byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","namespace":"default","labels":{"app":"web"}},`+
		`"spec":{"containers":[{"name":"web","image":"nginx:1.25","ports":[{"containerPort":80}],`+
		`"resources":{"limits":{"cpu":"500m","memory":"64Mi"}}}]}}`), uint8(0))
	f.Add([]byte("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  selector:\n    matchLabels: {app: web}\n"+
		"  template:\n    metadata:\n      labels: {app: web}\n    spec:\n      containers:\n      - {name: web, image: nginx}\n"), uint8(1))
	f.Add([]byte(`{"kind":"Service","apiVersion":"v1","metadata":{"name":"web"},"spec":{"type":"NodePort","ports":[{"port":80,"nodePort":31000}]}}`), uint8(0))
	f.Add([]byte(`{"kind":"Secret","apiVersion":"v1","metadata":{"name":"s"},"type":"kubernetes.io/dockerconfigjson","stringData":{"a":"b"}}`), uint8(0))
	f.Add([]byte("k8s\x00\x0a\x0f\x0a\x02v1\x12\x09ConfigMap\x12\x08\x0a\x06\x0a\x04conf"), uint8(2))
	f.Add([]byte(`{"metadata":{"name":"x"},"spec":{"replicas":-1,"strategy":{"rollingUpdate":{"maxSurge":"x%"}}}}`), uint8(0))
	f.Add([]byte(`{"kind":"Node","apiVersion":"v1","metadata":{"name":"n1","labels":{"node-role.kubernetes.io/worker":""}},`+
		`"spec":{"unschedulable":true,"taints":[{"key":"k","effect":"NoSchedule"}]},"status":{"conditions":[{"type":"Ready","status":"True"}]}}`), uint8(0))
	f.Add([]byte(`{"kind":"Event","apiVersion":"v1","metadata":{"name":"e","namespace":"default"},"involvedObject":{"kind":"Pod","name":"web"},"type":"Warning"}`), uint8(0))
	f.Add([]byte(`{"kind":"Endpoints","apiVersion":"v1","metadata":{"name":"web"},"subsets":[{"addresses":[{"ip":"10.0.0.1"}],"ports":[{"port":80}]}]}`), uint8(0))
	f.Add([]byte("kind: Lease\napiVersion: coordination.k8s.io/v1\nmetadata: {name: n1}\nspec: {holderIdentity: n1, leaseDurationSeconds: 40}\n"), uint8(1))
	f.Add([]byte(strings.Repeat("[", 20000)), uint8(1))
	f.Add([]byte{}, uint8(2))

	s := newTestServer(f)
	f.Fuzz(func(t *testing.T, data []byte, ct uint8) {
		dec, err := codec.DecoderFor(fuzzContentTypes[int(ct)%len(fuzzContentTypes)])
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range s.resources {
			obj := r.NewObj()
			if err := codec.DecodeInto(httptest.NewRecorder(), dec, bytes.Clone(data), r.GVK, obj, codec.ValidationStrict); err != nil {
				continue
			}
			checkDecoded(t, r, obj)
		}
	})
}

// checkDecoded runs what a create and an update of obj run after decoding.
func checkDecoded(t *testing.T, r *registry.Resource, obj runtime.Object) {
	r.Strategy.PrepareForCreate(obj)
	_ = registry.ValidateObjectMeta(registry.ObjectMeta(obj), r.Namespaced, registry.NameValidator(r))
	_ = r.Strategy.Validate(obj)

	old := obj.DeepCopyObject()
	r.Strategy.PrepareForUpdate(obj, old)
	if errs := r.Strategy.ValidateUpdate(obj, old); len(errs) > 0 {
		t.Errorf("%s: updating an object to itself fails: %v", r.Plural, errs)
	}

	if cells, cols := r.Strategy.Row(obj), r.Strategy.Columns(); len(cells) != len(cols) {
		t.Errorf("%s: %d cells for %d columns", r.Plural, len(cells), len(cols))
	}
}

// FuzzAuthorizationHeader feeds the authenticator chain any Authorization
// header: bearer tokens of the loopback table, bootstrap-token-shaped and
// JWT-shaped ones, other schemes. It must not panic, and it admits only
// the one known token (kube-apiserver's token is the header's second
// space-separated part), as its user.
func FuzzAuthorizationHeader(f *testing.F) {
	s := serverWith(&testing.T{}, map[string]authn.User{"s3cret": {Name: "alice", Groups: []string{"dev"}}}, "")
	for _, h := range []string{"Bearer s3cret", "bearer  s3cret ", "Bearer abcdef.0123456789abcdef", "Basic YWxpY2U6eA==",
		"Bearer eyJhbGciOiJSUzI1NiJ9.e30.c2ln", "Bearer", "", "Bearer s3cret extra"} {
		f.Add(h)
	}
	f.Fuzz(func(t *testing.T, header string) {
		r := httptest.NewRequest(http.MethodGet, "/api", nil)
		r.Header.Set("Authorization", header)
		resp, ok, _ := s.authn.AuthenticateRequest(r)
		if !ok {
			return
		}
		parts := strings.SplitN(strings.TrimSpace(header), " ", 3)
		if resp.User.GetName() != "alice" || len(parts) < 2 || parts[1] != "s3cret" {
			t.Errorf("header %q admitted as %q", header, resp.User.GetName())
		}
	})
}
