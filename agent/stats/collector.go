// Package stats produces the kubelet's stats summary (what the kubelet serves
// at /stats/summary and metrics-server reads for kubectl top) from cgroups:
// CPU and memory of the node, of each pod and of each of its containers.
package stats

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/utils/clock"

	"github.com/skiff-lab/skiff/cri"
)

// Pod is a pod that runs on the node now, as Config.Pods lists it.
type Pod struct {
	UID, Namespace, Name string
	Containers           []Container
}

// Container is one running container of a Pod.
type Container struct {
	ID        string // containerd's container ID, which names its cgroup
	Name      string
	StartTime time.Time
}

// Config says where a Collector reads and what it reads for.
type Config struct {
	NodeName   string
	CgroupFS   string        // where cgroups are mounted; default "/sys/fs/cgroup"
	CgroupRoot string        // the agent's parent cgroup of all pods; default "/skiff"
	ProcFS     string        // where proc is mounted; default "/proc"
	Interval   time.Duration // time between samples; default 10s
	// Pods lists the pods running now and their running containers. It is
	// called once per sample, from Run's goroutine.
	Pods func(ctx context.Context) ([]Pod, error)
	// Clock times samples and ticks Run; default the real clock.
	Clock clock.WithTicker
}

// Collector samples the node's, pods' and containers' cgroups every
// Interval and keeps the last two samples, from which Summary computes
// usage rates. Summary is safe to call concurrently with Run and with
// itself.
type Collector struct {
	cfg       Config
	hierarchy hierarchy

	mu        sync.Mutex // guards prev and cur, which are never changed once stored
	prev, cur *sample
}

// New returns a Collector for cfg with defaults filled in. It checks the
// cgroup version once, here (see detect); it reads nothing else until Run.
func New(cfg Config) *Collector {
	if cfg.CgroupFS == "" {
		cfg.CgroupFS = "/sys/fs/cgroup"
	}
	if cfg.CgroupRoot == "" {
		cfg.CgroupRoot = "/skiff"
	}
	if cfg.ProcFS == "" {
		cfg.ProcFS = "/proc"
	}
	if cfg.Interval <= 0 {
		cfg.Interval = 10 * time.Second
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	return &Collector{cfg: cfg, hierarchy: detect(cfg.CgroupFS)}
}

// Run samples at once and then every Interval until ctx ends. A failed
// sample is logged and leaves the previous ones in place.
func (c *Collector) Run(ctx context.Context) {
	ticker := c.cfg.Clock.NewTicker(c.cfg.Interval)
	defer ticker.Stop()
	for {
		if err := c.sample(ctx); err != nil && ctx.Err() == nil {
			slog.Warn("sample stats", "node", c.cfg.NodeName, "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
		}
	}
}

// Summary is the stats summary of the last sample, with CPU rates measured
// since the one before. Before the first sample it holds only the node's
// name. The result is the caller's own.
func (c *Collector) Summary() *v1alpha1.Summary {
	c.mu.Lock()
	prev, cur := c.prev, c.cur
	c.mu.Unlock()
	return summarize(c.cfg.NodeName, c.cfg.CgroupRoot, prev, cur)
}

// sample takes a reading (see take) and makes it the latest sample. Only
// a failure to list pods discards it.
func (c *Collector) sample(ctx context.Context) error {
	s, err := c.take(ctx)
	if s == nil {
		return err
	}
	c.mu.Lock()
	c.prev, c.cur = c.cur, s
	c.mu.Unlock()
	return err
}

// Live is the stats summary of a reading taken now, with CPU rates since
// the last sample; it is not stored. Pods and containers that could not be
// read are left out.
func (c *Collector) Live(ctx context.Context) (*v1alpha1.Summary, error) {
	s, err := c.take(ctx)
	if s == nil {
		return nil, err
	}
	c.mu.Lock()
	prev := c.cur
	c.mu.Unlock()
	return summarize(c.cfg.NodeName, c.cfg.CgroupRoot, prev, s), nil
}

// take reads the node and the cgroups of the pods running now. A pod or
// container whose cgroup is gone (it just exited) is left out; one that
// cannot be read for another reason is left out too and its error
// returned, joined with the others, with the reading. A failure to list
// pods returns no reading.
func (c *Collector) take(ctx context.Context) (*sample, error) {
	pods, err := c.cfg.Pods(ctx)
	if err != nil {
		return nil, fmt.Errorf("list pods: %w", err)
	}
	s := &sample{pods: pods, cgroups: map[string]usage{}}
	var errs []error
	if node, boot, err := readNode(c.cfg.ProcFS, c.cfg.Clock); err != nil {
		errs = append(errs, fmt.Errorf("node: %w", err))
	} else {
		s.node, s.boot = &node, boot
	}
	for _, pod := range pods {
		if err := c.readPod(s, pod); err != nil {
			errs = append(errs, fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, err))
		}
	}
	return s, errors.Join(errs...)
}

// readPod adds the pod's cgroup and its containers' to s. A container is
// read only if its pod's cgroup, their parent, could be.
func (c *Collector) readPod(s *sample, pod Pod) error {
	path := cri.PodCgroup(c.cfg.CgroupRoot, pod.UID)
	if err := c.readCgroup(s, path); err != nil {
		return err
	}
	if _, ok := s.cgroups[path]; !ok {
		return nil
	}
	var errs []error
	for _, ctr := range pod.Containers {
		if ctr.ID == "" {
			continue // not created: no cgroup of its own
		}
		if err := c.readCgroup(s, cri.ContainerCgroup(c.cfg.CgroupRoot, pod.UID, ctr.ID)); err != nil {
			errs = append(errs, fmt.Errorf("container %s: %w", ctr.Name, err))
		}
	}
	return errors.Join(errs...)
}

// readCgroup adds the cgroup at path to s, or nothing if it is gone.
func (c *Collector) readCgroup(s *sample, path string) error {
	u, err := c.hierarchy.read(path)
	if gone(err) {
		return nil
	}
	if err != nil {
		return err
	}
	u.time = c.cfg.Clock.Now()
	s.cgroups[path] = u
	return nil
}
