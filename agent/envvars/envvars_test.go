package envvars

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-lab/skiff/agent/downward"
)

func testSources() *fakeSources {
	return &fakeSources{
		configMaps: map[string]*v1.ConfigMap{
			"shop/cfg":   {Data: map[string]string{"B_KEY": "b", "A_KEY": "a", "1st": "one", "SHARED": "from-cfg"}},
			"shop/more":  {Data: map[string]string{"SHARED": "from-more"}},
			"shop/weird": {Data: map[string]string{"ok": "1", "has=eq": "2", "tab\there": "3"}},
			"other/cfg":  {Data: map[string]string{"A_KEY": "wrong namespace"}},
		},
		secrets: map[string]*v1.Secret{
			"shop/creds": {Data: map[string][]byte{"USER": []byte("admin"), "PASS": []byte("s3cret")}},
		},
	}
}

func testPod() *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "uid-1"},
		Spec: v1.PodSpec{NodeName: "n1", Containers: []v1.Container{{Name: "app", Resources: v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceMemory: resource.MustParse("64Mi")},
		}}}},
	}
}

func configMapRef(name, prefix string, optional bool) v1.EnvFromSource {
	return v1.EnvFromSource{Prefix: prefix, ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: name}, Optional: &optional}}
}

func secretRef(name, prefix string) v1.EnvFromSource {
	return v1.EnvFromSource{Prefix: prefix, SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: name}}}
}

func val(name, value string) v1.EnvVar { return v1.EnvVar{Name: name, Value: value} }

func from(name string, src v1.EnvVarSource) v1.EnvVar { return v1.EnvVar{Name: name, ValueFrom: &src} }

func field(path string) v1.EnvVarSource {
	return v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{APIVersion: "v1", FieldPath: path}}
}

func cmKey(name, key string, optional *bool) v1.EnvVarSource {
	return v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: name}, Key: key, Optional: optional}}
}

func secretKey(name, key string, optional *bool) v1.EnvVarSource {
	return v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: name}, Key: key, Optional: optional}}
}

func TestFor(t *testing.T) {
	ips := downward.IPs{Pod: []string{"10.1.0.5"}}
	tests := []struct {
		name     string
		services bool // the kubernetes service exists
		envFrom  []v1.EnvFromSource
		env      []v1.EnvVar
		want     []string
	}{
		{"nothing", false, nil, nil, []string{}},
		{"envFrom configMap, keys sorted", false, []v1.EnvFromSource{configMapRef("cfg", "", false)}, nil,
			[]string{"1st=one", "A_KEY=a", "B_KEY=b", "SHARED=from-cfg"}},
		{"envFrom prefix", false, []v1.EnvFromSource{configMapRef("more", "CFG_", false)}, nil, []string{"CFG_SHARED=from-more"}},
		{"envFrom secret", false, []v1.EnvFromSource{secretRef("creds", "")}, nil, []string{"PASS=s3cret", "USER=admin"}},
		{"later envFrom wins", false, []v1.EnvFromSource{configMapRef("cfg", "", false), configMapRef("more", "", false)}, nil,
			[]string{"1st=one", "A_KEY=a", "B_KEY=b", "SHARED=from-more"}},
		{"optional envFrom missing", false, []v1.EnvFromSource{configMapRef("nope", "", true), secretRef("creds", "S_")}, nil,
			[]string{"S_PASS=s3cret", "S_USER=admin"}},
		{"envFrom without a source is ignored", false, []v1.EnvFromSource{{Prefix: "X_"}}, nil, []string{}},
		{"envFrom overrides service vars", true, []v1.EnvFromSource{{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "svc"}}}}, nil,
			slices.Concat(apiServerVars[1:], []string{"KUBERNETES_SERVICE_HOST=overridden"})},
		{"plain and empty values", false, nil, []v1.EnvVar{val("A", "1"), val("B", "")}, []string{"A=1", "B="}},
		{"expansion against envFrom and earlier env", false, []v1.EnvFromSource{configMapRef("cfg", "", false)},
			[]v1.EnvVar{val("X", "x"), val("Y", "$(A_KEY)-$(X)-$(Z)"), val("Z", "z")},
			[]string{"1st=one", "A_KEY=a", "B_KEY=b", "SHARED=from-cfg", "X=x", "Y=a-x-$(Z)", "Z=z"}},
		{"expansion against service vars", true, nil, []v1.EnvVar{val("API", "https://$(KUBERNETES_SERVICE_HOST):$(KUBERNETES_SERVICE_PORT)")},
			slices.Concat(apiServerVars, []string{"API=https://10.96.0.1:443"})},
		{"escaped reference", false, nil, []v1.EnvVar{val("A", "1"), val("B", "$$(A) costs $$1")}, []string{"A=1", "B=$(A) costs $1"}},
		{"env overrides envFrom and moves last", false, []v1.EnvFromSource{configMapRef("more", "", false)},
			[]v1.EnvVar{val("SHARED", "mine"), val("OTHER", "o")}, []string{"SHARED=mine", "OTHER=o"}},
		{"repeated env: last wins", false, nil, []v1.EnvVar{val("A", "1"), val("B", "$(A)"), val("A", "2")}, []string{"B=1", "A=2"}},
		{"env overrides service var", true, nil, []v1.EnvVar{val("KUBERNETES_SERVICE_HOST", "elsewhere")},
			slices.Concat(apiServerVars[1:], []string{"KUBERNETES_SERVICE_HOST=elsewhere"})},
		{"fieldRef", false, nil, []v1.EnvVar{from("POD", field("metadata.name")), from("IP", field("status.podIP")), from("NODE", field("spec.nodeName"))},
			[]string{"POD=web", "IP=10.1.0.5", "NODE=n1"}},
		{"fieldRef without apiVersion", false, nil, []v1.EnvVar{from("NS", v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.namespace"}})},
			[]string{"NS=shop"}},
		{"resourceFieldRef", false, nil, []v1.EnvVar{
			from("CPU", v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.cpu"}}),
			from("MEM", v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "requests.memory", Divisor: resource.MustParse("1Mi")}}),
		}, []string{"CPU=2", "MEM=64"}},
		{"configMapKeyRef and secretKeyRef", false, nil, []v1.EnvVar{from("K", cmKey("cfg", "A_KEY", nil)), from("P", secretKey("creds", "PASS", nil))},
			[]string{"K=a", "P=s3cret"}},
		{"optional missing configMap: left out", false, nil, []v1.EnvVar{from("K", cmKey("nope", "A_KEY", new(true))), val("R", "$(K)")},
			[]string{"R=$(K)"}},
		{"optional missing key: left out", false, nil, []v1.EnvVar{from("K", cmKey("cfg", "NOPE", new(true))), from("S", secretKey("creds", "NOPE", new(true)))},
			[]string{}},
		{"optional missing secret: left out", false, nil, []v1.EnvVar{from("S", secretKey("nope", "PASS", new(true)))}, []string{}},
		{"optional present key is used", false, nil, []v1.EnvVar{from("K", cmKey("cfg", "B_KEY", new(true)))}, []string{"K=b"}},
		{"value wins over valueFrom", false, nil, []v1.EnvVar{{Name: "A", Value: "v", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}}},
			[]string{"A=v"}},
		{"empty valueFrom is empty", false, nil, []v1.EnvVar{from("A", v1.EnvVarSource{})}, []string{"A="}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := testSources()
			src.configMaps["shop/svc"] = &v1.ConfigMap{Data: map[string]string{"KUBERNETES_SERVICE_HOST": "overridden"}}
			if tt.services {
				src.services = map[string][]*v1.Service{"default": {apiServer}}
			}
			c := &v1.Container{Name: "app", EnvFrom: tt.envFrom, Env: tt.env}
			in := Input{IPs: ips, NodeAllocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse("2")}}
			res, err := For(context.Background(), src, testPod(), c, in)
			if err != nil {
				t.Fatalf("For: %v", err)
			}
			if !reflect.DeepEqual(res.Env, tt.want) {
				t.Errorf("env\n%s\nwant\n%s", strings.Join(res.Env, "\n"), strings.Join(tt.want, "\n"))
			}
			if len(res.Skipped) != 0 {
				t.Errorf("skipped %v, want none", res.Skipped)
			}
		})
	}
}

func TestForSkipsInvalidKeys(t *testing.T) {
	src := testSources()
	c := &v1.Container{Name: "app", EnvFrom: []v1.EnvFromSource{
		configMapRef("weird", "P_", false),
		secretRef("creds", "BAD="),
		configMapRef("cfg", "", false), // "1st" is valid under the relaxed rule
	}}
	res, err := For(context.Background(), src, testPod(), c, Input{})
	if err != nil {
		t.Fatalf("For: %v", err)
	}
	wantEnv := []string{"P_ok=1", "1st=one", "A_KEY=a", "B_KEY=b", "SHARED=from-cfg"}
	if !reflect.DeepEqual(res.Env, wantEnv) {
		t.Errorf("env %q, want %q", res.Env, wantEnv)
	}
	want := []SkippedKeys{
		{Kind: "ConfigMap", Namespace: "shop", Name: "weird", Keys: []string{"P_has=eq", "P_tab\there"}},
		{Kind: "Secret", Namespace: "shop", Name: "creds", Keys: []string{"BAD=PASS", "BAD=USER"}},
	}
	if !reflect.DeepEqual(res.Skipped, want) {
		t.Fatalf("skipped %+v, want %+v", res.Skipped, want)
	}
	messages := []string{
		"Keys [P_has=eq, P_tab\there] from the EnvFrom configMap shop/weird were skipped since they are considered invalid environment variable names.",
		"Keys [BAD=PASS, BAD=USER] from the EnvFrom secret shop/creds were skipped since they are considered invalid environment variable names.",
	}
	for i, m := range messages {
		if got := res.Skipped[i].Message(); got != m {
			t.Errorf("message %d:\n%s\nwant\n%s", i, got, m)
		}
	}
}

func TestForReadsEachObjectOnce(t *testing.T) {
	src := testSources()
	c := &v1.Container{Name: "app",
		EnvFrom: []v1.EnvFromSource{configMapRef("cfg", "", false), configMapRef("nope", "", true)},
		Env: []v1.EnvVar{from("A", cmKey("cfg", "A_KEY", nil)), from("B", cmKey("cfg", "B_KEY", nil)),
			from("U", secretKey("creds", "USER", nil)), from("P", secretKey("creds", "PASS", nil)),
			from("N", cmKey("nope", "X", new(true)))},
	}
	if _, err := For(context.Background(), src, testPod(), c, Input{}); err != nil {
		t.Fatalf("For: %v", err)
	}
	want := []string{"services default", "services shop", "configmap shop/cfg", "configmap shop/nope", "secret shop/creds", "configmap shop/nope"}
	if !reflect.DeepEqual(src.calls, want) {
		t.Errorf("calls %q, want %q", src.calls, want)
	}
}

func TestForErrors(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name     string
		envFrom  []v1.EnvFromSource
		env      []v1.EnvVar
		fail     string // when set, this Sources call fails with boom
		message  string // the whole error message
		missing  *MissingError
		notFound bool  // apierrors.IsNotFound holds
		is       error // errors.Is holds for this
	}{
		{"envFrom configMap missing", []v1.EnvFromSource{configMapRef("nope", "", false)}, nil, "",
			`configmap "nope" not found`, &MissingError{Kind: "ConfigMap", Namespace: "shop", Name: "nope"}, true, nil},
		{"envFrom secret missing", []v1.EnvFromSource{secretRef("nope", "")}, nil, "",
			`secret "nope" not found`, &MissingError{Kind: "Secret", Namespace: "shop", Name: "nope"}, true, nil},
		{"configMapKeyRef configMap missing", nil, []v1.EnvVar{from("K", cmKey("nope", "A_KEY", nil))}, "",
			`configmap "nope" not found`, &MissingError{Kind: "ConfigMap", Namespace: "shop", Name: "nope"}, true, nil},
		{"configMapKeyRef key missing", nil, []v1.EnvVar{from("K", cmKey("cfg", "NOPE", new(false)))}, "",
			"couldn't find key NOPE in ConfigMap shop/cfg", &MissingError{Kind: "ConfigMap", Namespace: "shop", Name: "cfg", Key: "NOPE"}, false, nil},
		{"secretKeyRef secret missing", nil, []v1.EnvVar{from("S", secretKey("nope", "PASS", nil))}, "",
			`secret "nope" not found`, &MissingError{Kind: "Secret", Namespace: "shop", Name: "nope"}, true, nil},
		{"secretKeyRef key missing", nil, []v1.EnvVar{from("S", secretKey("creds", "NOPE", nil))}, "",
			"couldn't find key NOPE in Secret shop/creds", &MissingError{Kind: "Secret", Namespace: "shop", Name: "creds", Key: "NOPE"}, false, nil},
		{"unsupported field", nil, []v1.EnvVar{from("F", field("spec.restartPolicy"))}, "",
			"env F: unsupported fieldPath: spec.restartPolicy", nil, false, downward.ErrUnsupportedField},
		{"unsupported apiVersion", nil, []v1.EnvVar{from("F", v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{APIVersion: "v2", FieldPath: "metadata.name"}})}, "",
			"env F: unsupported pod version: v2", nil, false, nil},
		{"unsupported resource", nil, []v1.EnvVar{from("R", v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.gpu"}})}, "",
			"env R: unsupported container resource: limits.gpu", nil, false, downward.ErrUnsupportedResource},
		{"fileKeyRef", nil, []v1.EnvVar{from("F", v1.EnvVarSource{FileKeyRef: &v1.FileKeySelector{VolumeName: "v", Path: "p", Key: "k"}})}, "",
			"env F: fileKeyRef is not supported", nil, false, nil},
		{"configMap read fails", []v1.EnvFromSource{configMapRef("cfg", "", true)}, nil, "configmap shop/cfg",
			"get configmap shop/cfg: boom", nil, false, boom},
		{"secret read fails", nil, []v1.EnvVar{from("S", secretKey("creds", "PASS", new(true)))}, "secret shop/creds",
			"get secret shop/creds: boom", nil, false, boom},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := testSources()
			if tt.fail != "" {
				src.err, src.failOnly = boom, tt.fail
			}
			c := &v1.Container{Name: "app", EnvFrom: tt.envFrom, Env: tt.env}
			_, err := For(context.Background(), src, testPod(), c, Input{})
			if err == nil {
				t.Fatal("For succeeded, want an error")
			}
			if err.Error() != tt.message {
				t.Errorf("error %q, want %q", err, tt.message)
			}
			var missing *MissingError
			if got := errors.As(err, &missing); got != (tt.missing != nil) || errors.Is(err, ErrMissing) != got {
				t.Fatalf("errors.As(*MissingError) = %v, errors.Is(ErrMissing) = %v; want both %v", got, errors.Is(err, ErrMissing), tt.missing != nil)
			}
			if missing != nil {
				if got := *missing; got.Kind != tt.missing.Kind || got.Namespace != tt.missing.Namespace || got.Name != tt.missing.Name || got.Key != tt.missing.Key {
					t.Errorf("MissingError %+v, want %+v", got, *tt.missing)
				}
			}
			if got := apierrors.IsNotFound(err); got != tt.notFound {
				t.Errorf("apierrors.IsNotFound = %v, want %v", got, tt.notFound)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("errors.Is(%v) is false for %v", tt.is, err)
			}
		})
	}
}
