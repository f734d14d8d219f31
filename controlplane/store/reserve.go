package store

import (
	"context"
	"fmt"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Reserve claims key for owner if nobody holds it; ErrExists if somebody
// does. Reservations record what an object holds outside itself (a
// service's ClusterIP or NodePort) so that no two objects get the same.
func (s *Store) Reserve(ctx context.Context, key, owner string) error {
	resp, err := s.client.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, owner)).
		Commit()
	if err != nil {
		return fmt.Errorf("reserve %s: %w", key, err)
	}
	if !resp.Succeeded {
		return ErrExists
	}
	return nil
}

// Release gives up key if owner holds it; releasing what is not held is
// not an error.
func (s *Store) Release(ctx context.Context, key, owner string) error {
	_, err := s.client.Txn(ctx).
		If(clientv3.Compare(clientv3.Value(key), "=", owner)).
		Then(clientv3.OpDelete(key)).
		Commit()
	if err != nil {
		return fmt.Errorf("release %s: %w", key, err)
	}
	return nil
}

// Reservations returns the reservations under prefix: the key (without the
// prefix) mapped to its owner.
func (s *Store) Reservations(ctx context.Context, prefix string) (map[string]string, error) {
	resp, err := s.get(ctx, prefix, clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", prefix, err)
	}
	out := make(map[string]string, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		out[strings.TrimPrefix(string(kv.Key), prefix)] = string(kv.Value)
	}
	return out, nil
}
