package volumes

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func TestDownwardAPIFiles(t *testing.T) {
	fields := map[string]string{
		"metadata.name":   "web-0",
		"metadata.labels": "tier=\"front\"\napp=\"web\"",
	}
	resources := map[string]string{"app/limits.memory": "134217728"}
	fieldRef := func(p string) *v1.ObjectFieldSelector { return &v1.ObjectFieldSelector{FieldPath: p} }
	tests := []struct {
		name      string
		src       v1.DownwardAPIVolumeSource
		want      map[string]File
		wantCalls []string
		kind      error
		wantMsg   string
	}{
		{"field, kubelet default mode", v1.DownwardAPIVolumeSource{Items: []v1.DownwardAPIVolumeFile{
			{Path: "name", FieldRef: fieldRef("metadata.name")},
		}}, map[string]File{"name": {Data: []byte("web-0"), Mode: 0o644}}, []string{"field metadata.name"}, nil, ""},
		{"map lines are sorted", v1.DownwardAPIVolumeSource{Items: []v1.DownwardAPIVolumeFile{
			{Path: "labels", FieldRef: fieldRef("metadata.labels")},
		}}, map[string]File{"labels": {Data: []byte("app=\"web\"\ntier=\"front\""), Mode: 0o644}}, []string{"field metadata.labels"}, nil, ""},
		{"resource of a container", v1.DownwardAPIVolumeSource{Items: []v1.DownwardAPIVolumeFile{
			{Path: "mem", ResourceFieldRef: &v1.ResourceFieldSelector{ContainerName: "app", Resource: "limits.memory"}},
		}}, map[string]File{"mem": {Data: []byte("134217728"), Mode: 0o644}}, []string{"resource app/limits.memory"}, nil, ""},
		{"modes and cleaned paths", v1.DownwardAPIVolumeSource{DefaultMode: ptr.To[int32](0o400), Items: []v1.DownwardAPIVolumeFile{
			{Path: "./meta//name", FieldRef: fieldRef("metadata.name")},
			{Path: "own", FieldRef: fieldRef("metadata.name"), Mode: ptr.To[int32](0o600)},
		}}, map[string]File{"meta/name": {Data: []byte("web-0"), Mode: 0o400}, "own": {Data: []byte("web-0"), Mode: 0o600}},
			[]string{"field metadata.name", "field metadata.name"}, nil, ""},
		{"item without a reference is an empty file", v1.DownwardAPIVolumeSource{Items: []v1.DownwardAPIVolumeFile{{Path: "empty"}}},
			map[string]File{"empty": {Data: []byte{}, Mode: 0o644}}, nil, nil, ""},
		{"errors of all items, each naming its path", v1.DownwardAPIVolumeSource{Items: []v1.DownwardAPIVolumeFile{
			{Path: "x", FieldRef: fieldRef("spec.bogus")},
			{Path: "name", FieldRef: fieldRef("metadata.name")},
			{Path: "y", ResourceFieldRef: &v1.ResourceFieldSelector{ContainerName: "app", Resource: "limits.cpu"}},
		}}, nil, []string{"field spec.bogus", "field metadata.name", "resource app/limits.cpu"}, nil,
			"downwardAPI x: unsupported fieldPath \"spec.bogus\"\ndownwardAPI y: unsupported resource \"limits.cpu\""},
		{"invalid path", v1.DownwardAPIVolumeSource{Items: []v1.DownwardAPIVolumeFile{{Path: "../up", FieldRef: fieldRef("metadata.name")}}},
			nil, nil, ErrInvalidPath, "invalid path: must not contain '..': ../up"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeFields{fields: fields, resources: resources}
			got, err := DownwardAPIFiles(&tt.src, f)
			if tt.kind == nil && tt.wantMsg != "" {
				if err == nil || err.Error() != tt.wantMsg {
					t.Fatalf("error %v, want %q", err, tt.wantMsg)
				}
			} else {
				wantErr(t, err, tt.kind, tt.wantMsg)
			}
			if !sameFiles(got, tt.want) {
				t.Errorf("files %q, want %q", got, tt.want)
			}
			if !slices.Equal(f.calls, tt.wantCalls) {
				t.Errorf("resolver calls %v, want %v", f.calls, tt.wantCalls)
			}
		})
	}
	t.Run("no resolver", func(t *testing.T) {
		src := v1.DownwardAPIVolumeSource{Items: []v1.DownwardAPIVolumeFile{{Path: "n", FieldRef: fieldRef("metadata.name")}}}
		if _, err := DownwardAPIFiles(&src, nil); err == nil {
			t.Fatal("a field without a resolver did not fail")
		}
	})
}
