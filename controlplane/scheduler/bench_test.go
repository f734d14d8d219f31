package scheduler_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/skiff-lab/skiff/controlplane"
	"github.com/skiff-lab/skiff/controlplane/component"
	"github.com/skiff-lab/skiff/controlplane/scheduler"
	"github.com/skiff-lab/skiff/controlplane/servertest"
)

// parallel runs fn(i) for i in [0, n) on 16 workers.
func parallel(b *testing.B, n int, fn func(i int) error) {
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 16 {
				if err := fn(i); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// BenchmarkScheduling5000Nodes10000Pods has the shape of kube-scheduler's
// scheduler_perf SchedulingBasic/5000Nodes_10000Pods: 10,000 pending pods
// (100m cpu, 500Mi memory) onto 5000 nodes (4 cpu, 32Gi, 110 pods), against
// the real API server and embedded etcd. It reports pods bound per second,
// counted from the scheduler's start to the last binding, and the heap the
// scheduler adds.
func BenchmarkScheduling5000Nodes10000Pods(b *testing.B) {
	const nodes, pods = 5000, 10000
	for range b.N {
		s := servertest.StartWith(b, func(c *controlplane.Config) { c.DisableComponents = true })
		cfg := s.RESTConfig()
		cfg.QPS, cfg.Burst = -1, 0
		client := kubernetes.NewForConfigOrDie(cfg)
		ctx := context.Background()
		parallel(b, nodes, func(i int) error {
			n := node(fmt.Sprintf("node-%04d", i), "4", map[string]string{corev1.LabelHostname: fmt.Sprintf("node-%04d", i)})
			n.Status.Allocatable[corev1.ResourceMemory] = resource.MustParse("32Gi")
			status := n.Status
			created, err := client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
			if err != nil {
				return err
			}
			created.Status = status
			_, err = client.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{})
			return err
		})
		parallel(b, pods, func(i int) error {
			p := pod(fmt.Sprintf("pod-%05d", i), "100m")
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory] = resource.MustParse("500Mi")
			_, err := client.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{})
			return err
		})
		rate, heapMB := runScheduler(b, client, pods)
		b.ReportMetric(rate, "pods/s")
		b.ReportMetric(heapMB, "scheduler-heap-MB")
		s.Stop()
	}
}

func runScheduler(b *testing.B, client kubernetes.Interface, want int64) (rate, heapMB float64) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	defer broadcaster.Shutdown()
	cc := component.Context{Client: client, Informers: informers.NewSharedInformerFactory(client, 0),
		Recorder: func(c string) record.EventRecorder {
			return broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: c})
		}}
	built, err := scheduler.New(scheduler.Config{})(cc)
	if err != nil {
		b.Fatal(err)
	}
	sched := built.(*scheduler.Scheduler)
	start := time.Now()
	go func() {
		_ = component.Run(ctx, cc, map[string]component.Constructor{"scheduler": func(component.Context) (component.Component, error) { return sched, nil }})
	}()
	for sched.Bound() < want {
		if time.Since(start) > 5*time.Minute {
			b.Fatalf("bound %d of %d in 5 minutes", sched.Bound(), want)
		}
		time.Sleep(10 * time.Millisecond)
	}
	elapsed := time.Since(start)
	runtime.GC()
	runtime.ReadMemStats(&after)
	return float64(want) / elapsed.Seconds(), float64(int64(after.HeapInuse)-int64(before.HeapInuse)) / (1 << 20)
}
