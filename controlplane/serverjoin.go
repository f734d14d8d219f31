package controlplane

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/containerd/continuity"
	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/skiff-lab/skiff/controlplane/apiserver/codec"
	"github.com/skiff-lab/skiff/host"
	"github.com/skiff-lab/skiff/jointoken"
)

// The paths under which a server answers the servers that join it; the
// server token's group may use them (rbac's system:skiff:server-joiner).
const (
	ServerBootstrapPath = "/skiff/v1/server-bootstrap"
	EtcdMembersPath     = "/skiff/v1/etcd-members"
)

// Files under <data-dir>/server.
const (
	serverTokenFile      = "server-token"
	joinTokenFile        = "token"
	encryptionConfigFile = "encryption-config.yaml"
	clusteredMarkerFile  = "etcd-clustered"
)

// sharedFiles are what the servers of a cluster have in common, relative
// to <data-dir>/server: the cluster CA, the service account signing key,
// the etcd and front proxy CAs (each server issues its own leaf
// certificates), and the join tokens, so that agents and servers may join
// through any server.
var sharedFiles = []string{
	"tls/ca.crt", "tls/ca.key", "tls/service-account.key",
	"tls/etcd/ca.crt", "tls/etcd/ca.key", "tls/front-proxy/ca.crt", "tls/front-proxy/ca.key",
	joinTokenFile, serverTokenFile,
}

// serverBootstrap is what a joining server receives.
type serverBootstrap struct {
	// Files are sharedFiles' contents by their paths.
	Files map[string][]byte `json:"files"`
	// EncryptionConfig is the EncryptionConfiguration the cluster's data
	// is encrypted with, if any.
	EncryptionConfig []byte `json:"encryptionConfig,omitempty"`
}

// memberRequest asks for a new etcd member; memberResponse answers it.
type memberRequest struct {
	Name    string `json:"name"`
	PeerURL string `json:"peerURL"`
}

type memberResponse struct {
	InitialCluster string `json:"initialCluster"`
}

// clusterAPI answers joining servers (the authorizer lets only the server
// token's group and system:masters in).
type clusterAPI struct {
	dir        string // <data-dir>/server
	encryption string // the EncryptionConfiguration file, if any
	// etcd is the embedded etcd's client when this server's member takes
	// new members (it is clustered); nil otherwise.
	etcd *clientv3.Client
}

func (a *clusterAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var err error
	switch p := r.URL.Path; {
	case p == ServerBootstrapPath && r.Method == http.MethodGet:
		err = a.serveBootstrap(w)
	case p == EtcdMembersPath && r.Method == http.MethodPost:
		err = a.addMember(w, r)
	case strings.HasPrefix(p, EtcdMembersPath+"/") && r.Method == http.MethodDelete:
		err = a.removeMember(r, strings.TrimPrefix(p, EtcdMembersPath+"/"))
	default:
		err = apierrors.NewMethodNotSupported(clusterResource, r.Method)
	}
	if err != nil {
		codec.WriteError(w, err)
	}
}

var clusterResource = schema.GroupResource{Group: "skiff.io", Resource: "etcdmembers"}

func (a *clusterAPI) serveBootstrap(w http.ResponseWriter) error {
	b := serverBootstrap{Files: map[string][]byte{}}
	for _, name := range sharedFiles {
		data, err := os.ReadFile(filepath.Join(a.dir, name))
		if err != nil {
			return err
		}
		b.Files[name] = data
	}
	if a.encryption != "" {
		data, err := os.ReadFile(a.encryption)
		if err != nil {
			return err
		}
		b.EncryptionConfig = data
	}
	codec.WriteJSON(w, http.StatusOK, &b)
	return nil
}

func (a *clusterAPI) addMember(w http.ResponseWriter, r *http.Request) error {
	if a.etcd == nil {
		return apierrors.NewConflict(clusterResource, "", errors.New("this server's etcd takes no members: start the first server with --cluster-init"))
	}
	var req memberRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&req); err != nil || req.Name == "" || !strings.HasPrefix(req.PeerURL, "https://") {
		return apierrors.NewBadRequest(fmt.Sprintf("want {\"name\": NAME, \"peerURL\": \"https://HOST:PORT\"}: %v", err))
	}
	initial, err := addLearner(r.Context(), a.etcd, req.Name, req.PeerURL)
	if err != nil {
		// Mostly: another member is still a learner (etcd takes one at a
		// time); the joining server tries again.
		return apierrors.NewServiceUnavailable(fmt.Sprintf("add etcd member %s: %v", req.Name, err))
	}
	slog.Info("etcd: learner added", "member", req.Name, "peerURL", req.PeerURL)
	codec.WriteJSON(w, http.StatusCreated, &memberResponse{InitialCluster: initial})
	return nil
}

func (a *clusterAPI) removeMember(r *http.Request, name string) error {
	if a.etcd == nil {
		return apierrors.NewConflict(clusterResource, name, errors.New("this server's etcd takes no members"))
	}
	if _, err := RemoveEtcdMember(r.Context(), a.etcd, name); err != nil {
		return apierrors.NewServiceUnavailable(fmt.Sprintf("remove etcd member %s: %v", name, err))
	}
	slog.Info("etcd: member removed", "member", name)
	return nil
}

// watchDeletedServers, for a server whose member takes members, removes
// the members of servers whose Node is deleted (removeDeletedServers).
func (a *clusterAPI) watchDeletedServers(caches informers.SharedInformerFactory) error {
	if a.etcd == nil {
		return nil
	}
	self, err := os.ReadFile(filepath.Join(a.dir, "etcd-name"))
	if err != nil {
		return err
	}
	return removeDeletedServers(caches, a.etcd, strings.TrimSpace(string(self)))
}

// serverJoin is how a server joins the cluster of the server at its URL:
// it checks that server against the CA hash of the server token before
// it sends anything, then authenticates with the token.
type serverJoin struct {
	client rest.Interface
}

// newServerJoin checks server with token and returns the join.
func newServerJoin(ctx context.Context, server, token string) (*serverJoin, error) {
	tok, err := jointoken.Parse(token)
	if err != nil {
		return nil, fmt.Errorf("--token: %w", err)
	}
	caPEM, err := jointoken.FetchCA(ctx, server, tok.CAHash)
	if err != nil {
		return nil, fmt.Errorf("--server %s: %w", server, err)
	}
	rc := &rest.Config{Host: server, BearerToken: tok.Bearer(), TLSClientConfig: rest.TLSClientConfig{CAData: caPEM}, Timeout: 30 * time.Second}
	rc.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	client, err := rest.UnversionedRESTClientFor(rc)
	if err != nil {
		return nil, err
	}
	return &serverJoin{client: client}, nil
}

// fetchShared writes what the servers share into dir (<data-dir>/server)
// and returns the cluster's encryption configuration file, if it has one.
func (j *serverJoin) fetchShared(ctx context.Context, dir string) (encryptionConfig string, err error) {
	raw, err := j.client.Get().AbsPath(ServerBootstrapPath).Do(ctx).Raw()
	if apierrors.IsUnauthorized(err) || apierrors.IsForbidden(err) {
		return "", fmt.Errorf("the cluster refused the token (a server token is <data-dir>/server/server-token of a server): %w", err)
	}
	if err != nil {
		return "", fmt.Errorf("fetch the cluster's shared files: %w", err)
	}
	var b serverBootstrap
	if err := json.Unmarshal(raw, &b); err != nil {
		return "", fmt.Errorf("the cluster's shared files: %w", err)
	}
	for _, name := range sharedFiles {
		data, ok := b.Files[name]
		if !ok {
			return "", fmt.Errorf("the cluster's shared files lack %s", name)
		}
		if err := writePrivate(filepath.Join(dir, name), data); err != nil {
			return "", err
		}
	}
	if len(b.EncryptionConfig) == 0 {
		return "", nil
	}
	path := filepath.Join(dir, encryptionConfigFile)
	return path, writePrivate(path, b.EncryptionConfig)
}

// writePrivate writes data to path (0600), its directories 0700.
func writePrivate(path string, data []byte) error {
	if err := host.PrivateDir(filepath.Dir(path)); err != nil {
		return err
	}
	return continuity.AtomicWriteFile(path, data, 0o600)
}

// Add asks the cluster to take the member as a learner, trying again with
// back-off while it cannot yet (another member is catching up).
func (j *serverJoin) Add(ctx context.Context, name, peerURL string) (string, error) {
	body, err := json.Marshal(memberRequest{Name: name, PeerURL: peerURL})
	if err != nil {
		return "", err
	}
	var resp memberResponse
	backoff := wait.Backoff{Duration: time.Second, Factor: 2, Cap: 15 * time.Second, Steps: math.MaxInt32}
	var last error
	err = wait.ExponentialBackoffWithContext(ctx, backoff, func(ctx context.Context) (bool, error) {
		raw, err := j.client.Post().AbsPath(EtcdMembersPath).Body(body).Do(ctx).Raw()
		if apierrors.IsServiceUnavailable(err) {
			slog.Info("etcd: the cluster cannot take this member yet", "err", err)
			last = err
			return false, nil
		}
		if err != nil {
			return false, err
		}
		return true, json.Unmarshal(raw, &resp)
	})
	if wait.Interrupted(err) && last != nil {
		err = last
	}
	return resp.InitialCluster, err
}

// Remove asks the cluster to drop the member.
func (j *serverJoin) Remove(ctx context.Context, name string) error {
	return j.client.Delete().AbsPath(EtcdMembersPath, name).Do(ctx).Error()
}

// clusterServers sets cfg up for a server of a cluster of servers: the
// etcd's peer listener on advertise for the first server (ClusterInit)
// and those that joined; on a joining server's first start, the shared
// files fetched into dir and the join for its etcd member. A server once
// clustered stays so (a marker file in dir), whatever its flags later.
func clusterServers(ctx context.Context, cfg *Config, dir, advertise string) error {
	marker := filepath.Join(dir, clusteredMarkerFile)
	_, err := os.Stat(marker)
	clustered := err == nil || cfg.ClusterInit || cfg.JoinServer != ""
	if clustered && len(cfg.EtcdServers) == 0 {
		cfg.etcdPeerHost = advertise
	}
	if cfg.JoinServer != "" && !joined(cfg, dir) {
		j, err := newServerJoin(ctx, cfg.JoinServer, cfg.JoinToken)
		if err != nil {
			return err
		}
		if _, err := j.fetchShared(ctx, dir); err != nil {
			return err
		}
		cfg.etcdJoin = j
	}
	if clustered {
		if err := continuity.AtomicWriteFile(marker, nil, 0o600); err != nil {
			return err
		}
	}
	if fetched := filepath.Join(dir, encryptionConfigFile); cfg.EncryptionProviderConfig == "" {
		if _, err := os.Stat(fetched); err == nil {
			cfg.EncryptionProviderConfig = fetched
		}
	}
	return nil
}

// joined reports whether the server in dir has joined its cluster before:
// its etcd member has data, or, with an external etcd, it has the
// cluster's CA.
func joined(cfg *Config, dir string) bool {
	if len(cfg.EtcdServers) > 0 {
		_, err := os.Stat(filepath.Join(dir, "tls", "ca.key"))
		return err == nil
	}
	return hasEtcdData(filepath.Join(dir, "etcd"))
}
