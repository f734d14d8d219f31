// Command conformance builds the images that the [Conformance] specs of
// upstream's test/e2e run, under exactly the names the suite asks for
// (`e2e.test --list-images`), into one OCI image-layout tarball that skiff
// agents import from their images directory: no registry, no internet.
//
//	go run ./test/images/conformance [-out bin/conformance/images] [-cache /var/cache/skiff-conformance]
//
// Where they come from:
//   - agnhost (and kitten, nautilus, which are agnhost with their pages):
//     the agnhost program built statically from k8s.io/kubernetes at the
//     version test/conformance requires, over a Debian root with the tools
//     its upstream image has (netcat-openbsd, curl, dig, socat, iproute2…);
//   - glibc-dns-testing, nginx and nonroot: the same Debian root (Debian's
//     dnsutils and nginx), with the command or user of the upstream image;
//   - busybox: Debian's busybox source package built static as Debian
//     builds it, with the one option that makes its ash pass on every
//     environment variable as upstream's does (busybox.go);
//     nonewprivs: busybox plus upstream's nnp program, setuid;
//   - pause: skiff's own pause program;
//   - sample-apiserver: k8s.io/sample-apiserver at the version
//     test/conformance requires, and etcd: etcd's server at the version
//     skiff embeds (the aggregator spec runs them side by side in a pod).
//
// The Debian root (mmdebstrap) and busybox (apt-get source) come from the
// host's apt mirror and are cached under -cache by the hash of what makes
// them; the tarball is rebuilt
// only when the hash of all its inputs changes.
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/skiff-lab/skiff/cri/imagetar"
	"github.com/skiff-lab/skiff/test/images"
)

// TarballName is the file this command writes in -out.
const TarballName = "conformance-images.tar"

func main() {
	out := flag.String("out", "bin/conformance/images", "directory for "+TarballName)
	cache := flag.String("cache", "/var/cache/skiff-conformance", "directory for the Debian root and busybox, kept between runs")
	suite := flag.String("suite", "test/conformance", "the module that requires k8s.io/kubernetes")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("conformance images: ")
	if err := build(*out, *cache, *suite); err != nil {
		log.Fatal(err)
	}
}

func build(out, cache, suite string) error {
	in, err := gatherInputs(cache, suite)
	if err != nil {
		return err
	}
	target := filepath.Join(out, TarballName)
	stampFile := target + ".sha256-inputs"
	if old, err := os.ReadFile(stampFile); err == nil && string(old) == in.stamp() {
		if _, err := os.Stat(target); err == nil {
			log.Printf("%s is up to date", target)
			return nil
		}
	}
	list, err := in.images()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	if err := writeTarball(target, list); err != nil {
		return err
	}
	log.Printf("wrote %d images to %s", len(list), target)
	return os.WriteFile(stampFile, []byte(in.stamp()), 0o644)
}

// writeTarball writes the images to path through a temporary file, so
// that a failed run leaves no half-written tarball.
func writeTarball(path string, list []imagetar.Image) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".images-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := imagetar.WriteImages(tmp, list...); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// inputs is everything the images are made of.
type inputs struct {
	base       string // the Debian root layer (.tar.gz)
	baseKey    string
	agnhost    []byte
	nnp        []byte
	pause      []byte
	sample     []byte // the sample API server
	etcd       []byte
	upstream   string // k8s.io/kubernetes' module directory
	webPages   map[string][]imagetar.File
	porterCert []imagetar.File
	busybox    imagetar.Image
}

func gatherInputs(cache, suite string) (*inputs, error) {
	var in inputs
	var err error
	if in.upstream, err = moduleDir(suite, "k8s.io/kubernetes"); err != nil {
		return nil, err
	}
	if in.agnhost, err = goBuild(suite, "k8s.io/kubernetes/test/images/agnhost"); err != nil {
		return nil, err
	}
	if in.nnp, err = goBuild(suite, "k8s.io/kubernetes/test/images/nonewprivs"); err != nil {
		return nil, err
	}
	if in.sample, err = goBuild(suite, "k8s.io/sample-apiserver"); err != nil {
		return nil, err
	}
	if in.etcd, err = goBuild(".", "go.etcd.io/etcd/server/v3"); err != nil {
		return nil, err
	}
	if in.pause, err = images.PauseBinary(); err != nil {
		return nil, err
	}
	busybox, err := busyboxBinary(cache)
	if err != nil {
		return nil, err
	}
	if in.busybox, err = images.BusyboxImage(ref("e2e-test-images/busybox:1.37.0-2"), busybox, ""); err != nil {
		return nil, err
	}
	if in.webPages, err = readPages(in.upstream); err != nil {
		return nil, err
	}
	if in.porterCert, err = readFiles(filepath.Join(in.upstream, "test/images/agnhost/porter"), "localhost.crt", "localhost.key"); err != nil {
		return nil, err
	}
	in.base, in.baseKey, err = debianRoot(cache)
	return &in, err
}

// stamp is the hash of every input: equal stamps, equal tarball.
func (in *inputs) stamp() string {
	h := sha256.New()
	fmt.Fprintf(h, "base %s\n", in.baseKey)
	for _, b := range [][]byte{in.agnhost, in.nnp, in.pause, in.sample, in.etcd} {
		fmt.Fprintf(h, "%d %x\n", len(b), sha256.Sum256(b))
	}
	files := append([]imagetar.File{}, in.busybox.Files...)
	files = append(files, in.porterCert...)
	for _, name := range []string{"kitten", "nautilus"} {
		files = append(files, in.webPages[name]...)
	}
	for _, f := range files {
		fmt.Fprintf(h, "%s %o %s %x\n", f.Path, f.Mode, f.Link, sha256.Sum256(f.Data))
	}
	exe, _ := os.ReadFile(os.Args[0])
	fmt.Fprintf(h, "builder %x\n", sha256.Sum256(exe))
	return hex.EncodeToString(h.Sum(nil))
}

// ref is an image of the suite's promoter registry (or of registry.k8s.io itself).
func ref(name string) string { return "registry.k8s.io/" + name }

// images lists the images, with their upstream names.
func (in *inputs) images() ([]imagetar.Image, error) {
	agnhost := append([]imagetar.File{
		{Path: "/agnhost", Mode: 0o755, Data: in.agnhost},
		{Path: "/agnhost-2", Link: "agnhost"},
		{Path: "/uploads", Mode: os.ModeDir | 0o755},
	}, in.porterCert...)
	onBase := func(c imagetar.Config) imagetar.Config {
		c.BaseLayers = []string{in.base}
		c.Env = []string{images.DefaultPath}
		return c
	}
	agnhostCfg := onBase(imagetar.Config{Entrypoint: []string{"/agnhost"}, Cmd: []string{"pause"}})
	webCfg := onBase(imagetar.Config{Entrypoint: []string{"/agnhost"}, Cmd: []string{"test-webserver"}})
	nginxCfg := onBase(imagetar.Config{Cmd: []string{"nginx", "-g", "daemon off;"}, StopSignal: "SIGQUIT"})
	nonewprivs := in.busybox
	nonewprivs.Ref = ref("e2e-test-images/nonewprivs:1.4")
	nonewprivs.Files = append(append([]imagetar.File{}, nonewprivs.Files...),
		imagetar.File{Path: "/usr/local/bin/nnp", Mode: os.ModeSetuid | 0o755, Data: in.nnp})
	nonewprivs.Config.Cmd = []string{"nnp"}
	return []imagetar.Image{
		{Ref: ref("e2e-test-images/agnhost:2.66.1"), Files: agnhost, Config: agnhostCfg},
		{Ref: ref("e2e-test-images/agnhost:2.55"), Files: agnhost, Config: agnhostCfg},
		{Ref: ref("e2e-test-images/kitten:1.8"), Files: append(in.webPages["kitten"], agnhost...), Config: webCfg},
		{Ref: ref("e2e-test-images/nautilus:1.8"), Files: append(in.webPages["nautilus"], agnhost...), Config: webCfg},
		{Ref: ref("e2e-test-images/glibc-dns-testing:2.1.1"), Files: marker("glibc-dns-testing"), Config: onBase(imagetar.Config{Cmd: []string{"bash"}})},
		{Ref: ref("e2e-test-images/nginx:1.27.0-2"), Files: marker("nginx"), Config: nginxCfg},
		{Ref: ref("e2e-test-images/nginx:1.28.0-2"), Files: marker("nginx-new"), Config: nginxCfg},
		{Ref: ref("e2e-test-images/nonroot:1.5"), Files: marker("nonroot"), Config: onBase(imagetar.Config{Cmd: []string{"bash"}, User: "1234"})},
		in.busybox,
		nonewprivs,
		{Ref: ref("pause:3.10.2"), Files: []imagetar.File{{Path: "/pause", Mode: 0o755, Data: in.pause}},
			Config: imagetar.Config{Entrypoint: []string{"/pause"}}},
		{Ref: ref("e2e-test-images/sample-apiserver:1.29.2"), Files: []imagetar.File{{Path: "/kube-sample-apiserver", Mode: 0o755, Data: in.sample}},
			Config: imagetar.Config{Entrypoint: []string{"/kube-sample-apiserver"}}},
		{Ref: ref("etcd:3.7.0-0"), Files: []imagetar.File{{Path: "/usr/local/bin/etcd", Mode: 0o755, Data: in.etcd}},
			Config: imagetar.Config{Cmd: []string{"/usr/local/bin/etcd"}}},
	}, nil
}

// marker is the top layer of an image that is its base and a config: one
// file naming the image (a layer must hold something), which also tells
// anyone looking inside a container which image it is.
func marker(name string) []imagetar.File {
	return []imagetar.File{{Path: "/etc/skiff-test-image", Data: []byte(name + "\n")}}
}

// readPages reads the pages the kitten and nautilus images serve (their
// upstream Dockerfiles copy html/ into the image root).
func readPages(upstream string) (map[string][]imagetar.File, error) {
	pages := map[string][]imagetar.File{}
	for _, name := range []string{"kitten", "nautilus"} {
		files, err := readFiles(filepath.Join(upstream, "test/images", name, "html"), name+".jpg", "data.json")
		if err != nil {
			return nil, err
		}
		pages[name] = files
	}
	return pages, nil
}

// readFiles reads names from dir as image files in the image root.
func readFiles(dir string, names ...string) ([]imagetar.File, error) {
	var files []imagetar.File
	for _, n := range names {
		data, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			return nil, err
		}
		files = append(files, imagetar.File{Path: "/" + n, Mode: 0o644, Data: data})
	}
	return files, nil
}
