// Package probes runs a pod's startup, liveness and readiness probes the way
// the kubelet does, and tells the agent when a result changes.
//
// Two halves:
//
//   - Prober runs one probe (exec, httpGet, tcpSocket, grpc) once and says
//     Success, Warning, Failure or Unknown, with kubelet's output text. An error
//     means the probe could not be run at all (a bad named port, an exec that
//     never started) and is not a failure.
//   - Manager keeps one worker per (pod UID, container, probe kind). A worker
//     owns a single timer; a due probe runs in a short-lived goroutine; results
//     go through successThreshold/failureThreshold, and a change of the
//     published result is pushed to the caller's ChangeFunc.
//
// The package knows nothing of the agent: the agent tells the Manager what it
// observed (Update), reads Ready/Started when it builds pod status, and acts
// on ChangeFunc (restart on a liveness or startup Failure, resync status on a
// readiness change).
package probes
