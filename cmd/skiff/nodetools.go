package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/skiff-lab/skiff/agent"
)

// crictlCommand is `skiff crictl`: crictl pointed at this node's CRI
// socket, found through --data-dir as `skiff agent` finds its state.
func crictlCommand() *cobra.Command {
	return nodeTool("crictl", "Run crictl against this node's CRI socket (the pods, containers and images the agent runs)",
		func(dataDir string) []string {
			endpoint := "unix://" + agent.CRISocket(dataDir)
			return []string{"CONTAINER_RUNTIME_ENDPOINT=" + endpoint, "IMAGE_SERVICE_ENDPOINT=" + endpoint,
				"CRI_CONFIG_FILE=" + agent.CrictlConfig(dataDir)}
		})
}

// ctrCommand is `skiff ctr`: containerd's ctr pointed at the agent's
// containerd and its namespace.
func ctrCommand() *cobra.Command {
	return nodeTool("ctr", "Run containerd's ctr against this node's containerd, in the namespace of skiff's containers",
		func(dataDir string) []string {
			return []string{"CONTAINERD_ADDRESS=" + agent.ContainerdSocket(dataDir), "CONTAINERD_NAMESPACE=skiff"}
		})
}

// nodeTool is a command that runs the program tool (from PATH, or beside
// this binary) with every argument but --data-dir, and with the
// environment env gives for the node's data dir, unless already set.
func nodeTool(tool, short string, env func(dataDir string) []string) *cobra.Command {
	return &cobra.Command{
		Use:                tool + " [--data-dir DIR] ARGS...",
		Short:              short,
		DisableFlagParsing: true,
		RunE: func(_ *cobra.Command, args []string) error {
			dataDir, rest, err := nodeDataDir(args, os.Getenv, defaultConfigPath)
			if err != nil {
				return err
			}
			path, err := findTool(tool)
			if err != nil {
				return err
			}
			environ := os.Environ()
			for _, kv := range env(dataDir) {
				if name, _, _ := strings.Cut(kv, "="); os.Getenv(name) == "" {
					environ = append(environ, kv)
				}
			}
			return syscall.Exec(path, append([]string{tool}, rest...), environ)
		},
	}
}

// nodeDataDir is the node's data dir: --data-dir among args (taken out of
// the rest), else SKIFF_DATA_DIR, else data-dir in the config file (if
// there is one), else /var/lib/skiff.
func nodeDataDir(args []string, getenv func(string) string, configFile string) (string, []string, error) {
	dir, rest := "", make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--data-dir" && i+1 < len(args):
			dir = args[i+1]
			i++
		case strings.HasPrefix(a, "--data-dir="):
			dir = strings.TrimPrefix(a, "--data-dir=")
		default:
			rest = append(rest, a)
		}
	}
	if dir == "" {
		dir = getenv(envPrefix + "DATA_DIR")
	}
	if dir == "" {
		file, err := readConfig(configFile, false)
		if err != nil {
			return "", nil, err
		}
		if v, ok := file.values["data-dir"].(string); ok {
			dir = v
		}
	}
	if dir == "" {
		dir = "/var/lib/skiff"
	}
	return dir, rest, nil
}

// findTool is tool's path: from PATH, else beside this binary.
func findTool(tool string) (string, error) {
	if path, err := exec.LookPath(tool); err == nil {
		return path, nil
	}
	if self, err := os.Executable(); err == nil {
		path := filepath.Join(filepath.Dir(self), tool)
		if _, err := os.Stat(path); err == nil {
			return path, nil
		}
	}
	hint := map[string]string{
		"crictl": "build it with `make crictl` (sigs.k8s.io/cri-tools) and put it on PATH or beside skiff",
		"ctr":    "it comes with containerd (Debian's containerd package)",
	}[tool]
	return "", fmt.Errorf("%s not found on PATH or beside skiff: %s", tool, hint)
}
