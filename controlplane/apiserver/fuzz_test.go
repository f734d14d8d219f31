package apiserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/skiff-lab/skiff/controlplane/apiserver/authn"
	"github.com/skiff-lab/skiff/controlplane/apiserver/codec"
	"github.com/skiff-lab/skiff/controlplane/apiserver/registry"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// fuzzContentTypes are the body formats the fuzzer picks from.
var fuzzContentTypes = []string{codec.MediaJSON, codec.MediaYAML, codec.MediaProtobuf}

// FuzzDecodeValidate feeds arbitrary request bodies, as JSON, YAML or
// protobuf, to every resource's create path short of the store: decode,
// defaults, validation, an update to itself and the table row. None of it
// may panic; an object the create rules accept, updated to itself, must
// pass the update rules, and its row must fill every column.
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
	f.Add([]byte(`{"kind":"RoleBinding","apiVersion":"rbac.authorization.k8s.io/v1","metadata":{"name":"b"},"roleRef":{}}`), uint8(0))
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
	metaErrs := registry.ValidateObjectMeta(registry.ObjectMeta(obj), r.Namespaced, registry.NameValidator(r))
	if errs := append(metaErrs, r.Strategy.Validate(obj)...); len(errs) == 0 {
		// An update validates the whole object again (as kube's do), so
		// only an object that could be created must update to itself.
		old := obj.DeepCopyObject()
		r.Strategy.PrepareForUpdate(obj, old)
		if errs := r.Strategy.ValidateUpdate(obj, old); len(errs) > 0 {
			t.Errorf("%s: updating an object to itself fails: %v", r.Plural, errs)
		}
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

// checkClientError fails t unless err is nil or a status error of the
// 4xx class: what the server refuses is the client's fault, never a 500.
func checkClientError(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	var se apierrors.APIStatus
	if !errors.As(err, &se) || se.Status().Code < 400 || se.Status().Code > 499 {
		t.Errorf("%s: %v, want a 4xx status error", what, err)
	}
}

// fuzzObject is an object of res named web (in default, if namespaced),
// labelled app=web and tier=front, as lists and watches match against.
func fuzzObject(res *registry.Resource, name string) runtime.Object {
	obj := res.NewObj()
	m := registry.ObjectMeta(obj)
	m.Name, m.Labels = name, map[string]string{"app": "web", "tier": "front"}
	if res.Namespaced {
		m.Namespace = "default"
	}
	return obj
}

// FuzzListSelector feeds any labelSelector and fieldSelector to the
// selector of any resource's list and watch, and matches an object with
// what it accepts. Nothing may panic and a refusal is a 4xx. When the
// authorizer takes the field selector to name one object (selectedName),
// the selector must match no object of another name: a user allowed
// that object alone must not see others.
func FuzzListSelector(f *testing.F) {
	s := newTestServer(f)
	for _, seed := range []struct {
		plural, labels, fields string
	}{
		{"pods", "app=web", ""}, {"pods", "app in (web,api),tier!=back", "status.phase=Running"},
		{"pods", "!canary,env", "spec.nodeName=n1,spec.hostNetwork!=true"}, {"nodes", "", "metadata.name=web"},
		{"configmaps", "", "metadata.name=web,metadata.namespace!=kube-system"}, {"secrets", "", "metadata.name==web,metadata.name=x"},
		{"events", "", "involvedObject.name=web,reason=Killing"}, {"pods", "app=", "spec.nodeName"},
		{"services", "x/y/z=1", "no.such.field=1"}, {"jobs", "app notin ()", "metadata.name\\=web"},
		{"secrets", "app=web,", "type=kubernetes.io/tls"}, {"clusterroles", "", "metadata.name=system:a..b"},
		{"pods", strings.Repeat("a=b,", 50) + "a", strings.Repeat("metadata.name!=a,", 50) + "metadata.name=web"},
	} {
		f.Add(seed.labels, seed.fields, resourceIndex(f, s, seed.plural))
	}
	f.Fuzz(func(t *testing.T, labelSel, fieldSel string, kind uint8) {
		res := s.resources[int(kind)%len(s.resources)]
		q := url.Values{"labelSelector": {labelSel}, "fieldSelector": {fieldSel}}
		r := &http.Request{Method: http.MethodGet, URL: &url.URL{RawQuery: q.Encode()}}
		sel, err := parseSelector(r, res)
		checkClientError(t, "labelSelector="+labelSel+"&fieldSelector="+fieldSel, err)
		name := selectedName(r)
		if err != nil {
			return
		}
		sel.matches(fuzzObject(res, "web"))
		if name != "" && sel.matches(fuzzObject(res, "x"+name)) {
			t.Errorf("fieldSelector %q selects the name %q, but matches %q", fieldSel, name, "x"+name)
		}
	})
}

// resourceIndex is the index in s.resources of the resource plural, as a
// fuzz target's kind byte picks it.
func resourceIndex(f *testing.F, s *Server, plural string) uint8 {
	i := slices.IndexFunc(s.resources, func(r *registry.Resource) bool { return r.Plural == plural })
	if i < 0 || i > 255 {
		f.Fatalf("no resource %s in the first 256", plural)
	}
	return uint8(i)
}

// FuzzListWatchQuery feeds any query to the parsers of a list's and a
// watch's options (selectors, limit, continue, resourceVersion and its
// match, timeoutSeconds, sendInitialEvents, allowWatchBookmarks). Nothing
// may panic, a refusal is a 4xx, and what is accepted is in range: no
// negative limit or revision, no revision beside a continue token, a
// watch that lasts.
func FuzzListWatchQuery(f *testing.F) {
	s := newTestServer(f)
	for _, q := range []string{
		"", "limit=500", "limit=500&continue=eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6Nywic3RhcnQiOiJhIn0",
		"resourceVersion=0", "resourceVersion=123&resourceVersionMatch=Exact", "resourceVersion=12&resourceVersionMatch=NotOlderThan",
		"watch=1&resourceVersion=99&allowWatchBookmarks=true&timeoutSeconds=300",
		"watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true",
		"watch=1&sendInitialEvents=true", "sendInitialEvents=maybe", "limit=-1", "limit=1e3", "resourceVersion=-5",
		"resourceVersion=abc", "resourceVersionMatch=Exact", "resourceVersionMatch=Newest&resourceVersion=1",
		"continue=x&resourceVersion=5", "timeoutSeconds=-1", "timeoutSeconds=0", "timeoutSeconds=9223372037",
		"labelSelector=app%3Dweb&fieldSelector=spec.nodeName%3Dn1&limit=2", "%zz=1&limit=%",
	} {
		f.Add(q, resourceIndex(f, s, "pods"))
	}
	f.Fuzz(func(t *testing.T, query string, kind uint8) {
		res := s.resources[int(kind)%len(s.resources)]
		r := &http.Request{Method: http.MethodGet, URL: &url.URL{RawQuery: query}}
		if sel, err := parseSelector(r, res); err == nil {
			opts, err := listOptions(r, sel)
			checkClientError(t, "list "+query, err)
			if err == nil && (opts.Limit < 0 || opts.Revision < 0 || opts.Continue != "" && opts.Revision != 0) {
				t.Errorf("list %q: options %+v", query, opts)
			}
		}
		p, err := parseWatch(r, res)
		checkClientError(t, "watch "+query, err)
		if err == nil && (p.rev < 0 || p.timeout <= 0) {
			t.Errorf("watch %q: from revision %d for %v", query, p.rev, p.timeout)
		}
	})
}

// patchTypes are the patches FuzzPatch applies, picked by its pt byte
// (whose higher values pick the field validation too).
var patchTypes = []types.PatchType{types.JSONPatchType, types.MergePatchType, types.StrategicMergePatchType}

// patchTargets are the stored objects FuzzPatch patches: lists merged by
// name (containers) and by port, a map, a cluster-scoped object.
var patchTargets = []string{
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","namespace":"default","labels":{"app":"web"},"resourceVersion":"7"},` +
		`"spec":{"containers":[{"name":"web","image":"nginx:1.25","ports":[{"containerPort":80}]},{"name":"log","image":"fluentbit:2"}],` +
		`"tolerations":[{"key":"k","operator":"Exists"}]},"status":{"phase":"Running"}}`,
	`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"default"},"spec":{"replicas":2,` +
		`"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},` +
		`"spec":{"containers":[{"name":"web","image":"nginx","env":[{"name":"A","value":"1"}]}]}}}}`,
	`{"apiVersion":"v1","kind":"Service","metadata":{"name":"web","namespace":"default"},` +
		`"spec":{"clusterIP":"10.96.0.20","ports":[{"name":"http","port":80,"targetPort":8080},{"name":"https","port":443}],"selector":{"app":"web"}}}`,
	`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"web","namespace":"default"},"data":{"a":"1","b":"2"}}`,
	`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"web"},` +
		`"rules":[{"apiGroups":[""],"resources":["pods"],"verbs":["get","list"]}]}`,
}

// FuzzPatch applies any JSON, merge or strategic merge patch to stored
// objects as a PATCH request does, then runs the update rules on what it
// accepts. Nothing may panic, a refused patch is a 4xx, and an accepted
// one keeps the object's name.
func FuzzPatch(f *testing.F) {
	const jsonPatch, merge, strategic = 0, 1, 2                            // in patchTypes
	const pod, deployment, service, configMap, clusterRole = 0, 1, 2, 3, 4 // in patchTargets
	for _, seed := range []struct {
		pt, target uint8
		patch      string
	}{
		{jsonPatch, pod, `[{"op":"replace","path":"/metadata/labels/app","value":"api"}]`},
		{jsonPatch, pod, `[{"op":"add","path":"/spec/containers/-","value":{"name":"side","image":"busybox"}},{"op":"remove","path":"/spec/containers/0"}]`},
		{jsonPatch, deployment, `[{"op":"test","path":"/spec/replicas","value":2},{"op":"replace","path":"/spec/replicas","value":5}]`},
		{jsonPatch, pod, `[{"op":"test","path":"/metadata/name","value":"other"}]`},
		{jsonPatch, configMap, `[{"op":"move","from":"/data","path":"/data/x"}]`},
		{jsonPatch, deployment, `[{"op":"copy","from":"/spec","path":"/spec/template"}]`},
		{jsonPatch, service, `[{"op":"replace","path":"/metadata/name","value":"other"}]`},
		{jsonPatch, clusterRole, `[{"op":"add","path":"/rules/0/verbs/-","value":"watch"}]`},
		{jsonPatch, pod, `[`},
		{merge, pod, `{"metadata":{"labels":{"app":null,"new":"x"}}}`},
		{merge, deployment, `{"spec":{"replicas":"three"}}`},
		{merge, service, `{"spec":null}`},
		{merge, configMap, `{"kind":"Secret","data":{"a":null}}`},
		{merge, pod, `{"spec":{"containers":[{"name":"web","image":"nginx:1.26"}]}}`},
		{merge, configMap, `null`},
		{strategic, pod, `{"spec":{"containers":[{"name":"web","image":"nginx:1.26"}]}}`},
		{strategic, service, `{"spec":{"ports":[{"port":80,"$patch":"delete"}]}}`},
		{strategic, pod, `{"spec":{"$setElementOrder/containers":[{"name":"log"},{"name":"web"}]}}`},
		{strategic, configMap, `{"$patch":"replace","metadata":{"name":"web"}}`},
		{strategic, deployment, `{"spec":{"template":{"spec":{"containers":[{"name":"web","env":[{"name":"A","$patch":"delete"}]}]}}}}`},
		{strategic, pod, `{"spec":{"tolerations":[{"$patch":"replace"}],"$retainKeys":["containers"]}}`},
		{strategic, clusterRole, `{"rules":[{"verbs":["*"]}],"$deleteFromPrimitiveList/x":["1"]}`},
		{strategic, service, ``},
	} {
		f.Add([]byte(seed.patch), seed.pt, seed.target)
	}
	s := newTestServer(f)
	stored := make([]runtime.Object, len(patchTargets))
	reqs := make([]request, len(patchTargets))
	for i, doc := range patchTargets {
		stored[i], reqs[i] = storedObject(f, s, doc)
	}
	fvs := []codec.FieldValidation{codec.ValidationStrict, codec.ValidationWarn, codec.ValidationIgnore}
	f.Fuzz(func(t *testing.T, patch []byte, pt, target uint8) {
		i := int(target) % len(stored)
		req, fv := reqs[i], fvs[int(pt)/len(patchTypes)%len(fvs)]
		cur := stored[i].DeepCopyObject()
		obj, err := patchObject(httptest.NewRecorder(), req, patchTypes[int(pt)%len(patchTypes)], bytes.Clone(patch), fv, cur.DeepCopyObject())
		checkClientError(t, "patch "+string(patch), err)
		if err != nil {
			return
		}
		if name := registry.ObjectMeta(obj).Name; name != req.name {
			t.Errorf("patch %s renamed %s to %q", patch, req.name, name)
		}
		req.res.Strategy.PrepareForUpdate(obj, cur)
		_ = req.res.Strategy.ValidateUpdate(obj, cur)
	})
}

// storedObject decodes doc as the server stores it after a create, and
// the request that patches it.
func storedObject(f *testing.F, s *Server, doc string) (runtime.Object, request) {
	var tm metav1.TypeMeta
	if err := json.Unmarshal([]byte(doc), &tm); err != nil {
		f.Fatal(err)
	}
	res := resourceFor(f, s, tm.GroupVersionKind())
	obj := res.NewObj()
	if err := codec.DecodeInto(httptest.NewRecorder(), codec.StrictJSON, []byte(doc), res.GVK, obj, codec.ValidationStrict); err != nil {
		f.Fatal(err)
	}
	res.Strategy.PrepareForCreate(obj)
	m := registry.ObjectMeta(obj)
	return obj, request{res: res, namespace: m.Namespace, name: m.Name, verb: "patch"}
}
