package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// haServers starts three servers on 127.0.0.1, .2 and .3 that form one
// etcd cluster: the first with --cluster-init (and firstArgs), the others
// joined with its server token.
func haServers(tb testing.TB, firstArgs ...string) []*cluster {
	tb.Helper()
	first := startCluster(tb, append([]string{"--cluster-init", "--identity", "s1"}, firstArgs...)...)
	token := readToken(tb, first.dataDir, "server-token")
	servers := []*cluster{first}
	for i, ip := range []string{"127.0.0.2", "127.0.0.3"} {
		servers = append(servers, startCluster(tb, "--bind-address", ip, "--identity", fmt.Sprintf("s%d", i+2),
			"--server", first.server(), "--token", token))
	}
	return servers
}

// BenchmarkHAPodCreate: three servers; 16 clients create b.N pods
// through the first server only (one), or each create through the next
// server in turn (all). Latency percentiles and the rate.
func BenchmarkHAPodCreate(b *testing.B) {
	servers := haServers(b)
	var clients []kubernetes.Interface
	for _, s := range servers {
		clients = append(clients, protobufClient(b, s.kubeconfig))
	}
	b.Run("one", func(b *testing.B) { benchmarkCreateAs(b, clients[:1], clients[0], 16) })
	b.Run("all", func(b *testing.B) { benchmarkCreateAs(b, clients, clients[0], 16) })
}

// BenchmarkHAFailover: three servers and a simulated node; the server that
// holds the scheduler's and controllers' lease is killed with SIGKILL.
// api-ms: until a client that tries the survivors in turn has a write
// accepted. lease-ms: until a survivor holds the lease. workload-ms: until
// a Deployment created right after the kill has its pod bound to the node
// (the controllers and the scheduler work again on a survivor). Each
// iteration starts its own servers.
func BenchmarkHAFailover(b *testing.B) {
	var api, lease, workload time.Duration
	for b.Loop() {
		b.StopTimer()
		servers := haServers(b)
		leader, survivors := splitLeader(b, servers)
		startSimNode(b, survivors[0].client(), "sim-failover")
		b.StartTimer()
		leader.kill9()
		start := time.Now()
		client := retryingClient(survivors)
		until(b, "a write through a survivor", time.Minute, func() bool {
			return client(func(cs kubernetes.Interface) error {
				_, err := cs.CoreV1().ConfigMaps("default").Create(context.Background(),
					&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "after-"}}, metav1.CreateOptions{})
				return err
			}) == nil
		})
		api += time.Since(start)
		until(b, "the Deployment accepted", time.Minute, func() bool {
			return client(func(cs kubernetes.Interface) error {
				_, err := cs.AppsV1().Deployments("default").Create(context.Background(), failoverDeployment(), metav1.CreateOptions{})
				return err
			}) == nil
		})
		until(b, "a survivor leading", time.Minute, func() bool {
			return client(func(cs kubernetes.Interface) error {
				if h := leaseHolder(cs); h == "" || h == flagValue(leader.args, "--identity") {
					return fmt.Errorf("not yet")
				}
				return nil
			}) == nil
		})
		lease += time.Since(start)
		until(b, "its pod bound", 2*time.Minute, func() bool {
			return client(func(cs kubernetes.Interface) error {
				pods, err := cs.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{LabelSelector: "app=failover"})
				if err == nil && (len(pods.Items) == 0 || pods.Items[0].Spec.NodeName == "") {
					err = fmt.Errorf("not bound yet")
				}
				return err
			}) == nil
		})
		workload += time.Since(start)
	}
	b.ReportMetric(float64(api.Milliseconds())/float64(b.N), "api-ms")
	b.ReportMetric(float64(lease.Milliseconds())/float64(b.N), "lease-ms")
	b.ReportMetric(float64(workload.Milliseconds())/float64(b.N), "workload-ms")
}

// splitLeader finds the server whose identity holds the control plane's
// lease, and the others.
func splitLeader(tb testing.TB, servers []*cluster) (*cluster, []*cluster) {
	tb.Helper()
	var holder string
	until(tb, "a leader", time.Minute, func() bool {
		holder = leaseHolder(servers[0].client())
		return holder != ""
	})
	for i, s := range servers {
		if flagValue(s.args, "--identity") == holder {
			return s, append(append([]*cluster(nil), servers[:i]...), servers[i+1:]...)
		}
	}
	tb.Fatalf("lease holder %q is none of the servers", holder)
	return nil, nil
}

// leaseHolder is the identity that holds the control plane's lease ("" if
// none or unknown).
func leaseHolder(cs kubernetes.Interface) string {
	lease, err := cs.CoordinationV1().Leases("kube-system").Get(context.Background(), "skiff-controlplane", metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil {
		return ""
	}
	return *lease.Spec.HolderIdentity
}

// retryingClient runs a request through the servers in turn, each with a
// short timeout, until one answers it (as a client that knows every
// server): the last error when none does.
func retryingClient(servers []*cluster) func(func(kubernetes.Interface) error) error {
	var clients []kubernetes.Interface
	for _, s := range servers {
		cfg := s.restConfig()
		cfg.Timeout = time.Second
		clients = append(clients, kubernetes.NewForConfigOrDie(cfg))
	}
	next := 0
	return func(req func(kubernetes.Interface) error) error {
		var err error
		for range clients {
			if err = req(clients[next]); err == nil {
				return nil
			}
			next = (next + 1) % len(clients)
		}
		return err
	}
}

func failoverDeployment() *appsv1.Deployment {
	labels := map[string]string{"app": "failover"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "failover"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptrTo(int32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox:1.36"}}}},
		},
	}
}

// BenchmarkEtcdSnapshot10kPods: one server holding 10,000 pods; `skiff
// etcd snapshot save` (save-s, and the file's size), then `skiff etcd
// snapshot restore` into a fresh data dir (restore-s), and the restored
// server started until it lists all 10,000 (restart-s).
func BenchmarkEtcdSnapshot10kPods(b *testing.B) {
	const pods = 10000
	s := startCluster(b)
	createPods(b, []kubernetes.Interface{protobufClient(b, s.kubeconfig)}, 16, pods)
	file := filepath.Join(b.TempDir(), "snap.db")
	var save, restore, restart time.Duration
	for b.Loop() {
		os.Remove(file)
		t0 := time.Now()
		runSkiff(b, "etcd", "snapshot", "save", file, "--data-dir", s.dataDir)
		save += time.Since(t0)
		dir := b.TempDir()
		t0 = time.Now()
		runSkiff(b, "etcd", "snapshot", "restore", file, "--data-dir", dir)
		restore += time.Since(t0)
		t0 = time.Now()
		restored := launch(b, dir, "--disable-agent")
		until(b, "the restored pods", 5*time.Minute, func() bool {
			list, err := protobufClient(b, restored.kubeconfig).CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{})
			return err == nil && len(list.Items) >= pods
		})
		restart += time.Since(t0)
		restored.stop()
	}
	fi, err := os.Stat(file)
	if err != nil {
		b.Fatal(err)
	}
	n := float64(b.N)
	b.ReportMetric(save.Seconds()/n, "save-s")
	b.ReportMetric(restore.Seconds()/n, "restore-s")
	b.ReportMetric(restart.Seconds()/n, "restart-s")
	b.ReportMetric(float64(fi.Size())/(1<<20), "snapshot-MB")
}
