// Package logging makes skiff's one log stream: every line, whoever wrote
// it (skiff's own code through log/slog, the Kubernetes libraries through
// klog, the embedded etcd through zap, gRPC, containerd's client through
// logrus), comes out of one slog handler in one format, text or JSON, with
// a component attribute saying which part of skiff it is from.
package logging

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/sirupsen/logrus"
	"google.golang.org/grpc/grpclog"
	"k8s.io/klog/v2"
)

// Formats are the values of --log-format.
const (
	FormatText = "text"
	FormatJSON = "json"
)

// Options say how much is logged and how.
type Options struct {
	Format string     // FormatText (default) or FormatJSON
	Level  slog.Level // the least severe line written; default Info
	// V is klog's verbosity (-v): V(n) lines of the Kubernetes libraries
	// are written for n ≤ V, at slog level -n (so -v=4 also writes skiff's
	// DEBUG lines).
	V int
}

// Setup routes every logger of the process into one handler writing to w
// and makes it slog's default.
func Setup(w io.Writer, o Options) error {
	h, err := NewHandler(w, o)
	if err != nil {
		return err
	}
	logger := slog.New(h)
	slog.SetDefault(logger)
	klog.SetSlogLogger(logger)
	if err := klogVerbosity(o.V); err != nil {
		return err
	}
	grpclog.SetLoggerV2(grpcLogger{logger.With("component", "grpc")})
	logrus.SetOutput(io.Discard)
	if h.Enabled(context.Background(), slog.LevelDebug) {
		logrus.SetLevel(logrus.DebugLevel)
	}
	logrus.StandardLogger().ReplaceHooks(logrus.LevelHooks{})
	logrus.AddHook(logrusHook{logger.With("component", "containerd-client")})
	return nil
}

// NewHandler is the handler Setup installs: slog's text or JSON handler
// on w, each record given its component.
func NewHandler(w io.Writer, o Options) (slog.Handler, error) {
	level := min(o.Level, slog.Level(-o.V))
	opts := &slog.HandlerOptions{Level: level}
	var h slog.Handler
	switch o.Format {
	case "", FormatText:
		h = slog.NewTextHandler(w, opts)
	case FormatJSON:
		h = slog.NewJSONHandler(w, opts)
	default:
		return nil, fmt.Errorf("--log-format: %q is not %s or %s", o.Format, FormatText, FormatJSON)
	}
	return &componentHandler{next: h}, nil
}

// klogVerbosity sets klog's -v, and keeps klog from writing anything itself.
func klogVerbosity(v int) error {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	for name, value := range map[string]string{"v": strconv.Itoa(v), "logtostderr": "false", "alsologtostderr": "false",
		"stderrthreshold": "FATAL"} {
		if err := fs.Set(name, value); err != nil {
			return fmt.Errorf("klog -%s: %w", name, err)
		}
	}
	return nil
}

// componentHandler adds "component" to records that have none: the part
// of skiff the code that logged belongs to, from the record's PC.
type componentHandler struct {
	next slog.Handler
	has  bool // a component attribute was added with WithAttrs
}

func (h *componentHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.next.Enabled(ctx, l)
}

func (h *componentHandler) Handle(ctx context.Context, r slog.Record) error {
	if !h.has && !hasComponent(r) {
		r.AddAttrs(slog.String("component", componentOf(r.PC)))
	}
	return h.next.Handle(ctx, r)
}

func (h *componentHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	has := h.has
	for _, a := range attrs {
		has = has || a.Key == "component"
	}
	return &componentHandler{next: h.next.WithAttrs(attrs), has: has}
}

func (h *componentHandler) WithGroup(name string) slog.Handler {
	return &componentHandler{next: h.next.WithGroup(name), has: h.has}
}

func hasComponent(r slog.Record) bool {
	found := false
	r.Attrs(func(a slog.Attr) bool {
		found = a.Key == "component"
		return !found
	})
	return found
}

// components maps a PC to its component, computed once per PC.
var components sync.Map

const module = "github.com/skiff-lab/skiff/"

// componentOf names the component of the function at pc: skiff's package
// (controllers by name), else the library's project.
func componentOf(pc uintptr) string {
	if c, ok := components.Load(pc); ok {
		return c.(string)
	}
	name := ""
	if f := runtime.FuncForPC(pc); f != nil {
		name = f.Name()
	}
	c := component(packageOf(name))
	components.Store(pc, c)
	return c
}

// packageOf is the import path of a function's full name
// ("github.com/x/y/pkg.(*T).Method" → "github.com/x/y/pkg").
func packageOf(fn string) string {
	slash := strings.LastIndex(fn, "/")
	if dot := strings.Index(fn[slash+1:], "."); dot >= 0 {
		return fn[:slash+1+dot]
	}
	return fn
}

func component(pkg string) string {
	rel, ours := strings.CutPrefix(pkg, module)
	if !ours {
		switch {
		case strings.HasPrefix(pkg, "go.etcd.io/"):
			return "etcd"
		case strings.HasPrefix(pkg, "k8s.io/client-go/"):
			return "client-go"
		case strings.HasPrefix(pkg, "k8s.io/"), strings.HasPrefix(pkg, "sigs.k8s.io/"):
			return "kubernetes"
		case pkg == "":
			return "unknown"
		}
		return pkg
	}
	parts := strings.Split(rel, "/")
	switch {
	case len(parts) >= 3 && parts[0] == "controlplane" && parts[1] == "controllers":
		return "controller/" + parts[2]
	case len(parts) >= 2 && parts[0] == "controlplane" && (parts[1] == "apiserver" || parts[1] == "scheduler"):
		return parts[1]
	case parts[0] == "controlplane":
		return "server"
	case parts[0] == "cmd":
		return "skiff"
	}
	return parts[0]
}
