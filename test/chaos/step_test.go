package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/skiff-lab/skiff/test/labtest"
)

// hold is how long a fault lasts while the workload runs.
const hold = 15 * time.Second

// chaos is one run: the lab, a client per server, the workload and the
// report's rows.
type chaos struct {
	t       *testing.T
	lab     *labtest.Lab
	rnd     *rand.Rand
	clients []kubernetes.Interface
	current int // the client the checks use, moved on when it fails
	w       *workload
	rows    []row
}

func newChaos(t *testing.T, l *labtest.Lab, rnd *rand.Rand) *chaos {
	c := &chaos{t: t, lab: l, rnd: rnd}
	for _, s := range l.ServerNames() {
		cfg, err := clientcmd.BuildConfigFromFlags("", l.ServerKubeconfig(s))
		if err != nil {
			t.Fatal(err)
		}
		cfg.Timeout = writeTimeout
		c.clients = append(c.clients, kubernetes.NewForConfigOrDie(cfg))
	}
	ctx := context.Background()
	if _, err := c.clients[0].CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.w = newWorkload(c.clients, rnd)
	return c
}

// api runs f with a server's client, moving to the next server while f
// fails (a server may be down): the error of the last one tried.
func (c *chaos) api(f func(cs kubernetes.Interface) error) error {
	var err error
	for range c.clients {
		if err = f(c.clients[c.current]); err == nil {
			return nil
		}
		c.current = (c.current + 1) % len(c.clients)
	}
	return err
}

// What a failed check found.
const (
	lost      = "lost write"
	duplicate = "duplicate"
	leak      = "leak"
	unsettled = "not converged"
)

// problem reports one failed check of a kind.
func (c *chaos) problem(r *row, kind, format string, args ...any) {
	c.t.Helper()
	c.t.Errorf("%s: %s: "+format, append([]any{r.fault, kind}, args...)...)
	r.found[kind]++
}

// step injects a fault while the workload runs, heals it after hold, then,
// with the workload paused, waits for the cluster to converge and checks
// it. It says false when the cluster did not converge: later faults would
// tell nothing.
func (c *chaos) step(name string, inject func(*chaos) (target string, heal func())) bool {
	c.t.Logf("fault: %s", name)
	acked0, failed0 := c.w.counts()
	target, heal := inject(c)
	time.Sleep(hold)
	heal()
	acked, failed := c.w.counts()
	c.w.pause()
	defer c.w.resume()
	r := row{fault: name, target: target, acked: acked - acked0, failed: failed - failed0, found: map[string]int{}}
	start := time.Now()
	why := c.waitConverged(start.Add(converge))
	r.converged, r.convergedInTime = time.Since(start), why == ""
	if why != "" {
		c.problem(&r, unsettled, "the cluster did not converge in %s: %s", converge, why)
		c.logTails()
	} else {
		c.checkWrites(&r)
		c.checkPods(&r)
		c.checkNodes(&r)
	}
	c.t.Logf("fault: %s on %s: converged after %s; found %v", name, target, r.converged.Round(100*time.Millisecond), r.found)
	c.rows = append(c.rows, r)
	return r.convergedInTime
}

// noFault is the first step: the workload alone.
func noFault(*chaos) (string, func()) { return "-", func() {} }

// waitConverged polls until the cluster has settled: "" then, or what was
// still unsettled at the deadline.
func (c *chaos) waitConverged(deadline time.Time) string {
	why := ""
	for time.Now().Before(deadline) {
		if why = c.unsettled(); why == "" {
			return ""
		}
		time.Sleep(time.Second)
	}
	return why
}

// unsettled says what of the cluster has not settled yet: a node not
// Ready, a server missing from the kubernetes endpoints, a Deployment
// whose pods are not all there and ready, a pod of no Deployment or being
// deleted, a Service whose endpoints do not match its pods.
func (c *chaos) unsettled() string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var s snapshot
	if err := c.api(func(cs kubernetes.Interface) error { return s.read(ctx, cs) }); err != nil {
		return err.Error()
	}
	return s.unsettled(len(c.lab.Nodes()), len(c.lab.ServerNames()))
}

// checkWrites: every write the API acknowledged is there.
func (c *chaos) checkWrites(r *row) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var s snapshot
	if err := c.api(func(cs kubernetes.Interface) error { return s.read(ctx, cs) }); err != nil {
		c.problem(r, lost, "reading the cluster: %v", err)
		return
	}
	for _, rec := range c.w.records {
		if rec.unsure {
			continue
		}
		if got, want := s.has(rec), fmt.Sprintf("%t %d", rec.exists, rec.value); got != want {
			c.problem(r, lost, "%s %s: acknowledged as (exists, value) %s, the API has %s", rec.kind, rec.name, want, got)
		}
	}
}

// logTails puts the end of every node's log in the test's.
func (c *chaos) logTails() {
	for _, node := range c.lab.Nodes() {
		out, _ := exec.Command("tail", "-n", "25", filepath.Join(c.lab.NodeDir(node), "skiff.log")).CombinedOutput()
		c.t.Logf("%s's log ends:\n%s", node, out)
	}
}
