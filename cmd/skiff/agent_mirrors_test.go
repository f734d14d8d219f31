package main

import (
	"slices"
	"testing"
)

func TestParseMirrors(t *testing.T) {
	got, err := parseMirrors([]string{"registry.k8s.io=http://10.0.0.5:5000", "registry.k8s.io=https://m.example/k8s", "docker.io=https://hub.example"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got["registry.k8s.io"], []string{"http://10.0.0.5:5000", "https://m.example/k8s"}) || len(got["docker.io"]) != 1 {
		t.Errorf("mirrors %v", got)
	}
	for _, bad := range []string{"registry.k8s.io", "=http://x", "r=ftp://x", "r=http://"} {
		if _, err := parseMirrors([]string{bad}); err == nil {
			t.Errorf("%q taken", bad)
		}
	}
}
