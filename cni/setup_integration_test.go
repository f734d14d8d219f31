package cni

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
)

const podPort = 8080

func TestSetupTeardown(t *testing.T) {
	e := newEnv(t)
	if err := e.n.Configure(e.cidr.String()); err != nil {
		t.Fatal(err)
	}
	hostPort := freeLoopbackPort(t)
	podA := e.pod(PortMapping{HostPort: hostPort, ContainerPort: podPort, Protocol: "TCP", HostIP: "127.0.0.1"})
	podB := e.pod()
	a, b := e.setup(podA), e.setup(podB)
	if a.IPs[0].Equal(b.IPs[0]) {
		t.Fatalf("both pods got %s", a.IPs[0])
	}
	e.checkPod(a)
	e.checkPod(b)
	if again := e.setup(podA); !again.IPs[0].Equal(a.IPs[0]) {
		t.Errorf("second Setup of %s = %v, want %v", podA.ID, again.IPs, a.IPs)
	}
	if ports := e.bridgePorts(); len(ports) != 2 {
		t.Errorf("bridge ports = %v, want 2 veths", ports)
	}

	listen(t, a.NetNSPath, podPort)
	target := fmt.Sprintf("%s:%d", a.IPs[0], podPort)
	for name, tc := range map[string]struct{ from, addr string }{
		"host to pod":      {"", target},
		"pod to pod":       {b.NetNSPath, target},
		"host to hostPort": {"", fmt.Sprintf("127.0.0.1:%d", hostPort)},
	} {
		if got, err := dial(tc.from, tc.addr); err != nil || got != "hello" {
			t.Errorf("%s (%s): got %q, %v", name, tc.addr, got, err)
		}
	}

	e.teardown(podA.ID)
	e.teardown(podB.ID)
	e.checkGone(podA.ID, a.IPs[0])
	e.checkGone(podB.ID, b.IPs[0])
	if ports := e.bridgePorts(); len(ports) != 0 {
		t.Errorf("bridge ports after teardown = %v", ports)
	}
	if ids, err := e.n.List(); err != nil || len(ids) != 0 {
		t.Errorf("List after teardown = %v, %v", ids, err)
	}
	for _, id := range []string{podA.ID, podB.ID} {
		if err := e.n.Teardown(context.Background(), id); err != nil {
			t.Errorf("second Teardown(%s) = %v", id, err)
		}
	}
}

// An agent restarted with an empty ConfDir tears down from the libcni cache
// alone, port mappings included.
func TestTeardownAfterRestart(t *testing.T) {
	e := newEnv(t)
	if err := e.n.Configure(e.cidr.String()); err != nil {
		t.Fatal(err)
	}
	pod := e.pod(PortMapping{HostPort: freeLoopbackPort(t), ContainerPort: podPort, HostIP: "127.0.0.1"})
	res := e.setup(pod)

	cfg := e.cfg
	cfg.ConfDir = t.TempDir()
	restarted := New(cfg)
	if ids, err := restarted.List(); err != nil || len(ids) != 1 || ids[0] != pod.ID {
		t.Fatalf("List after restart = %v, %v", ids, err)
	}
	if err := restarted.Teardown(context.Background(), pod.ID); err != nil {
		t.Fatal(err)
	}
	e.checkGone(pod.ID, res.IPs[0])
	if ports := e.bridgePorts(); len(ports) != 0 {
		t.Errorf("bridge ports after teardown = %v", ports)
	}
}

// When the netns has vanished, Teardown still releases the IP and leaves no
// iptables rule of the pod.
func TestTeardownNetNSGone(t *testing.T) {
	e := newEnv(t)
	if err := e.n.Configure(e.cidr.String()); err != nil {
		t.Fatal(err)
	}
	pod := e.pod()
	res := e.setup(pod)
	if err := removeNetNS(res.NetNSPath); err != nil {
		t.Fatal(err)
	}
	e.teardown(pod.ID)
	e.checkGone(pod.ID, res.IPs[0])
}

// A failed ADD leaves no netns, no veth and no iptables rules behind, and does
// not disturb pods that are already set up.
func TestSetupFailure(t *testing.T) {
	tests := map[string]func(e *env) error{
		"pod cidr exhausted": func(e *env) error {
			// A /30 has one address for pods beside the gateway.
			return e.n.Configure(e.prefix + "0/30")
		},
		"invalid subnet": func(e *env) error {
			if err := e.n.Configure(e.prefix + "0/30"); err != nil {
				return err
			}
			data, err := os.ReadFile(e.n.confPath())
			if err != nil {
				return err
			}
			bad := strings.Replace(string(data), e.prefix+"0/30", e.prefix+"0/33", 1)
			return os.WriteFile(e.n.confPath(), []byte(bad), 0o644)
		},
	}
	for name, configure := range tests {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			if err := e.n.Configure(e.prefix + "0/30"); err != nil {
				t.Fatal(err)
			}
			first := e.pod()
			res := e.setup(first)
			if err := configure(e); err != nil {
				t.Fatal(err)
			}
			failing := e.pod()
			if _, err := e.n.Setup(context.Background(), failing); err == nil {
				t.Fatal("Setup succeeded")
			} else {
				t.Logf("Setup: %v", err)
			}
			if ids, _ := e.n.List(); len(ids) != 1 || ids[0] != first.ID {
				t.Errorf("netns after failed Setup = %v, want only %s", ids, first.ID)
			}
			if ports := e.bridgePorts(); len(ports) != 1 {
				t.Errorf("bridge ports after failed Setup = %v, want the first pod's", ports)
			}
			if strings.Contains(e.iptablesSave(), failing.ID) {
				t.Errorf("iptables mentions %s", failing.ID)
			}
			e.checkPod(res)
		})
	}
}
