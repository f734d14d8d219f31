package agent

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/klauspost/compress/zstd"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-lab/skiff/cri/registries"
	"github.com/skiff-lab/skiff/test/images"
)

// TestPullFromPrivateRegistry pulls over plain HTTP (--insecure-registry)
// from a registry on 127.0.0.1 that wants a login, with the credentials of
// an imagePullSecret.
func TestPullFromPrivateRegistry(t *testing.T) {
	requireRoot(t)
	host := startRegistry(t, "puller", "s3cret")
	ref := host + "/team/busybox:1"
	pushBusybox(t, ref, authn.FromConfig(authn.AuthConfig{Username: "puller", Password: "s3cret"}))
	n := startTestNodeWith(t, func(c *Config) { c.InsecureRegistries = []string{host} })

	login := base64.StdEncoding.EncodeToString([]byte("puller:s3cret"))
	secret := &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "regcred"}, Type: v1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{v1.DockerConfigJsonKey: []byte(fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, host, login))}}
	if _, err := n.client.CoreV1().Secrets("default").Create(context.Background(), secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	withSecret := busybox("c", "sleep", "3600")
	withSecret.Image, withSecret.ImagePullPolicy = ref, v1.PullAlways
	without := withSecret
	n.createPod(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "with-secret"},
		Spec: v1.PodSpec{Containers: []v1.Container{withSecret}, ImagePullSecrets: []v1.LocalObjectReference{{Name: "regcred"}}}})
	n.createPod(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "without"}, Spec: v1.PodSpec{Containers: []v1.Container{without}}})

	pod := n.waitPod("default", "with-secret", "pulled and running", 60*time.Second, running)
	n.waitEventMessage(pod, "Pulled", "Successfully pulled image \""+ref+"\" in ")
	n.waitPod("default", "without", "pull refused without credentials", 60*time.Second, func(p *v1.Pod) bool {
		if len(p.Status.ContainerStatuses) == 0 || p.Status.ContainerStatuses[0].State.Waiting == nil {
			return false
		}
		r := p.Status.ContainerStatuses[0].State.Waiting.Reason
		return r == "ErrImagePull" || r == "ImagePullBackOff"
	})
}

// startRegistry serves an in-memory registry on 127.0.0.1 behind basic auth.
func startRegistry(t *testing.T, user, password string) string {
	t.Helper()
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != user || p != password {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			http.Error(w, "login", http.StatusUnauthorized)
			return
		}
		reg.ServeHTTP(w, r)
	})}}
	srv.Start()
	t.Cleanup(srv.Close)
	return ln.Addr().String()
}

// pushBusybox pushes the test busybox image to ref.
func pushBusybox(t *testing.T, ref string, auth authn.Authenticator) {
	t.Helper()
	tarball, err := images.Busybox(ref)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := untar(tarball, dir); err != nil {
		t.Fatal(err)
	}
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil || len(m.Manifests) == 0 {
		t.Fatalf("image index: %v", err)
	}
	img, err := idx.Image(m.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	tag, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(tag, img, remote.WithAuth(auth)); err != nil {
		t.Fatal(err)
	}
}

func untar(data []byte, dir string) error {
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		path := filepath.Join(dir, filepath.Clean("/"+h.Name))
		if h.Typeflag == tar.TypeDir {
			if err := os.MkdirAll(path, 0o755); err != nil {
				return err
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return err
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			return err
		}
	}
}

// waitEventMessage waits for an event with reason whose message contains text.
func (n *testNode) waitEventMessage(pod *v1.Pod, reason, text string) {
	n.t.Helper()
	n.waitEventMatching(pod, reason, func(msg string) bool { return strings.Contains(msg, text) })
}

// TestPullThroughRegistriesYAML: with registries.yaml's mirror (and its
// rewrite and login) a pod's image is pulled from the mirror, with no pull
// secret; the registry the image names (127.0.0.9:1, where nothing
// listens) is never needed.
func TestPullThroughRegistriesYAML(t *testing.T) {
	requireRoot(t)
	host := startRegistry(t, "mirror-user", "mirror-pw")
	pushBusybox(t, host+"/mirrored/busybox:1", authn.FromConfig(authn.AuthConfig{Username: "mirror-user", Password: "mirror-pw"}))
	file := filepath.Join(t.TempDir(), "registries.yaml")
	yaml := fmt.Sprintf(`mirrors:
  "127.0.0.9:1":
    endpoint: ["http://%s"]
    rewrite: {"^team/(.*)$": "mirrored/$1"}
configs:
  %q:
    auth: {username: mirror-user, password: mirror-pw}
`, host, host)
	if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	reg, err := registries.Load(file, true)
	if err != nil {
		t.Fatal(err)
	}
	n := startTestNodeWith(t, func(c *Config) { c.Registries = reg })
	c := busybox("c", "sleep", "3600")
	c.Image, c.ImagePullPolicy = "127.0.0.9:1/team/busybox:1", v1.PullAlways
	n.createPod(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "mirrored"}, Spec: v1.PodSpec{Containers: []v1.Container{c}}})
	n.waitPod("default", "mirrored", "pulled through the mirror and running", 60*time.Second, running)
}

// TestImageTarballAppears: a zstd-compressed image tarball put into a
// running agent's images directory is imported without a restart, and a
// pod that never pulls runs from it.
func TestImageTarballAppears(t *testing.T) {
	requireRoot(t)
	n := startTestNode(t)
	const ref = "skiff.test/late:1"
	tarball, err := images.Busybox(ref)
	if err != nil {
		t.Fatal(err)
	}
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := n.cfg.dir("images")
	// Written aside and renamed in, as a copy tool would.
	tmp := filepath.Join(dir, ".late.part")
	if err := os.WriteFile(tmp, enc.EncodeAll(tarball, nil), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "late.tar.zst")); err != nil {
		t.Fatal(err)
	}
	c := busybox("c", "sleep", "3600")
	c.Image, c.ImagePullPolicy = ref, v1.PullNever
	n.createPod(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "late-image"}, Spec: v1.PodSpec{Containers: []v1.Container{c}}})
	n.waitPod("default", "late-image", "running from the image that appeared", 90*time.Second, running)
}
