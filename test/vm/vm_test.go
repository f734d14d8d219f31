// Package vm is skiff's VM tier: Debian VMs built from Debian's packages
// (image.sh), booted on QEMU with systemd as PID 1, installed with `skiff
// install` as the Vagrantfile does (node.sh), and checked as users run
// them: units, nodes, a Deployment behind a Service across VMs, restarts,
// a reboot and uninstall.
package vm

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// web is one pod per node (anti-affinity) serving its own name, behind a
// NodePort Service; client is a pod on the server's node to call it from.
const web = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
          - labelSelector: {matchLabels: {app: web}}
            topologyKey: kubernetes.io/hostname
      containers:
      - name: web
        image: ` + busyboxRef + `
        imagePullPolicy: Never
        command: ["sh", "-c", "mkdir -p /www && echo $HOSTNAME > /www/index.html && httpd -f -p 8080 -h /www & trap 'exit 0' TERM; wait"]
        readinessProbe: {httpGet: {path: /, port: 8080}, periodSeconds: 2}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  type: NodePort
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080, nodePort: 30080}]
---
apiVersion: v1
kind: Pod
metadata: {name: client}
spec:
  nodeSelector: {kubernetes.io/hostname: skiff-server}
  containers:
  - name: client
    image: ` + busyboxRef + `
    imagePullPolicy: Never
    command: ["sh", "-c", "trap 'exit 0' TERM; sleep 86400 & wait"]
`

func TestVMCluster(t *testing.T) {
	requireVMTier(t)
	c := startCluster(t, hostArch())
	start := time.Now()
	c.install()
	t.Logf("cluster installed in %s", time.Since(start).Round(time.Second))

	c.step("units came up by themselves", func() {
		for _, v := range []*VM{c.server, c.agent} {
			unit := "skiff-agent"
			if v == c.server {
				unit = "skiff-server"
			}
			for _, want := range []string{"active", "enabled"} {
				verb := map[string]string{"active": "is-active", "enabled": "is-enabled"}[want]
				if got, _ := v.Try("systemctl "+verb+" "+unit, time.Minute); got != want {
					t.Errorf("%s: systemctl %s %s = %q", v.Name, verb, unit, got)
				}
			}
		}
	})
	c.step("2 nodes Ready", func() {
		c.kubectl("wait --for=condition=Ready node --all --timeout=300s")
		if n := strings.Fields(c.kubectl("get nodes -o name")); len(n) != 2 {
			t.Fatalf("nodes: %v", n)
		}
	})
	c.step("a Deployment behind a Service across VMs", func() {
		if out, err := c.server.TryInput("skiff kubectl apply -f -", web); err != nil {
			t.Fatalf("apply: %v\n%s", err, out)
		}
		c.kubectl("rollout status deployment/web --timeout=600s")
		c.kubectl("wait --for=condition=Ready pod/client --timeout=300s")
		c.checkService()
	})
	before := c.agentPod()
	c.step("systemctl restart skiff-agent keeps its pods", func() {
		c.agent.Run("systemctl restart skiff-agent")
		c.kubectl("wait --for=condition=Ready node/skiff-agent --timeout=300s")
		after := c.agentPod()
		if after.containerID != before.containerID || after.restarts != "0" {
			t.Errorf("pod %s on the agent: container %s (restarts %s) → %s (restarts %s)", before.name, before.containerID, before.restarts, after.containerID, after.restarts)
		}
	})
	c.step("systemctl stop + start skiff-server loses nothing", func() {
		uids := c.kubectl("get deploy,svc,pods -o 'jsonpath={.items[*].metadata.uid}'")
		c.server.Run("systemctl stop skiff-server")
		if got, _ := c.server.Try("systemctl is-active skiff-server", time.Minute); got == "active" {
			t.Errorf("skiff-server still active after stop")
		}
		c.server.Run("systemctl start skiff-server")
		c.kubectl("wait --for=condition=Ready node --all --timeout=300s")
		if got := c.kubectl("get deploy,svc,pods -o 'jsonpath={.items[*].metadata.uid}'"); got != uids {
			t.Errorf("objects changed across a server restart:\n%s\n%s", uids, got)
		}
		c.kubectl("rollout status deployment/web --timeout=300s")
		c.checkService()
	})
	c.step("a rebooted agent VM comes back Ready with its pods recreated", func() {
		old := c.agentPod()
		c.agent.Reboot()
		if out, err := c.agent.Try("until systemctl is-active skiff-agent; do sleep 2; done", 5*time.Minute); err != nil {
			t.Errorf("skiff-agent after reboot: %v\n%s", err, out)
		}
		c.kubectl("wait --for=condition=Ready node/skiff-agent --timeout=300s")
		c.kubectl("wait --for=condition=Ready pod/" + old.name + " --timeout=300s")
		if now := c.agentPod(); now.containerID == old.containerID {
			t.Errorf("pod %s kept container %s across a reboot", old.name, old.containerID)
		}
		c.checkService()
	})
	c.step("skiff uninstall --purge leaves clean VMs", func() {
		for _, v := range []*VM{c.agent, c.server} {
			v.Run("skiff uninstall --purge")
			if out, err := v.Try(cleanCheck, time.Minute); err != nil || out != "" {
				t.Errorf("%s after uninstall: %v\n%s", v.Name, err, out)
			}
		}
	})
}

// cleanCheck prints what skiff left on a VM.
const cleanCheck = `
systemctl list-unit-files 'skiff*' --no-legend | grep . && echo "units left"
for p in /var/lib/skiff /etc/skiff /run/skiff /var/log/pods /usr/local/bin/skiff /usr/local/bin/kubectl /sys/fs/cgroup/skiff; do
	[ -e "$p" ] && echo "left: $p"
done
iptables-save | grep -E 'KUBE-|SKIFF' | head -3
ip -br link | grep -E '^(skiff0|flannel|vxlan)' 
ip netns list | head -3
grep -E '/var/lib/skiff|/run/skiff' /proc/mounts | head -3
pgrep -a -f 'containerd|skiff' | grep -v pgrep
true
`

// step runs one part of the scenario, timing it.
func (c *cluster) step(name string, fn func()) {
	c.t.Helper()
	start := time.Now()
	fn()
	c.t.Logf("%s: %s", name, time.Since(start).Round(time.Second))
}

// install installs the server, hands its join token to the agent and
// installs the agent, with node.sh as the Vagrantfile does.
func (c *cluster) install() {
	c.installServer()
	c.installAgent()
}

// installServer returns once the server's API answers.
func (c *cluster) installServer() {
	c.server.Run("/mnt/skiff/node.sh server --skiff /mnt/skiff/skiff --node-ip 10.99.0.10 --images /mnt/skiff/images")
}

// installAgent returns once the agent's node is Ready.
func (c *cluster) installAgent() {
	token := c.server.Run("cat /var/lib/skiff/server/token")
	c.agent.Run(fmt.Sprintf("/mnt/skiff/node.sh agent --skiff /mnt/skiff/skiff --node-ip 10.99.0.11 --images /mnt/skiff/images --server https://10.99.0.10:6443 --token %s", token))
}

// kubectl runs skiff kubectl on the server VM.
func (c *cluster) kubectl(args string) string {
	c.t.Helper()
	return c.server.Run("skiff kubectl " + args)
}

type podState struct{ name, containerID, restarts string }

// agentPod is the web pod on the agent's node.
func (c *cluster) agentPod() podState {
	c.t.Helper()
	out := c.kubectl(`get pods -l app=web --field-selector spec.nodeName=skiff-agent -o 'jsonpath={range .items[*]}{.metadata.name}{" "}{.status.containerStatuses[0].containerID}{" "}{.status.containerStatuses[0].restartCount}{end}'`)
	f := strings.Fields(out)
	if len(f) != 3 {
		c.t.Fatalf("web pod on skiff-agent: %q", out)
	}
	return podState{f[0], f[1], f[2]}
}

// checkService calls the Service by its DNS name from the client pod and
// at its NodePort on each node from the server VM: both web pods answer.
func (c *cluster) checkService() {
	c.t.Helper()
	pods := strings.Fields(c.kubectl("get pods -l app=web -o 'jsonpath={.items[*].metadata.name}'"))
	byName := c.kubectl(`exec client -- sh -c 'for i in $(seq 30); do timeout 5 wget -q -O- http://web.default.svc.cluster.local; done'`)
	nodePort := c.server.Run(`for ip in 10.99.0.10 10.99.0.11; do for i in $(seq 15); do
		timeout 5 bash -c "exec 3<>/dev/tcp/$ip/30080 && printf 'GET / HTTP/1.0\r\n\r\n' >&3 && tail -n1 <&3"; done; done`)
	for _, p := range pods {
		if !strings.Contains(byName, p) {
			c.t.Errorf("web.default.svc.cluster.local never reached %s:\n%s", p, byName)
		}
		if !strings.Contains(nodePort, p) {
			c.t.Errorf("NodePort 30080 never reached %s:\n%s", p, nodePort)
		}
	}
}
