// Package registries reads k3s's registries.yaml: for each registry, the
// mirrors tried before it (with rewrites of repository names), and for each
// registry or mirror host, its login and TLS settings. Every image pull of
// the node goes through it.
package registries

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/containerd/containerd/v2/core/remotes/docker"
	"go.yaml.in/yaml/v3"
)

// DefaultPath is where the agent reads its registries from unless told.
const DefaultPath = "/etc/skiff/registries.yaml"

// Registry is registries.yaml.
type Registry struct {
	// Mirrors are, by registry host ("docker.io", "registry.k8s.io:443",
	// or "*" for every registry without its own), the endpoints tried
	// before the registry itself.
	Mirrors map[string]Mirror `json:"mirrors,omitempty" yaml:"mirrors,omitempty"`
	// Configs are, by host (a registry's or a mirror endpoint's), how to
	// reach it.
	Configs map[string]Config `json:"configs,omitempty" yaml:"configs,omitempty"`
}

// Mirror is a registry's mirrors.
type Mirror struct {
	Endpoints []string `json:"endpoint,omitempty" yaml:"endpoint,omitempty"` // URLs: scheme, host[:port], optional path before /v2
	// Rewrites change repository names on the way to the mirrors (not to
	// the registry itself): the first regular expression that matches
	// the repository is replaced by its value ($1 for groups).
	Rewrites map[string]string `json:"rewrite,omitempty" yaml:"rewrite,omitempty"`
}

// Config is how to reach one host.
type Config struct {
	Auth *Auth `json:"auth,omitempty" yaml:"auth,omitempty"`
	TLS  *TLS  `json:"tls,omitempty" yaml:"tls,omitempty"`
}

// Auth is a host's login: a username and password, or auth (base64 of
// "username:password"), or an identity token.
type Auth struct {
	Username      string `json:"username,omitempty" yaml:"username,omitempty"`
	Password      string `json:"password,omitempty" yaml:"password,omitempty"`
	Auth          string `json:"auth,omitempty" yaml:"auth,omitempty"`
	IdentityToken string `json:"identitytoken,omitempty" yaml:"identitytoken,omitempty"`
}

// TLS is a host's TLS settings.
type TLS struct {
	CAFile             string `json:"ca_file,omitempty" yaml:"ca_file,omitempty"`
	CertFile           string `json:"cert_file,omitempty" yaml:"cert_file,omitempty"`
	KeyFile            string `json:"key_file,omitempty" yaml:"key_file,omitempty"`
	InsecureSkipVerify bool   `json:"insecure_skip_verify,omitempty" yaml:"insecure_skip_verify,omitempty"`
}

// Load reads and checks the file at path. A missing file is an empty
// registry unless required.
func Load(path string, required bool) (*Registry, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) && !required {
		return &Registry{}, nil
	}
	if err != nil {
		return nil, err
	}
	r := &Registry{}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(r); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var errs []error
	for _, fe := range r.check() {
		errs = append(errs, fmt.Errorf("%s:%d: %s: %w", path, lineOf(&root, fe.keys...), fieldPath(fe.keys), fe.err))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return r, nil
}

// fieldError is what is wrong with the value at a path of keys.
type fieldError struct {
	keys []string
	err  error
}

// check refuses what a pull would only fail on later: endpoints that are
// not URLs, rewrites that do not compile, TLS files that do not load,
// logins that do not decode.
func (r *Registry) check() []fieldError {
	var errs []fieldError
	for host, m := range r.Mirrors {
		for i, e := range m.Endpoints {
			if _, err := endpointURL(e); err != nil {
				errs = append(errs, fieldError{[]string{"mirrors", host, "endpoint", strconv.Itoa(i)}, err})
			}
		}
		for re := range m.Rewrites {
			if _, err := regexp.Compile(re); err != nil {
				errs = append(errs, fieldError{[]string{"mirrors", host, "rewrite", re}, err})
			}
		}
	}
	for host, c := range r.Configs {
		if _, err := c.tlsConfig(); err != nil {
			errs = append(errs, fieldError{[]string{"configs", host, "tls"}, err})
		}
		if _, _, err := c.login(); err != nil {
			errs = append(errs, fieldError{[]string{"configs", host, "auth"}, err})
		}
	}
	return errs
}

// fieldPath writes keys as the file's reader would look for them:
// mirrors."docker.io".endpoint[0].
func fieldPath(keys []string) string {
	var b strings.Builder
	for i, k := range keys {
		switch _, err := strconv.Atoi(k); {
		case err == nil && i > 0:
			fmt.Fprintf(&b, "[%s]", k)
		case i == 1 || i == 3:
			fmt.Fprintf(&b, ".%q", k)
		default:
			if i > 0 {
				b.WriteByte('.')
			}
			b.WriteString(k)
		}
	}
	return b.String()
}

// lineOf is the line of the value at keys in a YAML document (an index
// for a sequence), or of the deepest part of it that exists.
func lineOf(doc *yaml.Node, keys ...string) int {
	n := doc
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	line := n.Line
	for _, k := range keys {
		next := child(n, k)
		if next == nil {
			break
		}
		n, line = next, next.Line
	}
	return line
}

// child is the value of key in a mapping node, or the element at index
// key in a sequence node.
func child(n *yaml.Node, key string) *yaml.Node {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == key {
				return n.Content[i+1]
			}
		}
	case yaml.SequenceNode:
		if i, err := strconv.Atoi(key); err == nil && i >= 0 && i < len(n.Content) {
			return n.Content[i]
		}
	}
	return nil
}

// endpointURL parses a mirror endpoint: http or https, a host, no query.
func endpointURL(e string) (*url.URL, error) {
	if !strings.Contains(e, "://") {
		e = "https://" + e
	}
	u, err := url.Parse(e)
	if err == nil && (u.Host == "" || u.Scheme != "http" && u.Scheme != "https" || u.RawQuery != "") {
		err = errors.New("want http(s)://host[:port][/path]")
	}
	if err != nil {
		return nil, fmt.Errorf("%q: %w", e, err)
	}
	return u, nil
}

// AddMirror puts endpoint after the mirrors registry already has (the
// agent's --registry-mirror flags).
func (r *Registry) AddMirror(registry, endpoint string) error {
	if _, err := endpointURL(endpoint); err != nil {
		return err
	}
	if r.Mirrors == nil {
		r.Mirrors = map[string]Mirror{}
	}
	m := r.Mirrors[registry]
	m.Endpoints = append(slices.Clip(m.Endpoints), endpoint)
	r.Mirrors[registry] = m
	return nil
}

func (c Config) tlsConfig() (*tls.Config, error) {
	t := c.TLS
	if t == nil {
		return nil, nil
	}
	cfg := &tls.Config{InsecureSkipVerify: t.InsecureSkipVerify, MinVersion: tls.VersionTLS12}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("ca_file %s holds no PEM certificate", t.CAFile)
		}
	}
	if (t.CertFile == "") != (t.KeyFile == "") {
		return nil, errors.New("cert_file and key_file go together")
	}
	if t.CertFile != "" {
		pair, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, err
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// login is the username and secret of c's auth ("" for an identity
// token's username, as containerd's authorizer wants).
func (c Config) login() (string, string, error) {
	a := c.Auth
	switch {
	case a == nil:
		return "", "", nil
	case a.IdentityToken != "":
		return "", a.IdentityToken, nil
	case a.Auth != "":
		raw, err := base64.StdEncoding.DecodeString(a.Auth)
		if err != nil {
			return "", "", fmt.Errorf("auth is not base64: %w", err)
		}
		user, pass, ok := strings.Cut(string(raw), ":")
		if !ok {
			return "", "", errors.New("auth is not base64 of username:password")
		}
		return user, pass, nil
	}
	return a.Username, a.Password, nil
}

// Credentials are the logins a pull brings (from image pull secrets), by
// registry host.
type Credentials func(host string) (username, secret string)

// Hosts is containerd's RegistryHosts for r: for a registry, the endpoints
// of its mirrors in order (those of "*" when it has none), then the
// registry itself; each with its host's TLS settings and login (the
// pull's credentials for a host with none), and plain HTTP for an http://
// endpoint or a registry in insecure.
func (r *Registry) Hosts(creds Credentials, insecure []string) docker.RegistryHosts {
	return func(registry string) ([]docker.RegistryHost, error) {
		m, ok := r.Mirrors[registry]
		if !ok {
			m = r.Mirrors["*"]
		}
		var out []docker.RegistryHost
		for _, e := range m.Endpoints {
			u, err := endpointURL(e)
			if err != nil {
				return nil, err
			}
			h, err := r.host(u, creds, m.Rewrites)
			if err != nil {
				return nil, err
			}
			h.Capabilities = docker.HostCapabilityPull | docker.HostCapabilityResolve
			out = append(out, h)
		}
		scheme := "https"
		if slices.Contains(insecure, registry) {
			scheme = "http"
		}
		host := registry
		if host == "docker.io" {
			host = "registry-1.docker.io"
		}
		own, err := r.host(&url.URL{Scheme: scheme, Host: host}, creds, nil)
		if err != nil {
			return nil, err
		}
		own.Capabilities = docker.HostCapabilityPull | docker.HostCapabilityResolve | docker.HostCapabilityPush
		return append(out, own), nil
	}
}

// host is the RegistryHost of endpoint u.
func (r *Registry) host(u *url.URL, creds Credentials, rewrites map[string]string) (docker.RegistryHost, error) {
	cfg := r.Configs[u.Host]
	tlsCfg, err := cfg.tlsConfig()
	if err != nil {
		return docker.RegistryHost{}, fmt.Errorf("registry %s: %w", u.Host, err)
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.TLSClientConfig = tlsCfg
	var rt http.RoundTripper = transport
	path := strings.TrimSuffix(u.Path, "/") + "/v2"
	if len(rewrites) > 0 {
		rt = rewriter{next: rt, prefix: path + "/", rules: compileRewrites(rewrites)}
	}
	client := &http.Client{Transport: rt}
	user, secret, _ := cfg.login()
	authorizer := docker.NewDockerAuthorizer(docker.WithAuthClient(client),
		docker.WithAuthCreds(func(host string) (string, string, error) {
			if cfg.Auth != nil {
				return user, secret, nil
			}
			if creds == nil {
				return "", "", nil
			}
			u, s := creds(host)
			return u, s, nil
		}))
	return docker.RegistryHost{Client: client, Authorizer: authorizer, Host: u.Host, Scheme: u.Scheme, Path: path}, nil
}
