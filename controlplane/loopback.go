package controlplane

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"net"

	"github.com/skiff-lab/skiff/controlplane/apiserver/authn"
	"github.com/skiff-lab/skiff/controlplane/component"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
)

// loopback is the API server's door for its own process, after
// kube-apiserver's loopback client: plain HTTP over in-memory connections
// (no TLS, no TCP) for the scheduler, the controllers and the in-process
// agent. Each of them is authenticated as itself by a bearer token that
// is made at start and never leaves the process, so the same
// authentication (and, with it, authorization) applies to them as to any
// client.
type loopback struct {
	listener *pipeListener
	tokens   map[string]authn.User
	byUser   map[string]string // user name → token
}

func newLoopback() *loopback {
	return &loopback{listener: newPipeListener(), tokens: map[string]authn.User{}, byUser: map[string]string{}}
}

// register makes a token for user (once per name). It is called before
// the API server starts, which reads the tokens without a lock.
func (l *loopback) register(user authn.User) {
	if _, ok := l.byUser[user.Name]; ok {
		return
	}
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	token := base64.RawURLEncoding.EncodeToString(secret)
	l.tokens[token] = user
	l.byUser[user.Name] = token
}

// config returns a client configuration for the registered user name.
// Every client built from one has its own connections (a custom dialer
// keeps client-go from sharing a transport) and no client-side rate
// limit: the server's own components are not throttled on the way to it.
func (l *loopback) config(name string) *rest.Config {
	return &rest.Config{
		Host:        "http://loopback",
		BearerToken: l.byUser[name],
		QPS:         -1,
		ContentConfig: rest.ContentConfig{
			ContentType:        "application/vnd.kubernetes.protobuf",
			AcceptContentTypes: "application/vnd.kubernetes.protobuf,application/json",
		},
		Dial: func(ctx context.Context, _, _ string) (net.Conn, error) { return l.listener.DialContext(ctx) },
	}
}

// as has build construct its component with clients of user's own, while
// the shared informers stay the caller's.
func (l *loopback) as(user authn.User, build component.Constructor) component.Constructor {
	return func(cc component.Context) (component.Component, error) {
		cfg := l.config(user.Name)
		cc.Client = kubernetes.NewForConfigOrDie(cfg)
		cc.Dynamic = dynamic.NewForConfigOrDie(cfg)
		cc.Metadata = metadata.NewForConfigOrDie(cfg)
		return build(cc)
	}
}
