package cri_test

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/skiff-lab/skiff/cni"
	"github.com/skiff-lab/skiff/cri"
	"github.com/skiff-lab/skiff/cri/supervisor"
	"github.com/skiff-lab/skiff/test/images"
)

// The floor of a pod's start-up on this machine: the network and runtime
// steps the agent takes for a one-container pod, called directly, with no
// API server, scheduler or agent. agent's BenchmarkPodStartup is the same
// pod through the whole stack. Results are in docs/perf.md.

const (
	floorCIDR     = "10.253.0.0/24"
	floorIPPrefix = "10.253.0."
	floorPause    = "skiff.local/pause:floor"
	floorBusybox  = "skiff.test/busybox:floor"
)

// BenchmarkFloor times, per pod, from before the network namespace is set
// up to after StartContainer returns: netns + CNI ADD, the pause sandbox,
// then a busybox sleep created and started in it. Pods stay until the end,
// as in agent's BenchmarkPodStartup, so the Nth pod starts beside N-1
// running ones in both; they are torn down after the timing.
func BenchmarkFloor(b *testing.B) {
	f := startFloor(b)
	var latencies []time.Duration
	var pods []floorPod
	for b.Loop() {
		start := time.Now()
		pods = append(pods, f.startPod())
		latencies = append(latencies, time.Since(start))
	}
	for _, pod := range pods {
		f.removePod(pod)
	}
	slices.Sort(latencies)
	at := func(p float64) float64 {
		return float64(latencies[int(p*float64(len(latencies)-1))].Microseconds()) / 1000
	}
	b.ReportMetric(at(0.50), "p50-ms")
	b.ReportMetric(at(0.99), "p99-ms")
}

// floor is a containerd of its own with the two images imported, and a pod
// network on its own bridge, all under unique names.
type floor struct {
	b          *testing.B
	daemon     *supervisor.Daemon
	rt         *cri.Runtime
	net        *cni.Network
	bridge     string
	cgroupRoot string
}

type floorPod struct {
	ref                cri.PodRef
	sandbox, container string
}

func startFloor(b *testing.B) *floor {
	b.Helper()
	if testing.Short() || os.Geteuid() != 0 {
		b.Skip("needs root and real containerd, runc and CNI plugins (not -short)")
	}
	ctx := context.Background()
	dir, suffix := b.TempDir(), cri.NewID()[:6]
	f := &floor{b: b, bridge: "skb" + suffix, cgroupRoot: "/skiff-bench-" + suffix}
	d, err := supervisor.Start(ctx, supervisor.Config{Dir: filepath.Join(dir, "containerd")})
	if err != nil {
		b.Fatal(err)
	}
	f.daemon = d
	b.Cleanup(f.cleanup)
	f.rt, err = cri.Connect(ctx, cri.Config{Address: d.Address(), Namespace: "skiff-bench-" + suffix,
		StateDir: filepath.Join(dir, "state"), PodLogDir: filepath.Join(dir, "logs"), CgroupRoot: f.cgroupRoot})
	if err != nil {
		b.Fatal(err)
	}
	f.importImage(images.Pause, floorPause)
	f.importImage(images.Busybox, floorBusybox)
	f.net = cni.New(cni.Config{ConfDir: filepath.Join(dir, "cni", "net.d"), CacheDir: filepath.Join(dir, "cni", "cache"),
		NetNSDir: filepath.Join(dir, "netns"), Bridge: f.bridge})
	if err := f.net.Configure(floorCIDR); err != nil {
		b.Fatal(err)
	}
	return f
}

func (f *floor) importImage(build func(ref string) ([]byte, error), ref string) {
	f.b.Helper()
	tar, err := build(ref)
	if err != nil {
		f.b.Fatal(err)
	}
	if _, err := f.rt.Import(context.Background(), bytes.NewReader(tar)); err != nil {
		f.b.Fatal(err)
	}
}

// startPod does what the agent does to start a one-container pod.
func (f *floor) startPod() floorPod {
	f.b.Helper()
	ctx := context.Background()
	p := floorPod{ref: cri.PodRef{UID: uuid.NewString(), Namespace: "bench", Name: "floor"}, sandbox: cri.NewID()}
	res, err := f.net.Setup(ctx, cni.Pod{ID: p.sandbox, Namespace: p.ref.Namespace, Name: p.ref.Name, UID: p.ref.UID})
	if err != nil {
		f.b.Fatal(err)
	}
	ips := make([]string, 0, len(res.IPs))
	for _, ip := range res.IPs {
		ips = append(ips, ip.String())
	}
	sandbox := cri.SandboxSpec{Pod: p.ref, ID: p.sandbox, Image: floorPause, Hostname: p.ref.Name, NetNS: res.NetNSPath, IPs: ips}
	if err := f.rt.RunSandbox(ctx, sandbox); err != nil {
		f.b.Fatal(err)
	}
	p.container, err = f.rt.CreateContainer(ctx, cri.ContainerSpec{Pod: p.ref, SandboxID: p.sandbox, Name: "sleep",
		Image: floorBusybox, Command: []string{"sleep", "3600"}, Hostname: p.ref.Name})
	if err != nil {
		f.b.Fatal(err)
	}
	if err := f.rt.StartContainer(ctx, p.container); err != nil {
		f.b.Fatal(err)
	}
	return p
}

// removePod undoes startPod in the agent's order: container, then sandbox
// (stop, network, remove), then the pod's files and cgroup.
func (f *floor) removePod(p floorPod) {
	f.b.Helper()
	ctx := context.Background()
	for _, err := range []error{
		stopErr(f.rt.StopContainer(ctx, p.container, 0)),
		f.rt.RemoveContainer(ctx, p.container),
		stopErr(f.rt.StopContainer(ctx, p.sandbox, 0)),
		f.net.Teardown(ctx, p.sandbox),
		f.rt.RemoveContainer(ctx, p.sandbox),
		f.rt.RemovePod(ctx, p.ref),
	} {
		if err != nil {
			f.b.Fatal(err)
		}
	}
}

// cleanup fails the benchmark for anything a pod left (containers, network
// namespaces, veths, iptables rules, cgroups) and removes it, then stops
// containerd and removes the bridge.
func (f *floor) cleanup() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if f.rt != nil {
		left, err := f.rt.List(ctx, "")
		if err != nil {
			f.b.Errorf("list containers: %v", err)
		}
		for _, c := range left {
			f.b.Errorf("left behind: %s %s", c.Kind, c.ID)
			_ = f.rt.RemoveContainer(ctx, c.ID)
		}
		f.rt.Close()
	}
	if f.net != nil {
		ids, _ := f.net.List()
		for _, id := range ids {
			f.b.Errorf("network namespace left behind: %s", id)
			_ = f.net.Teardown(ctx, id)
		}
	}
	if err := f.daemon.Stop(ctx); err != nil {
		f.b.Error(err)
	}
	if out, _ := exec.Command("ip", "-o", "link", "show", "master", f.bridge).Output(); len(bytes.TrimSpace(out)) > 0 {
		f.b.Errorf("veths left on %s: %s", f.bridge, out)
	}
	_ = exec.Command("ip", "link", "del", f.bridge).Run()
	if out, err := exec.Command("iptables-save").Output(); err != nil {
		f.b.Errorf("iptables-save: %v", err)
	} else if strings.Contains(string(out), floorIPPrefix) {
		f.b.Errorf("iptables rules left for %s:\n%s", floorCIDR, out)
	}
	f.removeCgroups()
}

// removeCgroups removes the cgroup root in every hierarchy; a pod cgroup
// still under it fails the benchmark.
func (f *floor) removeCgroups() {
	roots, _ := filepath.Glob("/sys/fs/cgroup/*" + f.cgroupRoot)
	roots = append(roots, "/sys/fs/cgroup"+f.cgroupRoot)
	for _, root := range roots {
		var dirs []string
		_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
		if len(dirs) > 1 {
			f.b.Errorf("cgroups left under %s: %v", root, dirs[1:])
		}
		for _, dir := range slices.Backward(dirs) {
			if err := os.Remove(dir); err != nil {
				f.b.Errorf("remove cgroup: %v", err)
			}
		}
	}
}

// stopErr is StopContainer's error.
func stopErr(_ cri.Stop, err error) error { return err }
