package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

const pagePod = `apiVersion: v1
kind: Pod
metadata: {name: on-the-page}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: skiff.test/busybox:1
    imagePullPolicy: Never
    command: ["sleep", "3600"]
`

// testPage: the journey page in a real browser (Debian's chromium,
// headless, driven through chromedp), reached as a user reaches it,
// through `kubectl proxy` with the admin's kubeconfig. A pod created while
// the page is open appears on its node in the cluster view, and its
// journey, the newest, fills in step by step up to agent.ready; clicking a
// step shows its details. The screenshot goes into the test's artifacts
// (go test -artifacts keeps them).
func testPage(t *testing.T, n *nodeCluster) {
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("chromium (Debian's package; test/vm/provision.sh installs it): %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	proxy := kubectlProxy(ctx, t, n.cluster)
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium), chromedp.NoSandbox,
		chromedp.WindowSize(1400, 900), chromedp.UserDataDir(t.TempDir()))
	ctx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()
	ctx, cancelBrowser := chromedp.NewContext(ctx, chromedp.WithLogf(t.Logf))
	defer cancelBrowser()

	err = chromedp.Do(ctx,
		chromedp.Navigate(proxy+"/ui/"),
		chromedp.WaitVisible(chromedp.CSS(".status.live")),
	)
	if err != nil {
		t.Fatalf("the page at %s/ui/ did not go live: %v", proxy, err)
	}
	n.mustIn(pagePod, "apply", "-f", "-")
	onNode := `.node[data-node="` + n.nodeName + `"] li.ready[data-pod="default/on-the-page"]`
	ready := `#diagram [data-step="agent.ready"]`
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(onNode)), chromedp.WaitVisible(chromedp.CSS(ready))); err != nil {
		t.Fatalf("pod on-the-page not Ready on the page: %v", err)
	}
	checkPageSteps(ctx, t, n)
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(t.ArtifactDir(), "journeys.png"), shot, 0o644); err != nil {
		t.Fatal(err)
	}
}

// checkPageSteps: the diagram shows the pod's journey, the title names
// it, its steps are in the flow's order, and a step's details name the
// node the scheduler chose.
func checkPageSteps(ctx context.Context, t *testing.T, n *nodeCluster) {
	title, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#title")))
	if err != nil || !strings.HasPrefix(title, "default/on-the-page") {
		t.Errorf("the diagram's title %q (%v), want the newest pod, default/on-the-page", title, err)
	}
	steps, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#diagram [data-step]")].map(e => e.dataset.step)`))
	if err != nil {
		t.Fatal(err)
	}
	last := -1
	for _, name := range []string{"apiserver.create", "etcd.write", "scheduler.bind", "agent.sandbox", "agent.container", "agent.ready"} {
		i := slices.Index(steps, name)
		if i <= last {
			t.Errorf("step %s at %d in %v, want it after the steps before it", name, i, steps)
		}
		last = max(last, i)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#diagram [data-step="scheduler.schedule"] .label`))); err != nil {
		t.Fatal(err)
	}
	details, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#details")))
	if err != nil || !strings.Contains(details, "node: "+n.nodeName) {
		t.Errorf("details of scheduler.schedule %q (%v), want the node %s", details, err, n.nodeName)
	}
}

// kubectlProxy runs `kubectl proxy` on a free port of 127.0.0.1 until ctx
// ends, and returns its address.
func kubectlProxy(ctx context.Context, t *testing.T, c *cluster) string {
	t.Helper()
	out, cmd := c.kubectlStart(ctx, nil, "proxy", "--port=0", "--address=127.0.0.1")
	t.Cleanup(func() { _ = cmd.Wait() })
	serving := regexp.MustCompile(`Starting to serve on (127\.0\.0\.1:\d+)`)
	var addr string
	waitUntil(t, "kubectl proxy serving", func() bool {
		m := serving.FindStringSubmatch(out.String())
		if m != nil {
			addr = m[1]
		}
		return m != nil
	})
	return "http://" + addr
}
