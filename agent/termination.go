package agent

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/skiff-lab/skiff/cri"
)

// The kubelet's limits on termination messages: a message file is read up
// to 4096 bytes; the log fallback is the last 80 lines, up to 2048 bytes.
const (
	maxMessageBytes  = 4096
	fallbackLines    = 80
	fallbackLogBytes = 2048
)

// terminationLogName names the file one container attempt writes its
// termination message to, in the pod's directory.
func terminationLogName(container string, attempt int) string {
	return fmt.Sprintf("termination-log-%s-%d", container, attempt)
}

// terminationLog creates the empty, world-writable file a container attempt
// may write its termination message to, mounted at terminationMessagePath.
func (s *podSync) terminationLog(c *v1.Container, attempt int) (cri.Mount, bool, error) {
	if c.TerminationMessagePath == "" {
		return cri.Mount{}, false, nil
	}
	path, err := s.a.rt.WritePodFile(string(s.pod.UID), terminationLogName(c.Name, attempt), nil)
	if err != nil {
		return cri.Mount{}, false, err
	}
	if err := os.Chmod(path, 0o666); err != nil {
		return cri.Mount{}, false, err
	}
	return cri.Mount{Source: path, Destination: c.TerminationMessagePath}, true, nil
}

// terminationMessages reads the termination message of every exited
// container attempt the status shows (keyed by container ID): what it wrote
// to its termination log, or, with FallbackToLogsOnError and a failure, the
// end of its log.
func (s *podSync) terminationMessages(st podState) map[string]string {
	out := map[string]string{}
	for name, list := range st.containers {
		spec := s.containerByName(name)
		for _, c := range list[:min(2, len(list))] {
			if c.State != cri.StateExited || spec == nil {
				continue
			}
			if msg := s.terminationMessage(spec, c); msg != "" {
				out[c.ID] = msg
			}
		}
	}
	return out
}

func (s *podSync) terminationMessage(spec *v1.Container, c cri.Container) string {
	path := filepath.Join(s.a.rt.PodDir(string(s.pod.UID)), terminationLogName(c.Name, c.Attempt))
	if f, err := os.Open(path); err == nil {
		buf := make([]byte, maxMessageBytes)
		n, _ := f.Read(buf)
		f.Close()
		if n > 0 {
			return string(buf[:n])
		}
	}
	if spec.TerminationMessagePolicy != v1.TerminationMessageFallbackToLogsOnError || c.ExitCode == 0 {
		return ""
	}
	text, err := cri.TailLog(c.LogPath, fallbackLines, fallbackLogBytes)
	if err != nil {
		return ""
	}
	return strings.TrimRight(text, "\n")
}
