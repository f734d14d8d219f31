package e2e

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

// The workload benchmarks of issue 29 drive the built `skiff server`
// (without its agent) from this process as an outside client-go program
// would. The nodes are simulated: Ready Nodes with renewed Leases
// (createScaleNodes), and a fleet kubelet here that reports every bound
// pod Running and Ready — or, for a Job's pod, Succeeded — and finishes
// deletions. What is timed is the control plane: API server, scheduler
// and controllers in the server process.

// fleet plays the kubelet of every simulated node through one pod watch.
type fleet struct {
	client kubernetes.Interface
	wg     sync.WaitGroup
}

// runFleet starts the fleet until ctx ends; workers update pods in
// parallel, as many kubelets would.
func runFleet(ctx context.Context, tb testing.TB, client kubernetes.Interface) {
	f := &fleet{client: client}
	work := make(chan *corev1.Pod, 1024)
	lw := cache.NewListWatchFromClient(client.CoreV1().RESTClient(), "pods", "", fields.ParseSelectorOrDie("spec.nodeName!="))
	inf := cache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, cache.Indexers{})
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { work <- obj.(*corev1.Pod) },
		UpdateFunc: func(_, obj any) { work <- obj.(*corev1.Pod) },
	})
	if err != nil {
		tb.Fatal(err)
	}
	go inf.Run(ctx.Done())
	for range 16 {
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			for {
				select {
				case <-ctx.Done():
					return
				case p := <-work:
					f.handle(ctx, p)
				}
			}
		}()
	}
}

// handle moves a bound pod on: deleted for good once being deleted,
// Succeeded if a Job's, Running and Ready otherwise.
func (f *fleet) handle(ctx context.Context, p *corev1.Pod) {
	switch {
	case p.DeletionTimestamp != nil:
		_ = f.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
		return
	case p.Status.Phase != corev1.PodPending && p.Status.Phase != "":
		return
	}
	now := metav1.Now()
	next := p.DeepCopy()
	next.Status.StartTime, next.Status.PodIP = &now, "10.244.0.2"
	next.Status.PodIPs = []corev1.PodIP{{IP: next.Status.PodIP}}
	state := corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}
	next.Status.Phase = corev1.PodRunning
	if p.Labels[batchv1.JobNameLabel] != "" {
		next.Status.Phase = corev1.PodSucceeded
		state = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", StartedAt: now, FinishedAt: now}}
	}
	ready := corev1.ConditionFalse
	if next.Status.Phase == corev1.PodRunning {
		ready = corev1.ConditionTrue
	}
	for _, typ := range []corev1.PodConditionType{corev1.PodInitialized, corev1.PodReady, corev1.ContainersReady} {
		next.Status.Conditions = append(next.Status.Conditions, corev1.PodCondition{Type: typ, Status: ready, LastTransitionTime: now})
	}
	for _, c := range p.Spec.Containers {
		next.Status.ContainerStatuses = append(next.Status.ContainerStatuses, corev1.ContainerStatus{Name: c.Name, Image: c.Image,
			Ready: ready == corev1.ConditionTrue, State: state})
	}
	_, _ = f.client.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, next, metav1.UpdateOptions{})
}

// simCluster is a server with n simulated nodes and the fleet kubelet.
func simCluster(b *testing.B, nodes int) (*cluster, kubernetes.Interface, context.Context) {
	c := startCluster(b)
	client := protobufClient(b, c.kubeconfig)
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	leases := createScaleNodes(ctx, b, client, scaleShape{nodes: nodes, creators: 16})
	go leases.renew(ctx, b)
	until(b, "nodes settled", 5*time.Minute, func() bool { return nodesSettled(ctx, b, client, nodes) })
	runFleet(ctx, b, client)
	return c, client, ctx
}

// until polls cond every 100 ms for at most limit and returns how long it
// took.
func until(b testing.TB, what string, limit time.Duration, cond func() bool) time.Duration {
	start := time.Now()
	for !cond() {
		if time.Since(start) > limit {
			b.Fatalf("%s: not within %s", what, limit)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return time.Since(start)
}

// BenchmarkDaemonSet100Nodes: a DaemonSet rolled out to 100 simulated
// nodes (created until every node's pod is Ready), then a rolling update
// at maxUnavailable 10% (until every pod is updated and Ready).
func BenchmarkDaemonSet100Nodes(b *testing.B) {
	_, client, ctx := simCluster(b, 100)
	for i := 0; b.Loop(); i++ {
		dss := client.AppsV1().DaemonSets("default")
		ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("ds-%d", i)}, Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"ds": fmt.Sprint(i)}},
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType, RollingUpdate: &appsv1.RollingUpdateDaemonSet{
				MaxUnavailable: ptr.To(intstr.FromString("10%"))}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"ds": fmt.Sprint(i)}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: e2eImage, Env: []corev1.EnvVar{{Name: "V", Value: "1"}}}}}},
		}}
		if _, err := dss.Create(ctx, ds, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		settled := func(gen int64) func() bool {
			return func() bool {
				cur, err := dss.Get(ctx, ds.Name, metav1.GetOptions{})
				st := cur.Status
				return err == nil && st.ObservedGeneration >= gen && st.DesiredNumberScheduled == 100 && st.NumberReady == 100 &&
					st.UpdatedNumberScheduled == 100 && st.NumberUnavailable == 0
			}
		}
		rollout := until(b, "rollout", 5*time.Minute, settled(1))
		patch := []byte(`{"spec":{"template":{"spec":{"containers":[{"name":"c","env":[{"name":"V","value":"2"}]}]}}}}`)
		if _, err := dss.Patch(ctx, ds.Name, "application/strategic-merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
			b.Fatal(err)
		}
		update := until(b, "rolling update", 10*time.Minute, settled(2))
		b.ReportMetric(rollout.Seconds(), "rollout-s")
		b.ReportMetric(update.Seconds(), "rolling-update-s")
	}
}

// BenchmarkJobs1000: 1,000 Jobs of one pod each, created by 16 clients,
// until every Job is Complete. It reports Jobs completed per second and
// the CPU time the server process (API server, etcd, scheduler and
// controllers together) spent meanwhile.
func BenchmarkJobs1000(b *testing.B) {
	c, client, ctx := simCluster(b, 20)
	for i := 0; b.Loop(); i++ {
		ns := fmt.Sprintf("jobs-%d", i)
		if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		cpu0 := cpuSeconds(b, c.cmd.Process.Pid)
		parallel(b, 1000, 16, func(j int) error {
			job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("job-%d", j)}, Spec: batchv1.JobSpec{
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{{Name: "c", Image: e2eImage}}}}}}
			_, err := client.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{})
			return err
		})
		took := until(b, "1000 jobs complete", 10*time.Minute, func() bool {
			list, err := client.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{})
			done := 0
			for _, j := range list.Items {
				done += int(j.Status.Succeeded)
			}
			return err == nil && done == 1000
		})
		b.ReportMetric(1000/took.Seconds(), "jobs/s")
		b.ReportMetric(cpuSeconds(b, c.cmd.Process.Pid)-cpu0, "server-cpu-s")
	}
}

// cpuSeconds is the user and system CPU time process pid has used.
func cpuSeconds(b *testing.B, pid int) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+2:]))
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	return (utime + stime) / 100 // clock ticks: USER_HZ is 100 on Linux
}

// BenchmarkStatefulSet10: a StatefulSet of 10 replicas (OrderedReady) on
// the server's own agent, real containers (busybox, image present), from
// the Create until the tenth pod is Ready.
func BenchmarkStatefulSet10(b *testing.B) {
	n := startNodeCluster(b)
	client := protobufClient(b, n.kubeconfig)
	ctx := context.Background()
	for i := 0; b.Loop(); i++ {
		sets := client.AppsV1().StatefulSets("default")
		ss := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("ss-%d", i)}, Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To[int32](10), ServiceName: "ss",
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"ss": fmt.Sprint(i)}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"ss": fmt.Sprint(i)}},
				Spec: corev1.PodSpec{TerminationGracePeriodSeconds: ptr.To[int64](1), Containers: []corev1.Container{{Name: "c", Image: e2eImage,
					ImagePullPolicy: corev1.PullNever, Command: []string{"sleep", "3600"}}}}}}}
		if _, err := sets.Create(ctx, ss, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		took := until(b, "10 replicas ready", 5*time.Minute, func() bool {
			cur, err := sets.Get(ctx, ss.Name, metav1.GetOptions{})
			return err == nil && cur.Status.ReadyReplicas == 10
		})
		b.ReportMetric(took.Seconds(), "ready-s")
		b.StopTimer()
		if err := sets.Delete(ctx, ss.Name, metav1.DeleteOptions{}); err != nil {
			b.Fatal(err)
		}
		n.deletePods()
		b.StartTimer()
	}
}

// BenchmarkControllersRSS10kPods: 10,000 pods across the workload kinds
// on 100 simulated nodes — 30 Deployments and 20 ReplicaSets of 100, 10
// StatefulSets of 200 (Parallel), 10 DaemonSets and 20 Jobs of 100
// completions (their pods Succeeded) — then the server's memory: its RSS
// and the anonymous part (heap and stacks). The controllers run in the
// server process with the API server and etcd; the figure is the whole
// process's.
func BenchmarkControllersRSS10kPods(b *testing.B) {
	c, client, ctx := simCluster(b, 100)
	for b.Loop() {
		template := func(kind string, i int) corev1.PodTemplateSpec {
			return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{kind: fmt.Sprint(i)}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: e2eImage}}}}
		}
		selector := func(kind string, i int) *metav1.LabelSelector {
			return &metav1.LabelSelector{MatchLabels: map[string]string{kind: fmt.Sprint(i)}}
		}
		apps, batch := client.AppsV1(), client.BatchV1()
		parallel(b, 90, 8, func(i int) error {
			var err error
			switch meta := (metav1.ObjectMeta{Name: fmt.Sprintf("w-%d", i)}); {
			case i < 30:
				_, err = apps.Deployments("default").Create(ctx, &appsv1.Deployment{ObjectMeta: meta, Spec: appsv1.DeploymentSpec{
					Replicas: ptr.To[int32](100), Selector: selector("d", i), Template: template("d", i)}}, metav1.CreateOptions{})
			case i < 50:
				_, err = apps.ReplicaSets("default").Create(ctx, &appsv1.ReplicaSet{ObjectMeta: meta, Spec: appsv1.ReplicaSetSpec{
					Replicas: ptr.To[int32](100), Selector: selector("rs", i), Template: template("rs", i)}}, metav1.CreateOptions{})
			case i < 60:
				_, err = apps.StatefulSets("default").Create(ctx, &appsv1.StatefulSet{ObjectMeta: meta, Spec: appsv1.StatefulSetSpec{
					Replicas: ptr.To[int32](200), Selector: selector("ss", i), Template: template("ss", i),
					PodManagementPolicy: appsv1.ParallelPodManagement}}, metav1.CreateOptions{})
			case i < 70:
				_, err = apps.DaemonSets("default").Create(ctx, &appsv1.DaemonSet{ObjectMeta: meta, Spec: appsv1.DaemonSetSpec{
					Selector: selector("ds", i), Template: template("ds", i)}}, metav1.CreateOptions{})
			default:
				tmpl := template("job", i)
				tmpl.Spec.RestartPolicy = corev1.RestartPolicyNever
				_, err = batch.Jobs("default").Create(ctx, &batchv1.Job{ObjectMeta: meta, Spec: batchv1.JobSpec{
					Completions: ptr.To[int32](100), Parallelism: ptr.To[int32](100), Template: tmpl}}, metav1.CreateOptions{})
			}
			return err
		})
		took := until(b, "10,000 pods running or succeeded", 20*time.Minute, func() bool {
			list, err := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{ResourceVersion: "0"})
			done := 0
			for _, p := range list.Items {
				if p.Status.Phase == corev1.PodRunning || p.Status.Phase == corev1.PodSucceeded {
					done++
				}
			}
			return err == nil && done >= 10000
		})
		time.Sleep(30 * time.Second) // the controllers' status writes settle
		jobs, err := batch.Jobs("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			b.Fatal(err)
		}
		for _, j := range jobs.Items {
			if j.Status.Succeeded != 100 {
				b.Errorf("job %s: %d succeeded, want its 100 completions", j.Name, j.Status.Succeeded)
			}
		}
		b.ReportMetric(took.Seconds(), "settle-s")
		b.ReportMetric(rssMB(b, c.cmd.Process.Pid), "server-rss-MB")
		b.ReportMetric(statusMB(b, c.cmd.Process.Pid, "RssAnon:"), "server-anon-MB")
	}
}
