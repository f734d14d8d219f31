package cri

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/containerd/containerd/api/types/runc/options"
	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/namespaces"

	"github.com/skiff-lab/skiff/cri/registries"
)

// Config says where the runtime keeps its state.
type Config struct {
	Address    string   // containerd's socket
	Namespace  string   // containerd namespace for everything skiff creates; default "skiff"
	StateDir   string   // FIFOs and per-pod files (hosts, resolv.conf, emptyDirs)
	PodLogDir  string   // container logs; default /var/log/pods
	CgroupRoot string   // parent cgroup of all pods; default "/skiff"
	RuncRoot   string   // runc's state; default StateDir/runc, so that no other containerd shares it
	Insecure   []string // registries (host[:port]) reached over plain HTTP
	// Registries are the mirrors, logins and TLS settings of registries
	// (registries.yaml); nil: none.
	Registries *registries.Registry
	// Mirrors are, by registry host, the endpoints (URLs: scheme, host,
	// optional path before /v2) tried in order before the registry itself,
	// after those of Registries.
	Mirrors map[string][]string
	// LogRotation bounds each container's log files; zero: never rotated.
	LogRotation LogRotation
}

// Runtime is the agent's handle on containerd. It is safe for concurrent use.
type Runtime struct {
	client      *containerd.Client
	cfg         Config
	registries  *registries.Registry // cfg.Registries with cfg.Mirrors
	execTargets sync.Map             // container ID → execTarget, see execTarget
	streamTable
}

// Connect dials containerd and prepares the state directories.
func Connect(ctx context.Context, cfg Config) (*Runtime, error) {
	if cfg.Namespace == "" {
		cfg.Namespace = "skiff"
	}
	if cfg.PodLogDir == "" {
		cfg.PodLogDir = "/var/log/pods"
	}
	if cfg.RuncRoot == "" {
		cfg.RuncRoot = filepath.Join(cfg.StateDir, "runc")
	}
	if cfg.CgroupRoot == "" {
		cfg.CgroupRoot = "/skiff"
	}
	for _, dir := range []string{cfg.StateDir, cfg.PodLogDir, fifoDir(cfg)} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("create %s: %w", dir, err)
		}
	}
	reg, err := withMirrors(cfg.Registries, cfg.Mirrors)
	if err != nil {
		return nil, err
	}
	client, err := containerd.New(cfg.Address,
		containerd.WithDefaultNamespace(cfg.Namespace),
		containerd.WithTimeout(10*time.Second))
	if err != nil {
		return nil, fmt.Errorf("connect to containerd at %s: %w", cfg.Address, err)
	}
	return &Runtime{client: client, cfg: cfg, registries: reg, streamTable: streamTable{streams: map[string]*streams{}}}, nil
}

// Close releases the connection; containers keep running.
func (r *Runtime) Close() error { return r.client.Close() }

// Version is containerd's version, as the node reports it ("containerd://1.6.20").
func (r *Runtime) Version(ctx context.Context) (string, error) {
	v, err := r.client.Version(r.ctx(ctx))
	if err != nil {
		return "", fmt.Errorf("containerd version: %w", err)
	}
	return "containerd://" + v.Version, nil
}

// ctx puts the runtime's namespace on ctx.
func (r *Runtime) ctx(ctx context.Context) context.Context {
	return namespaces.WithNamespace(ctx, r.cfg.Namespace)
}

func fifoDir(cfg Config) string { return filepath.Join(cfg.StateDir, "fifo") }

// PodDir holds a pod's files on this node (hosts, resolv.conf, emptyDirs).
func (r *Runtime) PodDir(uid string) string { return filepath.Join(r.cfg.StateDir, "pods", uid) }

// LogPath is the CRI log file of one container attempt.
func (r *Runtime) LogPath(pod PodRef, container string, attempt int) string {
	dir := fmt.Sprintf("%s_%s_%s", pod.Namespace, pod.Name, pod.UID)
	return filepath.Join(r.cfg.PodLogDir, dir, container, fmt.Sprintf("%d.log", attempt))
}

// runtimeOpt runs containers with runc through the v2 shim, with runc's
// state under our own directory (the shim's default is shared by every
// containerd on the machine).
func (r *Runtime) runtimeOpt() containerd.NewContainerOpts {
	return containerd.WithRuntime("io.containerd.runc.v2", &options.Options{Root: r.cfg.RuncRoot})
}

// withMirrors is a copy of reg (nil: an empty one) with mirrors added after
// its own.
func withMirrors(reg *registries.Registry, mirrors map[string][]string) (*registries.Registry, error) {
	out := &registries.Registry{}
	if reg != nil {
		out.Configs = reg.Configs
		out.Mirrors = maps.Clone(reg.Mirrors)
	}
	for _, host := range slices.Sorted(maps.Keys(mirrors)) {
		for _, endpoint := range mirrors[host] {
			if err := out.AddMirror(host, endpoint); err != nil {
				return nil, fmt.Errorf("registry mirror of %s: %w", host, err)
			}
		}
	}
	return out, nil
}
