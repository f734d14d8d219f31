package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/skiff-lab/skiff/agent/stats"
	"github.com/skiff-lab/skiff/cri/criserver"
	"github.com/skiff-lab/skiff/cri/supervisor"
)

// CRISocket is where the agent of the node whose data dir is dataDir serves
// the CRI API (what crictl talks to).
func CRISocket(dataDir string) string {
	return supervisor.SocketPath(filepath.Join(dataDir, "agent"), "cri.sock")
}

// CrictlConfig is the crictl configuration file the agent writes, pointing
// crictl at CRISocket (crictl's --config, or CRI_CONFIG_FILE).
func CrictlConfig(dataDir string) string {
	return filepath.Join(dataDir, "agent", "etc", "crictl.yaml")
}

// serveCRI serves the CRI API over the agent's runtime in the background,
// and writes crictl's configuration for it.
func (a *Agent) serveCRI(ctx context.Context, collector *stats.Collector) error {
	srv, err := criserver.New(criserver.Config{
		Runtime: a.rt, Stats: collector.Live, ImageFS: a.imageFS(),
		PortForward: func(ctx context.Context, sandboxID string, port int32, stream io.ReadWriteCloser) error {
			return a.forwardToSandbox(ctx, sandboxID, port, stream, "sandbox "+sandboxID)
		},
		NetworkReady: func() error {
			if a.podCIDR.Load() == nil {
				return errors.New("the node has no pod CIDR yet")
			}
			return nil
		},
	})
	if err != nil {
		return err
	}
	sock := CRISocket(a.cfg.DataDir)
	conf := CrictlConfig(a.cfg.DataDir)
	if err := os.MkdirAll(filepath.Dir(conf), 0o700); err != nil {
		return err
	}
	endpoint := "unix://" + sock
	yaml := fmt.Sprintf("runtime-endpoint: %s\nimage-endpoint: %s\ntimeout: 10\n", endpoint, endpoint)
	if err := os.WriteFile(conf, []byte(yaml), 0o600); err != nil {
		return err
	}
	return srv.Start(ctx, sock)
}

// imageFS is the directory whose file system holds the node's images.
func (a *Agent) imageFS() string {
	if a.cfg.ContainerdAddress != "" {
		return "/var/lib/containerd"
	}
	return a.cfg.dir("containerd")
}

// ContainerdSocket is the socket of the containerd that the agent of the
// node whose data dir is dataDir starts (unless told to use another).
func ContainerdSocket(dataDir string) string {
	return supervisor.SocketPath(filepath.Join(dataDir, "agent", "containerd"), "containerd.sock")
}
