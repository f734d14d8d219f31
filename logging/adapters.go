package logging

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/sirupsen/logrus"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Zap is a zap logger (the embedded etcd's) that writes into slog's
// default logger as component etcd, at level and above.
func Zap(level zap.AtomicLevel) *zap.Logger {
	return zap.New(&zapCore{LevelEnabler: level, logger: slog.Default().With("component", "etcd")})
}

// zapCore is a zapcore.Core over a slog logger.
type zapCore struct {
	zapcore.LevelEnabler
	logger *slog.Logger
}

func (c *zapCore) With(fields []zapcore.Field) zapcore.Core {
	return &zapCore{LevelEnabler: c.LevelEnabler, logger: c.logger.With(zapAttrs(fields)...)}
}

func (c *zapCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c *zapCore) Write(e zapcore.Entry, fields []zapcore.Field) error {
	c.logger.Log(context.Background(), zapLevel(e.Level), e.Message, zapAttrs(fields)...)
	return nil
}

func (c *zapCore) Sync() error { return nil }

func zapLevel(l zapcore.Level) slog.Level {
	switch {
	case l >= zapcore.ErrorLevel:
		return slog.LevelError
	case l == zapcore.WarnLevel:
		return slog.LevelWarn
	case l == zapcore.InfoLevel:
		return slog.LevelInfo
	}
	return slog.LevelDebug
}

// zapAttrs turns zap's fields into slog's key-value arguments.
func zapAttrs(fields []zapcore.Field) []any {
	enc := zapcore.NewMapObjectEncoder()
	for _, f := range fields {
		f.AddTo(enc)
	}
	out := make([]any, 0, 2*len(enc.Fields))
	for k, v := range enc.Fields {
		out = append(out, k, v)
	}
	return out
}

// grpcLogger is grpclog's LoggerV2 over slog; gRPC's info lines are
// debug lines here (it logs every connection state change).
type grpcLogger struct{ l *slog.Logger }

func (g grpcLogger) Info(args ...any)                    { g.l.Debug(fmt.Sprint(args...)) }
func (g grpcLogger) Infoln(args ...any)                  { g.l.Debug(fmt.Sprint(args...)) }
func (g grpcLogger) Infof(format string, args ...any)    { g.l.Debug(fmt.Sprintf(format, args...)) }
func (g grpcLogger) Warning(args ...any)                 { g.l.Warn(fmt.Sprint(args...)) }
func (g grpcLogger) Warningln(args ...any)               { g.l.Warn(fmt.Sprint(args...)) }
func (g grpcLogger) Warningf(format string, args ...any) { g.l.Warn(fmt.Sprintf(format, args...)) }
func (g grpcLogger) Error(args ...any)                   { g.l.Error(fmt.Sprint(args...)) }
func (g grpcLogger) Errorln(args ...any)                 { g.l.Error(fmt.Sprint(args...)) }
func (g grpcLogger) Errorf(format string, args ...any)   { g.l.Error(fmt.Sprintf(format, args...)) }
func (g grpcLogger) Fatal(args ...any)                   { g.l.Error(fmt.Sprint(args...)); os.Exit(1) }
func (g grpcLogger) Fatalln(args ...any)                 { g.l.Error(fmt.Sprint(args...)); os.Exit(1) }
func (g grpcLogger) Fatalf(format string, args ...any) {
	g.l.Error(fmt.Sprintf(format, args...))
	os.Exit(1)
}
func (g grpcLogger) V(l int) bool { return g.l.Enabled(context.Background(), slog.Level(-l)) }

// logrusHook writes logrus's entries (containerd's client logs through
// containerd/log, which is logrus) into slog.
type logrusHook struct{ l *slog.Logger }

func (h logrusHook) Levels() []logrus.Level { return logrus.AllLevels }

func (h logrusHook) Fire(e *logrus.Entry) error {
	level := slog.LevelDebug
	switch {
	case e.Level <= logrus.ErrorLevel:
		level = slog.LevelError
	case e.Level == logrus.WarnLevel:
		level = slog.LevelWarn
	case e.Level == logrus.InfoLevel:
		level = slog.LevelInfo
	}
	args := make([]any, 0, 2*len(e.Data))
	for k, v := range e.Data {
		args = append(args, k, v)
	}
	h.l.Log(context.Background(), level, e.Message, args...)
	return nil
}
