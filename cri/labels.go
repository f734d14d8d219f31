package cri

import (
	"slices"
	"strconv"
	"strings"
	"time"
)

// Label keys on every containerd container the agent creates. The
// io.kubernetes.* keys are the ones the kubelet uses, so tools that know them
// (ctr, crictl-style listings) read skiff's containers the same way.
const (
	LabelPodUID        = "io.kubernetes.pod.uid"
	LabelPodNamespace  = "io.kubernetes.pod.namespace"
	LabelPodName       = "io.kubernetes.pod.name"
	LabelContainerName = "io.kubernetes.container.name"
	LabelAttempt       = "io.kubernetes.container.restartCount"
	LabelKind          = "skiff.io/kind"
	LabelSandbox       = "skiff.io/sandbox"
	LabelImageRef      = "skiff.io/image"
	LabelImageID       = "skiff.io/image-id"
	LabelLogPath       = "skiff.io/log-path"
	LabelNetNS         = "skiff.io/netns"
	LabelPodIPs        = "skiff.io/pod-ips"
	LabelStartedAt     = "skiff.io/started-at"
	LabelFinishedAt    = "skiff.io/finished-at"
	LabelExitCode      = "skiff.io/exit-code"
	LabelReason        = "skiff.io/reason"
	LabelStdio         = "skiff.io/stdio"     // Stdio's set fields: "stdin", "once", "tty", comma-separated
	LabelResources     = "skiff.io/resources" // Resources.Source: what the container's cgroup settings were made from

	KindSandbox   = "sandbox"
	KindContainer = "container"
)

// PodRef names the pod a sandbox or container belongs to.
type PodRef struct {
	UID, Namespace, Name string
}

func (p PodRef) labels(kind string) map[string]string {
	return map[string]string{
		LabelPodUID:       p.UID,
		LabelPodNamespace: p.Namespace,
		LabelPodName:      p.Name,
		LabelKind:         kind,
	}
}

func podRefFrom(labels map[string]string) PodRef {
	return PodRef{UID: labels[LabelPodUID], Namespace: labels[LabelPodNamespace], Name: labels[LabelPodName]}
}

func formatTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func parseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t
}

func parseInt(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0
	}
	return n
}

// stdioLabel records stdio in a label value, for re-attaching after a
// restart.
func stdioLabel(stdio Stdio) string {
	var parts []string
	for _, p := range []struct {
		on   bool
		name string
	}{{stdio.Stdin, "stdin"}, {stdio.StdinOnce, "once"}, {stdio.TTY, "tty"}} {
		if p.on {
			parts = append(parts, p.name)
		}
	}
	return strings.Join(parts, ",")
}

func parseStdio(label string) Stdio {
	parts := splitList(label)
	return Stdio{Stdin: slices.Contains(parts, "stdin"), StdinOnce: slices.Contains(parts, "once"), TTY: slices.Contains(parts, "tty")}
}
