package controlplane

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
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
