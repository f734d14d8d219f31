// Command skiff-pause is a pod sandbox's first process. It holds the pod's
// namespaces open, and as PID 1 of the pod's PID namespace it reaps orphaned
// zombies. It exits 0 on SIGTERM or SIGINT and otherwise sleeps forever;
// `skiff-pause -v` prints its version.
//
// It is built static (CGO_ENABLED=0) from the standard library and skiff's
// version package only (no fmt, no flag: one runs per pod, so it stays
// small), and is packed alone into the built-in pause image.
package main

import (
	"os"
	"os/signal"
	"runtime"
	"syscall"

	"github.com/skiff-lab/skiff/version"
)

func main() {
	switch {
	case len(os.Args) == 2 && os.Args[1] == "-v":
		os.Stdout.WriteString("skiff-pause " + version.Version + "\n")
		return
	case len(os.Args) > 1:
		os.Stderr.WriteString("usage: skiff-pause [-v]\n")
		os.Exit(2)
	}
	runtime.GOMAXPROCS(1)

	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGCHLD, syscall.SIGTERM, syscall.SIGINT)
	reap() // children that exited before Notify was called
	for sig := range sigs {
		if sig != syscall.SIGCHLD {
			os.Exit(0)
		}
		reap()
	}
}

// reap collects every exited child without blocking and returns how many.
// Signals coalesce, so one SIGCHLD may stand for several exits.
func reap() int {
	n := 0
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil || pid <= 0 {
			return n
		}
		n++
	}
}
