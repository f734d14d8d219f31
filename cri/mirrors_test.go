package cri

import (
	"testing"

	"github.com/containerd/containerd/v2/core/remotes/docker"
)

func TestWithMirrors(t *testing.T) {
	hosts := withMirrors(docker.ConfigureDefaultRegistries(), map[string][]string{
		"registry.k8s.io": {"http://10.0.0.5:5000", "https://mirror.example/k8s/"}})
	got, err := hosts("registry.k8s.io")
	if err != nil {
		t.Fatal(err)
	}
	var urls []string
	for _, h := range got {
		urls = append(urls, h.Scheme+"://"+h.Host+h.Path)
	}
	want := []string{"http://10.0.0.5:5000/v2", "https://mirror.example/k8s/v2", "https://registry.k8s.io/v2"}
	if len(urls) != len(want) {
		t.Fatalf("hosts %v, want %v", urls, want)
	}
	for i := range want {
		if urls[i] != want[i] {
			t.Errorf("host %d: %s, want %s", i, urls[i], want[i])
		}
	}
	if got[0].Capabilities.Has(docker.HostCapabilityPush) || !got[0].Capabilities.Has(docker.HostCapabilityResolve) {
		t.Errorf("mirror capabilities %v: want pull and resolve only", got[0].Capabilities)
	}
	if _, err := withMirrors(docker.ConfigureDefaultRegistries(), map[string][]string{"x": {"::"}})("x"); err == nil {
		t.Error("a mirror that is no URL was taken")
	}
	if own, _ := hosts("docker.io"); len(own) != 1 || own[0].Host != "registry-1.docker.io" {
		t.Errorf("docker.io without mirrors: %+v", own)
	}
}
