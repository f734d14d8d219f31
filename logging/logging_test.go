package logging

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
	"go.uber.org/zap"
	"google.golang.org/grpc/grpclog"
	"k8s.io/klog/v2"
)

// TestOneStream: slog, klog (with its verbosity), etcd's zap, gRPC and
// logrus lines all come out as JSON lines of one handler, each with its
// component.
func TestOneStream(t *testing.T) {
	var out bytes.Buffer
	if err := Setup(&out, Options{Format: FormatJSON, V: 2}); err != nil {
		t.Fatal(err)
	}
	slog.Info("from slog", "k", "v")
	klog.InfoS("from klog", "pod", "p1")
	klog.V(2).InfoS("klog at 2")
	klog.V(3).InfoS("klog at 3")
	Zap(zap.NewAtomicLevelAt(zap.InfoLevel)).Info("from etcd", zap.String("member", "m1"))
	grpclog.Warning("from grpc")
	logrus.WithField("id", "c1").Warn("from containerd")
	klog.Flush()

	got := map[string]map[string]any{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("not a JSON line: %q: %v", line, err)
		}
		got[rec["msg"].(string)] = rec
	}
	for msg, want := range map[string]map[string]any{
		"from slog":       {"component": "logging", "k": "v", "level": "INFO"},
		"from klog":       {"component": "logging", "pod": "p1"},
		"klog at 2":       {"level": "DEBUG+2"},
		"from etcd":       {"component": "etcd", "member": "m1", "level": "INFO"},
		"from grpc":       {"component": "grpc", "level": "WARN"},
		"from containerd": {"component": "containerd-client", "id": "c1", "level": "WARN"},
	} {
		rec, ok := got[msg]
		if !ok {
			t.Errorf("no line %q in:\n%s", msg, out.String())
			continue
		}
		for k, v := range want {
			if rec[k] != v {
				t.Errorf("%q: %s = %v, want %v", msg, k, rec[k], v)
			}
		}
	}
	if _, ok := got["klog at 3"]; ok {
		t.Error("a klog V(3) line was written at -v=2")
	}
}

func TestTextAndBadFormat(t *testing.T) {
	var out bytes.Buffer
	h, err := NewHandler(&out, Options{})
	if err != nil {
		t.Fatal(err)
	}
	slog.New(h).Info("hello", "a", 1)
	slog.New(h).Debug("hidden")
	if line := out.String(); !strings.Contains(line, `level=INFO msg=hello a=1 component=logging`) || strings.Contains(line, "hidden") {
		t.Errorf("text line: %q", line)
	}
	if _, err := NewHandler(&out, Options{Format: "xml"}); err == nil || !strings.Contains(err.Error(), "--log-format") {
		t.Errorf("format xml: %v", err)
	}
}

func TestComponent(t *testing.T) {
	for pkg, want := range map[string]string{
		module + "controlplane/controllers/job":           "controller/job",
		module + "controlplane/apiserver/registry":        "apiserver",
		module + "controlplane/scheduler/plugins":         "scheduler",
		module + "controlplane/store":                     "server",
		module + "agent/node":                             "agent",
		module + "proxy":                                  "proxy",
		module + "cmd/skiff":                              "skiff",
		"go.etcd.io/etcd/server/v3/etcdserver":            "etcd",
		"k8s.io/client-go/tools/leaderelection":           "client-go",
		"k8s.io/apiserver/pkg/server/dynamiccertificates": "kubernetes",
	} {
		if got := component(pkg); got != want {
			t.Errorf("component(%s) = %s, want %s", pkg, got, want)
		}
	}
	if got := packageOf(module + "agent.(*Agent).syncPod.func1"); got != module+"agent" {
		t.Errorf("packageOf: %s", got)
	}
}
