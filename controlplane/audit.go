package controlplane

import (
	"fmt"
	"io"
	"os"

	"gopkg.in/natefinch/lumberjack.v2"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/apiserver/pkg/audit/policy"
	auditlog "k8s.io/apiserver/plugin/pkg/audit/log"

	"github.com/skiff-lab/skiff/controlplane/apiserver"
)

// AuditLog is where audit events go (kube-apiserver's --audit-log-*
// flags): JSON lines in Path ("-" for standard output), rotated when a
// file reaches MaxSizeMB, keeping MaxBackups old files for MaxAgeDays
// (zero: all of them, for ever).
type AuditLog struct {
	PolicyFile string
	Path       string
	MaxSizeMB  int
	MaxBackups int
	MaxAgeDays int
}

// auditor builds the API server's audit from the policy file and log; nil
// when either is unset. The closer ends the log.
func auditor(cfg AuditLog) (*apiserver.Audit, io.Closer, error) {
	if cfg.PolicyFile == "" || cfg.Path == "" {
		return nil, nopCloser{}, nil
	}
	p, err := policy.LoadPolicyFromFile(cfg.PolicyFile)
	if err != nil {
		return nil, nil, fmt.Errorf("--audit-policy-file: %w", err)
	}
	var out io.WriteCloser = nopCloser{os.Stdout}
	if cfg.Path != "-" {
		out = &lumberjack.Logger{Filename: cfg.Path, MaxSize: cfg.MaxSizeMB, MaxBackups: cfg.MaxBackups, MaxAge: cfg.MaxAgeDays}
	}
	backend := auditlog.NewBackend(out, auditlog.FormatJson, auditv1.SchemeGroupVersion)
	return &apiserver.Audit{Policy: policy.NewPolicyRuleEvaluator(p), Backend: backend}, out, nil
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }
