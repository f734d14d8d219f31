// Package metrics serves a skiff process's Prometheus metrics as one
// exposition. skiff's components register in component-base's legacy
// registry, as Kubernetes' components do: the API server, the scheduler,
// the controllers' workqueues, leader election and client-go (through
// component-base's providers, installed by importing this package), the
// agent's kubelet series, the proxy and DNS. The embedded etcd registers
// its own collectors in Prometheus's default registry; Handler gathers
// both.
package metrics

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	// Installed for their init: client-go's workqueue, leader election
	// and REST client metrics go to the legacy registry.
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/clientgo/leaderelection"
	_ "k8s.io/component-base/metrics/prometheus/workqueue"
)

// Register adds a component's metrics to the legacy registry once per
// process, however many servers or agents the process runs (tests run
// several); a second call with the same metrics does nothing.
func Register(ms ...metrics.Registerable) {
	registered.Lock()
	defer registered.Unlock()
	for _, m := range ms {
		if registered.names[m.FQName()] {
			continue
		}
		legacyregistry.MustRegister(m)
		registered.names[m.FQName()] = true
	}
}

var registered = struct {
	sync.Mutex
	names map[string]bool
}{names: map[string]bool{}}

// Gatherer is every metric of the process: the legacy registry's, then
// those of Prometheus's default registry that the legacy registry does not
// have (its Go and process collectors, and collectors registered in both,
// as component-base's custom collectors are).
func Gatherer() prometheus.Gatherer {
	return prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		families, err := legacyregistry.DefaultGatherer.Gather()
		seen := make(map[string]bool, len(families))
		for _, mf := range families {
			seen[mf.GetName()] = true
		}
		more, moreErr := prometheus.DefaultGatherer.Gather()
		for _, mf := range more {
			if !seen[mf.GetName()] {
				families = append(families, mf)
			}
		}
		slices.SortFunc(families, func(a, b *dto.MetricFamily) int { return strings.Compare(a.GetName(), b.GetName()) })
		return families, errors.Join(err, moreErr)
	})
}

// Handler serves Gatherer's metrics in the Prometheus text format. A
// metric that cannot be gathered is logged and left out; the rest are
// served.
func Handler() http.Handler {
	return promhttp.HandlerFor(Gatherer(), promhttp.HandlerOpts{
		ErrorLog:      errorLog{},
		ErrorHandling: promhttp.ContinueOnError,
	})
}

// errorLog logs each distinct gathering error once: the same one comes
// back at every scrape.
type errorLog struct{}

var logged sync.Map

func (errorLog) Println(v ...any) {
	msg := fmt.Sprint(v...)
	if _, seen := logged.LoadOrStore(msg, true); !seen {
		slog.Warn("gathering metrics", "err", msg)
	}
}
