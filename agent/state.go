package agent

import (
	"slices"

	"github.com/skiff-lab/skiff/cri"
)

// podState is what exists on this node for one pod, as the runtime reports it.
type podState struct {
	sandboxes  []cri.Container            // newest first
	containers map[string][]cri.Container // by container name, newest attempt first
}

func groupState(all []cri.Container) podState {
	st := podState{containers: map[string][]cri.Container{}}
	for _, c := range all {
		if c.Kind == cri.KindSandbox {
			st.sandboxes = append(st.sandboxes, c)
		} else {
			st.containers[c.Name] = append(st.containers[c.Name], c)
		}
	}
	slices.SortFunc(st.sandboxes, func(a, b cri.Container) int { return b.CreatedAt.Compare(a.CreatedAt) })
	for _, list := range st.containers {
		slices.SortFunc(list, func(a, b cri.Container) int { return b.Attempt - a.Attempt })
	}
	return st
}

// sandbox is the newest sandbox, if any.
func (s podState) sandbox() *cri.Container {
	if len(s.sandboxes) == 0 {
		return nil
	}
	return &s.sandboxes[0]
}

// readySandbox is the newest sandbox if it is running.
func (s podState) readySandbox() *cri.Container {
	if sb := s.sandbox(); sb != nil && sb.State == cri.StateRunning {
		return sb
	}
	return nil
}

// latest is the newest attempt of a container, in any sandbox.
func (s podState) latest(name string) *cri.Container {
	if list := s.containers[name]; len(list) > 0 {
		return &list[0]
	}
	return nil
}

// current is the newest attempt of a container in the given sandbox.
func (s podState) current(name, sandboxID string) *cri.Container {
	if c := s.latest(name); c != nil && c.SandboxID == sandboxID {
		return c
	}
	return nil
}

// nextAttempt is the attempt number a new start of the container gets.
func (s podState) nextAttempt(name string) int {
	if c := s.latest(name); c != nil {
		return c.Attempt + 1
	}
	return 0
}

// live lists the containers and sandboxes whose task still exists.
func (s podState) live() []cri.Container {
	var out []cri.Container
	for _, list := range s.containers {
		for _, c := range list {
			if c.State == cri.StateRunning || c.State == cri.StateCreated {
				out = append(out, c)
			}
		}
	}
	for _, sb := range s.sandboxes {
		if sb.State == cri.StateRunning || sb.State == cri.StateCreated {
			out = append(out, sb)
		}
	}
	return out
}

// empty says nothing of the pod exists on the node.
func (s podState) empty() bool { return len(s.sandboxes) == 0 && len(s.containers) == 0 }
