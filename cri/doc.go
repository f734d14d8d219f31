// Package cri runs pods' sandboxes and containers on containerd.
//
// It does what the agent tells it and reports what exists: it never decides
// what should run. Everything it creates lives in one containerd namespace and
// carries labels (pod UID, namespace, name, container name, attempt), so a
// restarted agent finds and adopts what is already running instead of
// creating it twice. State the agent needs after a restart (start and finish
// times, exit codes) is kept in those labels too; nothing is kept in memory
// that a restart would lose.
package cri
