package agent

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/flowcontrol"
	testclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/skiff-lab/skiff/cri"
)

var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

func testPod(policy v1.RestartPolicy, inits []string, mains ...string) *v1.Pod {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid-1"}}
	pod.Spec.RestartPolicy = policy
	for _, n := range inits {
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, v1.Container{Name: n, Image: "busybox"})
	}
	for _, n := range mains {
		pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Name: n, Image: "busybox"})
	}
	return pod
}

func sandbox(id string, state cri.State) cri.Container {
	return cri.Container{ID: id, Kind: cri.KindSandbox, State: state, CreatedAt: t0}
}

func ctr(name string, attempt int, sb string, state cri.State, exit int) cri.Container {
	return cri.Container{ID: name + string(rune('0'+attempt)), Kind: cri.KindContainer, Name: name, Attempt: attempt,
		SandboxID: sb, State: state, ExitCode: exit, StartedAt: t0, FinishedAt: t0.Add(time.Second)}
}

// planSummary is a plan written as text, to compare in tables.
func planSummary(p podActions) string {
	s := ""
	if p.KillPod {
		s += "kill-pod "
	}
	if p.CreateSandbox {
		s += "sandbox "
	}
	for _, k := range p.Kill {
		s += "stop:" + k.ID + " "
	}
	for _, a := range p.Start {
		s += "start:" + a.Container.Name + "#" + string(rune('0'+a.Attempt)) + " "
	}
	for _, b := range p.BackingOff {
		s += "backoff:" + b + " "
	}
	return s
}

func TestComputePodActions(t *testing.T) {
	always, never, onFailure := v1.RestartPolicyAlways, v1.RestartPolicyNever, v1.RestartPolicyOnFailure
	run, exited, unknown := cri.StateRunning, cri.StateExited, cri.StateUnknown
	deleted := testPod(always, nil, "a")
	deleted.DeletionTimestamp = &metav1.Time{Time: t0}
	tests := []struct {
		name    string
		pod     *v1.Pod
		have    []cri.Container
		backoff bool // every restart is still backing off
		want    string
	}{
		{"new pod gets a sandbox", testPod(always, nil, "a"), nil, false, "sandbox "},
		{"dead sandbox is replaced, its containers stopped", testPod(always, nil, "a"),
			[]cri.Container{sandbox("s1", exited), ctr("a", 0, "s1", run, 0)}, false, "sandbox stop:a0 "},
		{"first init container starts alone", testPod(always, []string{"i1", "i2"}, "a"),
			[]cri.Container{sandbox("s1", run)}, false, "start:i1#0 "},
		{"running init container is waited for", testPod(always, []string{"i1", "i2"}, "a"),
			[]cri.Container{sandbox("s1", run), ctr("i1", 0, "s1", run, 0)}, false, ""},
		{"next init container after success", testPod(always, []string{"i1", "i2"}, "a"),
			[]cri.Container{sandbox("s1", run), ctr("i1", 0, "s1", exited, 0)}, false, "start:i2#0 "},
		{"failed init container is retried", testPod(always, []string{"i1"}, "a"),
			[]cri.Container{sandbox("s1", run), ctr("i1", 0, "s1", exited, 1)}, false, "start:i1#1 "},
		{"failed init container backs off", testPod(onFailure, []string{"i1"}, "a"),
			[]cri.Container{sandbox("s1", run), ctr("i1", 0, "s1", exited, 1)}, true, "backoff:i1 "},
		{"failed init container under Never ends the pod", testPod(never, []string{"i1"}, "a"),
			[]cri.Container{sandbox("s1", run), ctr("i1", 0, "s1", exited, 1)}, false, "kill-pod "},
		{"all main containers start after inits", testPod(always, []string{"i1"}, "a", "b"),
			[]cri.Container{sandbox("s1", run), ctr("i1", 0, "s1", exited, 0)}, false, "start:a#0 start:b#0 "},
		{"running containers are left alone", testPod(always, nil, "a", "b"),
			[]cri.Container{sandbox("s1", run), ctr("a", 0, "s1", run, 0), ctr("b", 2, "s1", run, 0)}, false, ""},
		{"Always restarts a clean exit", testPod(always, nil, "a"),
			[]cri.Container{sandbox("s1", run), ctr("a", 0, "s1", exited, 0)}, false, "start:a#1 "},
		{"restart waits out the back-off", testPod(always, nil, "a"),
			[]cri.Container{sandbox("s1", run), ctr("a", 3, "s1", exited, 2)}, true, "backoff:a "},
		{"OnFailure keeps a clean exit", testPod(onFailure, nil, "a", "b"),
			[]cri.Container{sandbox("s1", run), ctr("a", 0, "s1", exited, 0), ctr("b", 0, "s1", exited, 1)}, false, "start:b#1 "},
		{"Never with everything exited is done: the sandbox goes", testPod(never, nil, "a"),
			[]cri.Container{sandbox("s1", run), ctr("a", 0, "s1", exited, 1)}, false, "kill-pod "},
		{"deleted pod with only exited containers is removed", func() *v1.Pod { p := testPod(always, nil, "a"); p.DeletionTimestamp = &metav1.Time{}; return p }(),
			[]cri.Container{ctr("a", 0, "s1", exited, 0)}, false, "kill-pod "},
		{"finished pod without sandbox has nothing to do", testPod(never, nil, "a"),
			[]cri.Container{ctr("a", 0, "s1", exited, 0)}, false, ""},
		{"half-created container is created again", testPod(always, nil, "a"),
			[]cri.Container{sandbox("s1", run), ctr("a", 0, "s1", unknown, 0)}, false, "start:a#1 "},
		{"deleted pod is killed", deleted,
			[]cri.Container{sandbox("s1", run), ctr("a", 0, "s1", run, 0)}, false, "kill-pod "},
		{"new sandbox reruns init containers", testPod(always, []string{"i1"}, "a"),
			[]cri.Container{sandbox("s2", run), ctr("i1", 0, "s1", exited, 0), ctr("a", 0, "s1", exited, 137)}, false, "start:i1#1 "},
	}
	sidecars := testPod(never, []string{"side", "i2"}, "a")
	sidecars.Spec.InitContainers[0].RestartPolicy = ptr.To(v1.ContainerRestartPolicyAlways)
	tests = append(tests, []struct {
		name    string
		pod     *v1.Pod
		have    []cri.Container
		backoff bool
		want    string
	}{
		{"sidecar starts first and alone", sidecars, []cri.Container{sandbox("s1", run)}, false, "start:side#0 "},
		{"init after a running sidecar", sidecars,
			[]cri.Container{sandbox("s1", run), ctr("side", 0, "s1", run, 0)}, false, "start:i2#0 "},
		{"mains beside the sidecar", sidecars,
			[]cri.Container{sandbox("s1", run), ctr("side", 0, "s1", run, 0), ctr("i2", 0, "s1", exited, 0)}, false, "start:a#0 "},
		{"sidecar restarted even under restartPolicy Never", sidecars,
			[]cri.Container{sandbox("s1", run), ctr("side", 0, "s1", exited, 1), ctr("i2", 0, "s1", exited, 0), ctr("a", 0, "s1", run, 0)}, false, "start:side#1 "},
		{"sidecar waits out its back-off, mains go on", sidecars,
			[]cri.Container{sandbox("s1", run), ctr("side", 0, "s1", exited, 1), ctr("i2", 0, "s1", exited, 0), ctr("a", 0, "s1", run, 0)}, true, "backoff:side "},
		{"finished mains end the pod, sidecar included", sidecars,
			[]cri.Container{sandbox("s1", run), ctr("side", 0, "s1", run, 0), ctr("i2", 0, "s1", exited, 0), ctr("a", 0, "s1", exited, 0)}, false, "kill-pod "},
	}...)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := testclock.NewFakeClock(t0.Add(2 * time.Second))
			bo := flowcontrol.NewFakeBackOff(10*time.Second, 5*time.Minute, clock)
			if tt.backoff {
				for _, c := range tt.have {
					bo.Next(backoffKey(tt.pod, c.Name), c.FinishedAt)
				}
			}
			got := planSummary(computePodActions(tt.pod, groupState(tt.have), bo, nil))
			if got != tt.want {
				t.Errorf("plan %q, want %q", got, tt.want)
			}
		})
	}
}
