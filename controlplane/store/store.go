// Package store keeps API objects in etcd.
//
// Keys are /registry/<resource>/<namespace>/<name> for namespaced objects and
// /registry/<resource>/<name> for cluster-scoped ones. An object's
// resourceVersion is the etcd mod revision of its key; values are stored with
// an empty resourceVersion. The store knows nothing of HTTP or of the API's
// rules: callers decide what to write, the store writes it atomically.
package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apiserver/pkg/storage/value"
)

// Sentinel errors; callers check them with errors.Is.
var (
	ErrNotFound = errors.New("not found")
	ErrExists   = errors.New("already exists")
	ErrConflict = errors.New("conflict")
	ErrExpired  = errors.New("resource version too old")
)

// Store reads and writes objects in etcd. It is safe for concurrent use.
// Objects are stored as Kubernetes protobuf; JSON values (written by hand or
// by other tools) are read too.
type Store struct {
	client  *clientv3.Client
	typer   runtime.ObjectTyper
	encoder runtime.Encoder
	decoder runtime.Decoder
	// convertor turns an object stored through one API into the type of
	// another API of the same objects.
	convertor runtime.ObjectConvertor
	// transformers encrypt the values under their key prefixes (Encrypt).
	transformers map[string]value.Transformer
}

// New returns a store for the types registered in scheme.
func New(client *clientv3.Client, scheme *runtime.Scheme) *Store {
	return &Store{
		client:    client,
		typer:     scheme,
		encoder:   protobuf.NewSerializer(scheme, scheme),
		convertor: scheme,
		decoder:   serializer.NewCodecFactory(scheme).UniversalDeserializer(),
	}
}

// Encrypt has the values stored under keyPrefix go through t (encryption
// at rest): t writes them and reads them back. Call it before the store is
// used.
func (s *Store) Encrypt(keyPrefix string, t value.Transformer) {
	if s.transformers == nil {
		s.transformers = map[string]value.Transformer{}
	}
	s.transformers[keyPrefix] = t
}

// transformer is the transformer of key, or nil.
func (s *Store) transformer(key string) value.Transformer {
	for prefix, t := range s.transformers {
		if strings.HasPrefix(key, prefix) {
			return t
		}
	}
	return nil
}

// toStorage encrypts plain for key, if its prefix says so.
func (s *Store) toStorage(ctx context.Context, key string, plain []byte) ([]byte, error) {
	t := s.transformer(key)
	if t == nil {
		return plain, nil
	}
	data, err := t.TransformToStorage(ctx, plain, value.DefaultContext(key))
	if err != nil {
		return nil, fmt.Errorf("encrypt %s: %w", key, err)
	}
	return data, nil
}

// fromStorage decrypts kv's value; stale says it was written with a key or
// provider that is no longer the first (a write would re-encrypt it).
func (s *Store) fromStorage(ctx context.Context, kv *mvccpb.KeyValue) (plain []byte, stale bool, err error) {
	t := s.transformer(string(kv.Key))
	if t == nil {
		return kv.Value, false, nil
	}
	plain, stale, err = t.TransformFromStorage(ctx, kv.Value, value.DefaultContext(kv.Key))
	if err != nil {
		return nil, false, fmt.Errorf("decrypt %s: %w", kv.Key, err)
	}
	return plain, stale, nil
}

// get reads from etcd as client.Get does, trying again (a few times, with
// back-off) when etcd lost its leader meanwhile: reads change nothing, so
// a client of a cluster of servers that is electing a new leader waits
// a moment instead of failing.
func (s *Store) get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	delay := 100 * time.Millisecond
	for attempt := 1; ; attempt++ {
		resp, err := s.client.Get(ctx, key, opts...)
		if err == nil || attempt == readAttempts || !leaderLost(err) {
			return resp, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(delay):
		}
		delay *= 2
	}
}

// readAttempts bounds get's tries: 100 ms to 1.6 s apart, about 3 s in
// all, a few etcd election timeouts.
const readAttempts = 6

// leaderLost reports whether err says etcd had no leader, or a new one,
// while it served the request.
func leaderLost(err error) bool {
	err = rpctypes.Error(err) // a gRPC status as etcd's error
	return errors.Is(err, rpctypes.ErrLeaderChanged) || errors.Is(err, rpctypes.ErrNoLeader) || errors.Is(err, rpctypes.ErrTimeoutDueToLeaderFail)
}

// Client returns the etcd client the store uses.
func (s *Store) Client() *clientv3.Client { return s.client }

// Create writes obj at key if the key does not exist yet. On success obj's
// resourceVersion is set to the revision of the write.
func (s *Store) Create(ctx context.Context, key string, obj runtime.Object) error {
	data, err := s.encode(ctx, key, obj)
	if err != nil {
		return err
	}
	resp, err := s.client.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, string(data))).
		Commit()
	if err != nil {
		return fmt.Errorf("create %s: %w", key, err)
	}
	if !resp.Succeeded {
		return ErrExists
	}
	return setVersion(obj, resp.Header.Revision)
}

// Get decodes the object at key into into.
func (s *Store) Get(ctx context.Context, key string, into runtime.Object) error {
	resp, err := s.get(ctx, key)
	if err != nil {
		return fmt.Errorf("get %s: %w", key, err)
	}
	if len(resp.Kvs) == 0 {
		return ErrNotFound
	}
	return s.decode(ctx, resp.Kvs[0], into)
}

// UpdateFunc returns the object to store given the current one. It may modify
// and return current. Returning an error aborts the update.
type UpdateFunc func(current runtime.Object) (runtime.Object, error)

// Update reads the object at key, applies fn and writes the result if the
// object did not change in between; it retries fn on a lost race. into
// receives the written object with its new resourceVersion. If fn returns the
// object unchanged (same bytes), nothing is written.
func (s *Store) Update(ctx context.Context, key string, into runtime.Object, fn UpdateFunc) error {
	for {
		resp, err := s.get(ctx, key)
		if err != nil {
			return fmt.Errorf("get %s: %w", key, err)
		}
		if len(resp.Kvs) == 0 {
			return ErrNotFound
		}
		kv := resp.Kvs[0]
		plain, stale, err := s.fromStorage(ctx, kv)
		if err != nil {
			return err
		}
		if err := s.decodeBytes(plain, kv.ModRevision, into); err != nil {
			return err
		}
		updated, err := fn(into)
		if err != nil {
			return err
		}
		newPlain, err := s.encodePlain(updated)
		if err != nil {
			return err
		}
		if !stale && bytes.Equal(newPlain, plain) {
			return setVersion(updated, kv.ModRevision)
		}
		data, err := s.toStorage(ctx, key, newPlain)
		if err != nil {
			return err
		}
		txn, err := s.client.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(key), "=", kv.ModRevision)).
			Then(clientv3.OpPut(key, string(data))).
			Commit()
		if err != nil {
			return fmt.Errorf("update %s: %w", key, err)
		}
		if txn.Succeeded {
			return setVersion(updated, txn.Header.Revision)
		}
	}
}

// Delete removes the object at key once check accepts the current object
// (check may be nil). into receives the deleted object, its resourceVersion
// set to the revision of the delete.
func (s *Store) Delete(ctx context.Context, key string, into runtime.Object, check func(current runtime.Object) error) error {
	for {
		resp, err := s.get(ctx, key)
		if err != nil {
			return fmt.Errorf("get %s: %w", key, err)
		}
		if len(resp.Kvs) == 0 {
			return ErrNotFound
		}
		kv := resp.Kvs[0]
		if err := s.decode(ctx, kv, into); err != nil {
			return err
		}
		if check != nil {
			if err := check(into); err != nil {
				return err
			}
		}
		txn, err := s.client.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(key), "=", kv.ModRevision)).
			Then(clientv3.OpDelete(key)).
			Commit()
		if err != nil {
			return fmt.Errorf("delete %s: %w", key, err)
		}
		if txn.Succeeded {
			return setVersion(into, txn.Header.Revision)
		}
	}
}

// encode serializes obj for key, encrypted if key's prefix says so.
func (s *Store) encode(ctx context.Context, key string, obj runtime.Object) ([]byte, error) {
	plain, err := s.encodePlain(obj)
	if err != nil {
		return nil, err
	}
	return s.toStorage(ctx, key, plain)
}

func (s *Store) encodePlain(obj runtime.Object) ([]byte, error) {
	accessor, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	gvks, _, err := s.typer.ObjectKinds(obj)
	if err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	obj.GetObjectKind().SetGroupVersionKind(gvks[0])
	rv := accessor.GetResourceVersion()
	accessor.SetResourceVersion("")
	defer accessor.SetResourceVersion(rv)
	data, err := runtime.Encode(s.encoder, obj)
	if err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	return data, nil
}

// decode decrypts (if need be) and decodes kv into into.
func (s *Store) decode(ctx context.Context, kv *mvccpb.KeyValue, into runtime.Object) error {
	plain, _, err := s.fromStorage(ctx, kv)
	if err != nil {
		return err
	}
	return s.decodeBytes(plain, kv.ModRevision, into)
}

func (s *Store) decodeBytes(data []byte, rev int64, into runtime.Object) error {
	v := reflect.ValueOf(into).Elem()
	v.Set(reflect.Zero(v.Type()))
	obj, _, err := s.decoder.Decode(data, nil, into)
	if err != nil {
		return fmt.Errorf("decode: %w", err)
	}
	if obj != into {
		// Stored through another API of the same objects (Events).
		if err := s.convertor.Convert(obj, into, nil); err != nil {
			return fmt.Errorf("decode: got %T, want %T: %w", obj, into, err)
		}
	}
	return setVersion(into, rev)
}

func setVersion(obj runtime.Object, rev int64) error {
	accessor, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	accessor.SetResourceVersion(strconv.FormatInt(rev, 10))
	return nil
}
