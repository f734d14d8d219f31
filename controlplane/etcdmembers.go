package controlplane

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/skiff-lab/skiff/informer"
	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3client"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// addLearner adds the member name with peerURL to the cluster c reaches as
// a learner, as etcd recommends for a new member (it votes only once it
// has caught up), and returns the members it starts with. A join that
// died half-way is taken up again: a member of that peer URL that never
// started is the one this join added, and is kept; one that did start
// had data that is gone, and is replaced.
func addLearner(ctx context.Context, c *clientv3.Client, name, peerURL string) (string, error) {
	list, err := c.MemberList(ctx)
	if err != nil {
		return "", err
	}
	for _, m := range list.Members {
		if !slices.Contains(m.PeerURLs, peerURL) {
			continue
		}
		if m.Name == "" {
			return initialCluster(list.Members, m.ID, name), nil
		}
		if _, err := c.MemberRemove(ctx, m.ID); err != nil {
			return "", fmt.Errorf("remove member %s, which had %s before: %w", m.Name, peerURL, err)
		}
	}
	added, err := c.MemberAddAsLearner(ctx, []string{peerURL})
	if err != nil {
		return "", err
	}
	return initialCluster(added.Members, added.Member.ID, name), nil
}

// initialCluster is etcd's --initial-cluster for the member self, named
// name, starting among members: "name=peerURL" for each, a member that has
// not started yet named by its ID.
func initialCluster(members []*etcdserverpb.Member, self uint64, name string) string {
	var parts []string
	for _, m := range members {
		n := m.Name
		switch {
		case m.ID == self:
			n = name
		case n == "":
			n = strconv.FormatUint(m.ID, 16)
		}
		for _, u := range m.PeerURLs {
			parts = append(parts, n+"="+u)
		}
	}
	return strings.Join(parts, ",")
}

// RemoveEtcdMember removes the member named name (or of that hexadecimal
// ID) from the cluster c reaches and returns it; nil when there is none.
func RemoveEtcdMember(ctx context.Context, c *clientv3.Client, name string) (*etcdserverpb.Member, error) {
	list, err := c.MemberList(ctx)
	if err != nil {
		return nil, err
	}
	for _, m := range list.Members {
		if (name != "" && m.Name == name) || strconv.FormatUint(m.ID, 16) == name {
			_, err := c.MemberRemove(ctx, m.ID)
			return m, err
		}
	}
	return nil, nil
}

// removeDeletedServers removes from the etcd cluster the member of a
// server whose Node is deleted, as k3s does: the member named after the
// node (NODE-xxxxxxxx, memberName). Every server tries; one succeeds.
func removeDeletedServers(caches informers.SharedInformerFactory, c *clientv3.Client, self string) error {
	_, err := caches.Core().V1().Nodes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		DeleteFunc: func(obj any) {
			if node, ok := informer.FromTombstone[*corev1.Node](obj); ok {
				go removeNodeMember(c, node.Name, self)
			}
		},
	})
	return err
}

// removeNodeMember removes node's member, trying again with back-off for
// a few minutes while etcd refuses (a member that just came back must be
// connected a while before etcd lets the cluster shrink).
func removeNodeMember(c *clientv3.Client, node, self string) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	backoff := wait.Backoff{Duration: time.Second, Factor: 2, Cap: 20 * time.Second, Steps: math.MaxInt32}
	_ = wait.ExponentialBackoffWithContext(ctx, backoff, func(ctx context.Context) (bool, error) {
		err := removeNodeMemberOnce(ctx, c, node, self)
		if err != nil {
			slog.Warn("etcd member of a deleted node not removed yet", "node", node, "err", err)
		}
		return err == nil, nil
	})
}

func removeNodeMemberOnce(ctx context.Context, c *clientv3.Client, node, self string) error {
	list, err := c.MemberList(ctx)
	if err != nil {
		return err
	}
	for _, m := range list.Members {
		if m.Name == self || !isNodeMember(m.Name, node) {
			continue
		}
		_, err := c.MemberRemove(ctx, m.ID)
		if errors.Is(err, rpctypes.ErrMemberNotFound) {
			continue // another server removed it
		}
		if err != nil {
			return err
		}
		slog.Info("etcd member of a deleted node removed", "node", node, "member", m.Name)
	}
	return nil
}

// isNodeMember reports whether member is the name memberName gives a
// server of node.
func isNodeMember(member, node string) bool {
	suffix, ok := strings.CutPrefix(member, node+"-")
	return ok && len(suffix) == memberSuffixLen && !strings.Contains(suffix, "-")
}

// Leave takes the stopped server of cfg.DataDir out of its cluster of
// servers (`skiff server --leave`): its etcd member starts, removes
// itself, and its etcd data is deleted. The last member cannot leave.
func Leave(cfg Config) error {
	dir := filepath.Join(cfg.DataDir, "server")
	_, err := os.Stat(filepath.Join(dir, clusteredMarkerFile))
	if err != nil || !hasEtcdData(filepath.Join(dir, "etcd")) {
		return fmt.Errorf("%s holds no member of a cluster of servers", cfg.DataDir)
	}
	advertise, err := advertiseAddress(cfg)
	if err != nil {
		return err
	}
	e, err := StartEmbeddedEtcd(EtcdConfig{Dir: dir, PeerPort: cfg.EtcdPeerPort, PeerHost: advertise, Host: cfg.NodeName})
	if err != nil {
		return err
	}
	err = e.removeSelf()
	e.Stop()
	if err != nil {
		return err
	}
	slog.Info("left the cluster of servers", "member", e.etcd.Config().Name)
	if err := os.RemoveAll(filepath.Join(dir, "etcd")); err != nil {
		return err
	}
	return os.Remove(filepath.Join(dir, clusteredMarkerFile))
}

func (e *EmbeddedEtcd) removeSelf() error {
	client := v3client.New(e.etcd.Server)
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	list, err := client.MemberList(ctx)
	if err != nil {
		return err
	}
	if len(list.Members) == 1 {
		return errors.New("the last member of the cluster cannot leave it")
	}
	// etcd lets the cluster shrink once this member has been connected a
	// few seconds.
	var last error
	backoff := wait.Backoff{Duration: time.Second, Factor: 2, Cap: 10 * time.Second, Steps: math.MaxInt32}
	err = wait.ExponentialBackoffWithContext(ctx, backoff, func(ctx context.Context) (bool, error) {
		_, last = client.MemberRemove(ctx, uint64(e.etcd.Server.MemberID()))
		if last != nil && e.removed() {
			last = nil // the removal was applied; its reply was lost to the stop
		}
		return last == nil, nil
	})
	if err != nil && last != nil {
		err = fmt.Errorf("remove this member: %w", last)
	}
	return err
}

// removed reports whether the cluster has removed this member. etcd stops
// its server for that reason only: when the member applies its own
// removal, or when a peer answers that it is no longer a member, which
// happens when the leader applied the removal before this member did. In
// both cases a removal in flight may be answered "server stopped".
func (e *EmbeddedEtcd) removed() bool {
	select {
	case <-e.etcd.Server.StoppingNotify():
		return true
	default:
		return false
	}
}
