package nodeapi

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/skiff-lab/skiff/controlplane/pki"
	"github.com/skiff-lab/skiff/controlplane/servertest"
)

// fakeHost serves one pod "ns/p" with a container "c" whose log is "hello\n".
type fakeHost struct{ got *v1.PodLogOptions }

func (f *fakeHost) ContainerLogs(_ context.Context, namespace, pod, container string, opts *v1.PodLogOptions, w io.Writer) error {
	f.got = opts
	if namespace+"/"+pod != "ns/p" {
		return NotFound("pod %q not found", namespace+"/"+pod)
	}
	if container != "c" {
		return BadRequest("container %q in pod %q is waiting to start: ContainerCreating", container, pod)
	}
	_, err := io.WriteString(w, "hello\n")
	return err
}

func (f *fakeHost) ExecInContainer(context.Context, string, string, string, []string, io.Reader, io.WriteCloser, io.WriteCloser, bool, <-chan remotecommand.TerminalSize, time.Duration) error {
	return nil
}

func (f *fakeHost) AttachContainer(context.Context, string, string, string, io.Reader, io.WriteCloser, io.WriteCloser, bool, <-chan remotecommand.TerminalSize) error {
	return nil
}

func (f *fakeHost) StatsSummary(context.Context) (*statsapi.Summary, error) {
	return &statsapi.Summary{Node: statsapi.NodeStats{NodeName: "n"}}, nil
}

func (f *fakeHost) PortForward(context.Context, string, string, int32, io.ReadWriteCloser) error {
	return nil
}

// serve runs the node API on a free loopback port with a serving
// certificate from ca, accepting clients named "apiserver".
func serve(t *testing.T, ca *pki.CA, host Host) string {
	t.Helper()
	certPEM, keyPEM, err := ca.Issue("node", nil, []string{"127.0.0.1"}, x509.ExtKeyUsageServerAuth)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	addr := net.JoinHostPort("127.0.0.1", fmt.Sprint(servertest.FreePorts(t, 1)[0]))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, Config{Addr: addr, TLS: &tls.Config{Certificates: []tls.Certificate{cert}, ClientCAs: ca.Pool()},
			Clients: []string{"apiserver"}}, host)
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return "https://" + addr
}

func client(t *testing.T, ca *pki.CA, name string) *http.Client {
	t.Helper()
	tlsCfg := &tls.Config{RootCAs: ca.Pool()}
	if name != "" {
		certPEM, keyPEM, err := ca.Issue(name, nil, nil, x509.ExtKeyUsageClientAuth)
		if err != nil {
			t.Fatal(err)
		}
		cert, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			t.Fatal(err)
		}
		tlsCfg.Certificates = []tls.Certificate{cert}
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: tlsCfg}, Timeout: 10 * time.Second}
}

// get returns the status and body of GET url; the request must not fail.
func get(t *testing.T, c *http.Client, url string) (int, string) {
	t.Helper()
	var resp *http.Response
	var err error
	servertest.Eventually(t, "node API answering", 10*time.Second, func(context.Context) (bool, string) {
		resp, err = c.Get(url)
		return err == nil, fmt.Sprint(err)
	})
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// Only the API server's client certificate, from the cluster CA, gets in.
func TestServeAcceptsOnlyTheAPIServer(t *testing.T) {
	ca, err := pki.LoadOrCreateCA(t.TempDir(), "test-ca")
	if err != nil {
		t.Fatal(err)
	}
	url := serve(t, ca, &fakeHost{})
	if code, body := get(t, client(t, ca, "apiserver"), url+"/healthz"); code != http.StatusOK || body != "ok" {
		t.Errorf("/healthz as the API server: %d %q", code, body)
	}
	if code, body := get(t, client(t, ca, "someone"), url+"/healthz"); code != http.StatusForbidden || !strings.Contains(body, "user=someone") {
		t.Errorf("/healthz as another user: %d %q, want 403 naming the user", code, body)
	}
	if _, err := client(t, ca, "").Get(url + "/healthz"); err == nil {
		t.Error("a client without a certificate got an answer")
	}
	other, err := pki.LoadOrCreateCA(t.TempDir(), "other-ca")
	if err != nil {
		t.Fatal(err)
	}
	stranger := client(t, other, "apiserver")
	stranger.Transport.(*http.Transport).TLSClientConfig.RootCAs = ca.Pool()
	if _, err := stranger.Get(url + "/healthz"); err == nil {
		t.Error("a certificate from another CA got an answer")
	}
}

func TestContainerLogs(t *testing.T) {
	ca, err := pki.LoadOrCreateCA(t.TempDir(), "test-ca")
	if err != nil {
		t.Fatal(err)
	}
	host := &fakeHost{}
	url := serve(t, ca, host)
	c := client(t, ca, "apiserver")
	code, body := get(t, c, url+"/containerLogs/ns/p/c?follow=true&tailLines=5&timestamps=1&sinceSeconds=60&limitBytes=100")
	if code != http.StatusOK || body != "hello\n" {
		t.Errorf("logs: %d %q", code, body)
	}
	if o := host.got; !o.Follow || !o.Timestamps || *o.TailLines != 5 || *o.SinceSeconds != 60 || *o.LimitBytes != 100 {
		t.Errorf("options passed on: %+v", o)
	}
	for _, tt := range []struct {
		path string
		code int
		want string
	}{
		{"/containerLogs/ns/absent/c", http.StatusNotFound, `pod "ns/absent" not found`},
		{"/containerLogs/ns/p/waiting", http.StatusBadRequest, "is waiting to start: ContainerCreating"},
		{"/containerLogs/ns/p/c?tailLines=x", http.StatusBadRequest, "tailLines"},
		{"/containerLogs/ns/p/c?sinceSeconds=1&sinceTime=2026-11-22T10:00:00Z", http.StatusBadRequest, "at most one"},
	} {
		if code, body := get(t, c, url+tt.path); code != tt.code || !strings.Contains(body, tt.want) {
			t.Errorf("%s: %d %q, want %d with %q", tt.path, code, body, tt.code, tt.want)
		}
	}
}
