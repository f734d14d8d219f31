package cni

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/containerd/containerd/v2/pkg/netns"
	"github.com/containernetworking/plugins/pkg/ns"
	"golang.org/x/sys/unix"
)

// A pod's network namespace is kept alive by bind-mounting it on the file
// <NetNSDir>/<id>, as `ip netns add` does under /run/netns. The path is therefore
// known from the id alone, and survives agent restarts (not reboots: /run is tmpfs).

// NetNSPath returns the path for id: <NetNSDir>/<id>, whether or not it exists.
func (n *Network) NetNSPath(id string) string { return filepath.Join(n.cfg.NetNSDir, id) }

// List returns the ids of netns present in NetNSDir (for orphan cleanup), sorted.
// A missing NetNSDir is an empty list. Leftover mount points whose namespace is
// already gone are listed too; Teardown removes them.
func (n *Network) List() ([]string, error) {
	entries, err := os.ReadDir(n.cfg.NetNSDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list netns: %w", err)
	}
	var ids []string
	for _, e := range entries {
		if e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		ids = append(ids, e.Name())
	}
	slices.Sort(ids)
	return ids, nil
}

// createNetNS makes a new, empty network namespace pinned at path. path must
// not exist.
func createNetNS(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("create netns dir: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE|os.O_EXCL, 0o444)
	if err != nil {
		return fmt.Errorf("create netns mount point: %w", err)
	}
	f.Close()
	errc := make(chan error, 1)
	go func() {
		// Never unlocked: the thread ends with this goroutine, so the namespace
		// it unshared cannot leak to other goroutines.
		runtime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("unshare: %w", err)
			return
		}
		errc <- unix.Mount("/proc/thread-self/ns/net", path, "none", unix.MS_BIND, "")
	}()
	if err := <-errc; err != nil {
		os.Remove(path)
		return fmt.Errorf("create netns %s: %w", path, err)
	}
	return nil
}

// removeNetNS unmounts and deletes path, with containerd's netns package.
// A missing path or a file that is not mounted is fine: removal is
// idempotent.
func removeNetNS(path string) error {
	if err := netns.LoadNetNS(path).Remove(); err != nil {
		return fmt.Errorf("remove netns %s: %w", path, err)
	}
	return nil
}

// isNetNS reports whether path holds a live (mounted) network namespace.
func isNetNS(path string) (bool, error) {
	var st unix.Statfs_t
	err := unix.Statfs(path, &st)
	if errors.Is(err, unix.ENOENT) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("stat netns %s: %w", path, err)
	}
	return st.Type == unix.NSFS_MAGIC, nil
}

// inNetNS runs fn on an OS thread that has entered the namespace at path
// (the CNI project's ns package). Sockets fn opens stay in that namespace
// after it returns.
func inNetNS(path string, fn func() error) error {
	err := ns.WithNetNSPath(path, func(ns.NetNS) error { return fn() })
	if err != nil {
		return fmt.Errorf("in netns %s: %w", path, err)
	}
	return nil
}

// DialPod connects to TCP port on the loopback address inside the network
// namespace of pod id, as port-forwarding does: the socket is made in the
// pod's namespace, so the pod's own 127.0.0.1 answers. The connection
// belongs to the caller; it stays in the pod's namespace.
func (n *Network) DialPod(ctx context.Context, id string, port int32) (net.Conn, error) {
	var conn net.Conn
	err := inNetNS(n.NetNSPath(id), func() error {
		var d net.Dialer
		var err error
		conn, err = d.DialContext(ctx, "tcp4", net.JoinHostPort("127.0.0.1", strconv.Itoa(int(port))))
		return err
	})
	return conn, err
}
