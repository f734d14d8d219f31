package registries

import (
	"context"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containerd/containerd/v2/core/remotes/docker"
)

func write(t *testing.T, name, data string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoad(t *testing.T) {
	r, err := Load(write(t, "registries.yaml", `mirrors:
  docker.io:
    endpoint: ["https://mirror.test:5000", "http://10.0.0.5/cache"]
    rewrite: {"^library/(.*)": "hub/$1"}
configs:
  mirror.test:5000:
    auth: {auth: dXNlcjpwYXNz}
    tls: {insecure_skip_verify: true}
`), true)
	if err != nil || len(r.Mirrors["docker.io"].Endpoints) != 2 || !r.Configs["mirror.test:5000"].TLS.InsecureSkipVerify {
		t.Fatalf("Load: %+v %v", r, err)
	}
	if u, p, err := r.Configs["mirror.test:5000"].login(); u != "user" || p != "pass" || err != nil {
		t.Errorf("auth decoded as %q %q %v", u, p, err)
	}
	if r, err := Load(filepath.Join(t.TempDir(), "absent.yaml"), false); err != nil || len(r.Mirrors) != 0 {
		t.Errorf("an absent default file: %+v %v, want an empty registry", r, err)
	}
	for name, tc := range map[string]struct{ data, want string }{
		"unknown key":      {"mirror: {}\n", "bad.yaml: yaml: unmarshal errors:\n  line 1: field mirror not found"},
		"endpoint":         {"mirrors:\n  docker.io:\n    endpoint:\n    - https://fine\n    - ftp://x\n", `bad.yaml:5: mirrors."docker.io".endpoint[1]: "ftp://x"`},
		"rewrite":          {"mirrors: {docker.io: {endpoint: [\"https://m\"], rewrite: {\"(\": x}}}\n", `bad.yaml:1: mirrors."docker.io".rewrite."("`},
		"ca_file":          {"configs:\n  m:\n    tls: {ca_file: /nonexistent/ca.pem}\n", `bad.yaml:3: configs."m".tls: `},
		"cert without key": {"configs: {m: {tls: {cert_file: /etc/hostname}}}\n", `bad.yaml:1: configs."m".tls: `},
		"auth not base64":  {"configs: {m: {auth: {auth: \"!!\"}}}\n", `bad.yaml:1: configs."m".auth: `},
		"not YAML":         {"mirrors: [\n", "bad.yaml: yaml: line 1"},
	} {
		_, err := Load(write(t, "bad.yaml", tc.data), true)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q (the file, line and field named)", name, err, tc.want)
		}
	}
}

func TestHosts(t *testing.T) {
	r := &Registry{Mirrors: map[string]Mirror{
		"registry.k8s.io": {Endpoints: []string{"http://10.0.0.5:5000", "https://mirror.test/k8s/"}},
		"*":               {Endpoints: []string{"https://all.test"}},
	}}
	urls := func(registry string, insecure ...string) []string {
		hosts, err := r.Hosts(nil, insecure)(registry)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, h := range hosts {
			out = append(out, h.Scheme+"://"+h.Host+h.Path)
		}
		return out
	}
	if got := strings.Join(urls("registry.k8s.io"), " "); got != "http://10.0.0.5:5000/v2 https://mirror.test/k8s/v2 https://registry.k8s.io/v2" {
		t.Errorf("registry.k8s.io: %s", got)
	}
	if got := strings.Join(urls("docker.io"), " "); got != "https://all.test/v2 https://registry-1.docker.io/v2" {
		t.Errorf("docker.io through *: %s", got)
	}
	if got := strings.Join(urls("local.test:5000", "local.test:5000"), " "); got != "https://all.test/v2 http://local.test:5000/v2" {
		t.Errorf("an insecure registry: %s", got)
	}
	hosts, _ := r.Hosts(nil, nil)("registry.k8s.io")
	if hosts[0].Capabilities.Has(docker.HostCapabilityPush) || !hosts[2].Capabilities.Has(docker.HostCapabilityPush) {
		t.Error("mirrors pull and resolve only; the registry itself also takes pushes")
	}
}

// TestMirrorRequests: a pull's requests to a mirror carry the rewritten
// repository, the mirror's own login (not the pull's) and trust its CA.
func TestMirrorRequests(t *testing.T) {
	var seen []string
	mirror := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		user, pass, _ := req.BasicAuth()
		seen = append(seen, req.URL.Path+" "+user+":"+pass)
		if user == "" {
			w.Header().Set("WWW-Authenticate", `Basic realm="mirror"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/vnd.oci.image.manifest.v1+json")
		w.Header().Set("Docker-Content-Digest", "sha256:0000000000000000000000000000000000000000000000000000000000000000")
		w.WriteHeader(http.StatusOK)
	}))
	defer mirror.Close()
	ca := write(t, "ca.pem", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: mirror.Certificate().Raw})))
	host := strings.TrimPrefix(mirror.URL, "https://")
	r := &Registry{
		Mirrors: map[string]Mirror{"example.test": {Endpoints: []string{mirror.URL + "/cache"}, Rewrites: map[string]string{"^team/(.*)$": "mirrored/$1"}}},
		Configs: map[string]Config{host: {Auth: &Auth{Username: "m", Password: "secret"}, TLS: &TLS{CAFile: ca}}},
	}
	creds := func(string) (string, string) { return "pull", "secret-of-pull" }
	resolver := docker.NewResolver(docker.ResolverOptions{Hosts: r.Hosts(creds, nil)})
	if _, _, err := resolver.Resolve(context.Background(), "example.test/team/app:1"); err != nil {
		t.Fatalf("resolve through the mirror: %v (requests %v)", err, seen)
	}
	if last := seen[len(seen)-1]; last != "/cache/v2/mirrored/app/manifests/1 m:secret" {
		t.Errorf("the mirror saw %v, want the rewritten repository with the mirror's login", seen)
	}
}
