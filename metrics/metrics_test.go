package metrics

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// TestHandler: the legacy registry's metrics (a component's, registered
// twice as a second server in the process would; a workqueue's, through
// the provider this package installs), the default registry's (as etcd's)
// and a collector registered in both (as component-base's custom ones)
// are served, each once, with no gathering error.
func TestHandler(t *testing.T) {
	counter := metrics.NewCounter(&metrics.CounterOpts{Name: "skiff_test_total", Help: "A test counter."})
	Register(counter)
	Register(counter)
	counter.Inc()
	etcdLike := prometheus.NewGauge(prometheus.GaugeOpts{Name: "skiff_test_etcd_like", Help: "As etcd registers."})
	prometheus.MustRegister(etcdLike)
	both := prometheus.NewGauge(prometheus.GaugeOpts{Name: "skiff_test_both", Help: "In both registries."})
	legacyregistry.RawMustRegister(both)
	prometheus.MustRegister(both)
	q := workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[string]{Name: "skiff_test_queue"})
	defer q.ShutDown()
	q.Add("key")

	if _, err := Gatherer().Gather(); err != nil {
		t.Fatalf("gather: %v", err)
	}
	rec := httptest.NewRecorder()
	Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body := rec.Body.String()
	for _, want := range []string{"skiff_test_total 1\n", "skiff_test_etcd_like 0\n", "skiff_test_both 0\n",
		`workqueue_adds_total{name="skiff_test_queue"} 1` + "\n", "go_goroutines ", "process_start_time_seconds "} {
		if n := strings.Count(body, "\n"+want); n != 1 {
			t.Errorf("%q served %d times", strings.TrimSpace(want), n)
		}
	}
}
