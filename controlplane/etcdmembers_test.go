package controlplane

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3client"
)

// freePort is a loopback port free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// directJoin joins a member through a client of the cluster, as the
// first server's /skiff/v1/etcd-members does.
type directJoin struct{ c *clientv3.Client }

// Add tries again while etcd cannot take the member yet, as serverJoin
// does on the server's 503.
func (j directJoin) Add(ctx context.Context, name, peerURL string) (initial string, err error) {
	for range 30 {
		if initial, err = addLearner(ctx, j.c, name, peerURL); err == nil {
			return initial, nil
		}
		time.Sleep(time.Second)
	}
	return "", err
}

func (j directJoin) Remove(ctx context.Context, name string) error {
	_, err := RemoveEtcdMember(ctx, j.c, name)
	return err
}

func startMember(t *testing.T, dir string, join EtcdJoiner) *EmbeddedEtcd {
	t.Helper()
	e, err := StartEmbeddedEtcd(EtcdConfig{Dir: dir, PeerPort: freePort(t), PeerHost: "127.0.0.1", Host: "m", Join: join})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Stop)
	return e
}

func members(t *testing.T, c *clientv3.Client) map[string]bool {
	t.Helper()
	list, err := c.MemberList(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, m := range list.Members {
		out[m.Name+" "+strings.Join(m.PeerURLs, ",")] = m.IsLearner
	}
	return out
}

// A member joins as a learner and is promoted to a voter; a join that
// died before its member started is taken up again (the same learner),
// one whose member had started and lost its data replaces it; a member is
// removed by name.
func TestJoinResumeAndReplace(t *testing.T) {
	if testing.Short() {
		t.Skip("integration: starts etcd members")
	}
	firstDir := t.TempDir()
	first := startMember(t, firstDir, nil)
	c := v3client.New(first.etcd.Server)
	defer c.Close()
	ctx := t.Context()

	// Added, then died before it started: the next Add keeps that learner.
	ghost := "https://127.0.0.1:1"
	a, err := addLearner(ctx, c, "ghost-aaaaaaaa", ghost)
	if err != nil {
		t.Fatal(err)
	}
	b, err := addLearner(ctx, c, "ghost-aaaaaaaa", ghost)
	if err != nil || a != b || len(members(t, c)) != 2 {
		t.Fatalf("a join taken up again: %q then %q (%v), members %v", a, b, err, members(t, c))
	}
	list, err := c.MemberList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range list.Members {
		if m.Name == "" {
			if gone, err := RemoveEtcdMember(ctx, c, strconv.FormatUint(m.ID, 16)); err != nil || gone == nil {
				t.Fatalf("remove the learner that never started: %v %v", gone, err)
			}
		}
	}
	if got := members(t, c); len(got) != 1 {
		t.Fatalf("members after removing the learner: %v", got)
	}

	joinMember(t, firstDir, c)
	third, dir := joinMember(t, firstDir, c)
	got := members(t, c)
	if len(got) != 3 {
		t.Fatalf("members after the joins: %v", got)
	}
	for m, learner := range got {
		if learner {
			t.Errorf("%s is still a learner", m)
		}
	}

	// The third loses its data: joining again, it replaces its old member
	// (the other two keep the quorum). etcd refuses to shrink the cluster
	// until its members have been connected a few seconds: the joining
	// server tries again, as here.
	peer := third.etcd.Config().AdvertisePeerUrls[0].String()
	name := third.etcd.Config().Name
	third.Stop()
	if err := os.RemoveAll(filepath.Join(dir, "etcd")); err != nil {
		t.Fatal(err)
	}
	if _, err := (directJoin{c}).Add(ctx, name, peer); err != nil {
		t.Fatal(err)
	}
	got = members(t, c)
	if len(got) != 3 || got[name+" "+peer] || !got[" "+peer] {
		t.Errorf("a member that lost its data, joining again: %v, want it replaced by a new learner", got)
	}
}

// joinMember starts a member that joins the cluster c reaches, with the
// etcd CA of firstDir (as joining servers get it).
func joinMember(t *testing.T, firstDir string, c *clientv3.Client) (*EmbeddedEtcd, string) {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"ca.crt", "ca.key"} {
		data, err := os.ReadFile(filepath.Join(firstDir, "tls", "etcd", f))
		if err == nil {
			err = writePrivate(filepath.Join(dir, "tls", "etcd", f), data)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return startMember(t, dir, directJoin{c}), dir
}
