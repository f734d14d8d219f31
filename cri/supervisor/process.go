package supervisor

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// A daemon process is recognised by its command line, which names the
// config file: "<binary> --config <Dir>/config.toml". A zombie has an empty
// command line, and a reused pid another one, so both count as gone.

// args is the command line that starts the daemon for configPath.
func args(binary, configPath string) []string {
	return []string{binary, "--config", configPath}
}

// runsConfig reports whether process pid is a live containerd started with configPath.
func runsConfig(pid int, configPath string) bool {
	if pid <= 0 {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return false
	}
	argv := strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
	for i := 1; i+1 < len(argv); i++ {
		if argv[i] == "--config" && argv[i+1] == configPath {
			return true
		}
	}
	return false
}

// findRunning returns the pid of a live containerd for configPath: the one
// the pid file names, else any found in /proc (a pid file lost or not yet
// written), else 0.
func findRunning(pidPath, configPath string) int {
	if pid, err := readPid(pidPath); err == nil && runsConfig(pid, configPath) {
		return pid
	}
	pids, _ := processesFor(configPath)
	if len(pids) > 0 {
		return pids[0]
	}
	return 0
}

// processesFor lists the live processes started with configPath.
func processesFor(configPath string) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil && runsConfig(pid, configPath) {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

func readPid(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	pid, err := strconv.Atoi(string(bytes.TrimSpace(b)))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("pid file %s: bad content %q", path, b)
	}
	return pid, nil
}
