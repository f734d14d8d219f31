// Package e2e drives a whole skiff cluster, started from the built binary,
// with client-go and an unmodified kubectl built from k8s.io/kubectl.
package e2e

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/skiff-lab/skiff/controlplane/servertest"
	"github.com/skiff-lab/skiff/test/labtest"
)

var (
	skiffBin   string
	kubectlBin string
)

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "skiff-e2e-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := 1
	if err := buildBinaries(dir); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: build:", err)
	} else {
		code = m.Run()
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// buildBinaries builds skiff and kubectl into dir with the Makefile's
// targets, so the tests run what a user builds.
func buildBinaries(dir string) error {
	skiffBin, kubectlBin = filepath.Join(dir, "skiff"), filepath.Join(dir, "kubectl")
	return labtest.Build(dir, "build", "kubectl", "crictl")
}

// cluster is a `skiff server` process.
type cluster struct {
	t          testing.TB
	dataDir    string
	kubeconfig string
	args       []string
	netns      string // the network namespace it runs in (a path), "" for the test's own
	cmd        *exec.Cmd
	log        *syncBuffer
}

// startCluster runs `skiff server` without its agent on free loopback
// ports, with extra flags.
func startCluster(t testing.TB, extra ...string) *cluster {
	t.Helper()
	return launch(t, t.TempDir(), append([]string{"--disable-agent"}, extra...)...)
}

// launch runs `skiff server` with its state in dir; it is stopped when the
// test ends.
func launch(t testing.TB, dir string, extra ...string) *cluster {
	t.Helper()
	return launchIn(t, dir, "", extra...)
}

// launchIn is launch inside the network namespace at netns: the server
// and every kubectl of the cluster run there.
func launchIn(t testing.TB, dir, netns string, extra ...string) *cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("e2e: runs the skiff binary")
	}
	ports := servertest.FreePorts(t, 2)
	c := &cluster{t: t, dataDir: dir, netns: netns, kubeconfig: filepath.Join(dir, "admin.kubeconfig")}
	c.args = []string{"server", "--data-dir", dir, "--bind-address", "127.0.0.1",
		"--secure-port", fmt.Sprint(ports[0]), "--etcd-peer-port", fmt.Sprint(ports[1]),
		"--write-kubeconfig", c.kubeconfig}
	c.args = append(c.args, extra...)
	c.start()
	t.Cleanup(c.stop)
	return c
}

func (c *cluster) start() {
	c.t.Helper()
	c.log = &syncBuffer{}
	c.cmd = c.command(context.Background(), skiffBin, c.args...)
	c.cmd.Stdout, c.cmd.Stderr = c.log, c.log
	if err := c.cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, _, err := c.kubectl("get", "--raw", "/readyz"); err == nil {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("server not ready in 60s; log:\n%s", c.log)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// command runs bin with args, inside the cluster's network namespace when
// it has one (nsenter execs bin in its own place: signals reach bin).
func (c *cluster) command(ctx context.Context, bin string, args ...string) *exec.Cmd {
	if c.netns != "" {
		args = append([]string{"--net=" + c.netns, bin}, args...)
		bin = "nsenter"
	}
	return exec.CommandContext(ctx, bin, args...)
}

// stop ends the server with SIGTERM and waits for it.
func (c *cluster) stop() {
	if c.cmd == nil {
		return
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- c.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = c.cmd.Process.Kill()
		<-done
		c.t.Errorf("server ignored SIGTERM for 30s")
	}
	c.cmd = nil
}

// kill9 ends the server with SIGKILL, as a crash would.
func (c *cluster) kill9() {
	_ = c.cmd.Process.Kill()
	_ = c.cmd.Wait()
	c.cmd = nil
}

func (c *cluster) client() kubernetes.Interface { return kubernetes.NewForConfigOrDie(c.restConfig()) }

// restConfig is the admin's client configuration for the server.
func (c *cluster) restConfig() *rest.Config {
	cfg, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig)
	if err != nil {
		c.t.Fatal(err)
	}
	return cfg
}

// kubectl runs kubectl against the cluster with a 60 s limit.
func (c *cluster) kubectl(args ...string) (stdout, stderr string, err error) {
	return c.kubectlIn("", args...)
}

func (c *cluster) kubectlIn(stdin string, args ...string) (string, string, error) {
	return c.kubectlEnv(nil, stdin, args...)
}

// must runs kubectl and fails the test on error.
func (c *cluster) must(args ...string) string {
	c.t.Helper()
	out, errOut, err := c.kubectl(args...)
	if err != nil {
		c.t.Fatalf("kubectl %s: %v\n%s%s", strings.Join(args, " "), err, out, errOut)
	}
	return out
}

// waitUntil polls cond for up to 60 s.
func waitUntil(t testing.TB, what string, cond func() bool) {
	t.Helper()
	waitUntilFor(t, what, 60*time.Second, cond)
}

// waitUntilFor polls cond every 200 ms for up to timeout.
func waitUntilFor(t testing.TB, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	poll(t, what, timeout, 200*time.Millisecond, cond)
}

// waitUntilEvery polls cond every interval for up to 60 s.
func waitUntilEvery(t testing.TB, what string, interval time.Duration, cond func() bool) {
	t.Helper()
	poll(t, what, 60*time.Second, interval, cond)
}

func poll(t testing.TB, what string, timeout, interval time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(interval)
	}
}

// server is the API server's URL in the admin kubeconfig.
func (c *cluster) server() string {
	rc, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig)
	if err != nil {
		c.t.Fatal(err)
	}
	return rc.Host
}
