package chaos

import (
	"context"
	"strings"
	"syscall"
	"time"

	"github.com/skiff-lab/skiff/controlplane"
)

// A fault is injected, lasts hold while the workload runs, and is healed.
type fault struct {
	name   string
	inject func(*chaos) (target string, heal func())
}

// faults are the chaos tier's, in order. A clock step on one node is not
// among them: the lab's nodes are network namespaces that share this
// machine's clock (docs/chaos.md).
var faults = []fault{
	{"kill -9 a server, then restart it", func(c *chaos) (string, func()) {
		return c.killNode(c.lab.ServerNames()[c.rnd.IntN(len(c.lab.ServerNames()))])
	}},
	{"kill -9 the etcd leader's server, then restart it", func(c *chaos) (string, func()) { return c.killNode(c.etcdLeader()) }},
	{"kill -9 an agent, then restart it", func(c *chaos) (string, func()) { return c.killNode("lab-node1") }},
	{"kill -9 an agent's containerd", func(c *chaos) (string, func()) {
		return c.killProcess([]string{"lab-node2"}, "containerd")
	}},
	{"kill -9 a shim", func(c *chaos) (string, func()) {
		// The first node that runs a pod now: the workload's pods move.
		return c.killProcess(append([]string{"lab-node1", "lab-node2"}, c.lab.ServerNames()...), "containerd-shim-runc-v2")
	}},
	{"cut a server off from the others, then heal", func(c *chaos) (string, func()) {
		server := c.lab.ServerNames()[1+c.rnd.IntN(len(c.lab.ServerNames())-1)]
		c.lab.Must(c.t, "partition", server)
		return server, func() { c.lab.Must(c.t, "heal", server) }
	}},
	{"fill an agent's disk, then free it", func(c *chaos) (string, func()) {
		c.lab.Must(c.t, "fill", "lab-node2")
		return "lab-node2", func() { c.lab.Must(c.t, "unfill", "lab-node2") }
	}},
}

// killNode ends a node's skiff with SIGKILL; heal starts it again.
func (c *chaos) killNode(node string) (string, func()) {
	c.lab.Must(c.t, "kill", node)
	return node, func() { c.lab.Must(c.t, "restart", node) }
}

// killProcess sends SIGKILL to one process whose program is named prog,
// the first found on the first of nodes that has one; the node's agent is
// to recover by itself. The random workload may run no pod at a given
// moment (its Deployments deleted, their pods not yet started): it waits
// up to a minute for one.
func (c *chaos) killProcess(nodes []string, prog string) (string, func()) {
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		for _, node := range nodes {
			for _, p := range nodeProcesses(c.lab.NodeDir(node), prog) {
				if syscall.Kill(p.pid, syscall.SIGKILL) == nil {
					target := node + " " + prog
					if id := flagValue(p.args, "-id"); len(id) > 12 {
						target += " of sandbox " + id[:12]
					}
					return target, func() {}
				}
			}
		}
	}
	c.t.Fatalf("no %s on %v to kill within a minute", prog, nodes)
	return "", nil
}

// etcdLeader is the node whose server's member leads etcd (member names
// are <node>-<8 random>).
func (c *chaos) etcdLeader() string {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, server := range c.lab.ServerNames() {
		cli, err := controlplane.LocalEtcdClient(c.lab.NodeDir(server))
		if err != nil {
			continue
		}
		defer cli.Close()
		st, err := cli.Status(ctx, cli.Endpoints()[0])
		if err != nil {
			continue
		}
		members, err := cli.MemberList(ctx)
		if err != nil {
			continue
		}
		for _, m := range members.Members {
			if m.ID == st.Leader {
				return m.Name[:strings.LastIndex(m.Name, "-")]
			}
		}
	}
	c.t.Fatal("no server knows the etcd leader")
	return ""
}
