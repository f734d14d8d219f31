package controlplane_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/skiff-lab/skiff/controlplane"
	"github.com/skiff-lab/skiff/controlplane/servertest"
)

const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: None
  nonResourceURLs: ["/healthz*", "/readyz*", "/livez*"]
- level: RequestResponse
  resources: [{group: "", resources: [configmaps, secrets]}]
- level: Metadata
`

// TestAuditLog: with a policy and a log path, each request is one
// audit.k8s.io/v1 Event line at its rule's level — RequestResponse with
// both bodies for a ConfigMap — while a Secret is recorded at Metadata
// only and its data appears nowhere in the log.
func TestAuditLog(t *testing.T) {
	dir := t.TempDir()
	policyPath, logPath := filepath.Join(dir, "policy.yaml"), filepath.Join(dir, "audit.log")
	if err := os.WriteFile(policyPath, []byte(auditPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	s := servertest.StartWith(t, func(c *controlplane.Config) {
		c.Audit = controlplane.AuditLog{PolicyFile: policyPath, Path: logPath, MaxSizeMB: 10}
	})
	admin, ctx := s.Client(), t.Context()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "audited"}, Data: map[string]string{"k": "v"}}
	if _, err := admin.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "hidden"}, StringData: map[string]string{"password": "never-logged"}}
	if _, err := admin.CoreV1().Secrets("default").Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var events []auditv1.Event
	servertest.Eventually(t, "both creates in the audit log", 10*time.Second, func(context.Context) (bool, string) {
		data, err := os.ReadFile(logPath)
		if err != nil {
			return false, err.Error()
		}
		if strings.Contains(string(data), "never-logged") || strings.Contains(string(data), base64.StdEncoding.EncodeToString([]byte("never-logged"))) {
			t.Fatalf("the secret's data is in the audit log")
		}
		events = nil
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			var ev auditv1.Event
			if err := json.Unmarshal([]byte(line), &ev); err != nil {
				t.Fatalf("audit line %q: %v", line, err)
			}
			if ev.Verb == "create" && ev.ObjectRef != nil && (ev.ObjectRef.Name == "audited" || ev.ObjectRef.Name == "hidden") {
				events = append(events, ev)
			}
		}
		return len(events) == 2, string(data)
	})
	for _, ev := range events {
		want := auditv1.LevelRequestResponse
		if ev.ObjectRef.Resource == "secrets" {
			want = auditv1.LevelMetadata
		}
		hasBodies := ev.RequestObject != nil && ev.ResponseObject != nil
		if ev.Level != want || hasBodies != (want == auditv1.LevelRequestResponse) || ev.Stage != auditv1.StageResponseComplete ||
			ev.ResponseStatus.Code != 201 || ev.User.Username != "skiff-admin" || ev.APIVersion != "audit.k8s.io/v1" {
			t.Errorf("event of %s: level %s, bodies %v, stage %s, code %d, user %s", ev.ObjectRef.Resource, ev.Level, hasBodies,
				ev.Stage, ev.ResponseStatus.Code, ev.User.Username)
		}
	}
}

// TestAuditLogRotates: the log is rotated when it reaches its size, and
// only the backups asked for are kept.
func TestAuditLogRotates(t *testing.T) {
	dir := t.TempDir()
	policyPath, logPath := filepath.Join(dir, "policy.yaml"), filepath.Join(dir, "audit.log")
	if err := os.WriteFile(policyPath, []byte(auditPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	s := servertest.StartWith(t, func(c *controlplane.Config) {
		c.Audit = controlplane.AuditLog{PolicyFile: policyPath, Path: logPath, MaxSizeMB: 1, MaxBackups: 1}
	})
	admin, ctx := s.Client(), t.Context()
	// Each create is an event of about 9 KiB (the ConfigMap in the request
	// and the response): 1 MiB is reached after about 115 of them. Write
	// until a backup exists, then as much again for a second rotation.
	filler := strings.Repeat("x", 4096)
	extra := -1
	for i := 0; i < 400 && extra != 0; i++ {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("fill-%d", i)}, Data: map[string]string{"k": filler}}
		if _, err := admin.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if files, _ := filepath.Glob(filepath.Join(dir, "audit-*.log")); len(files) > 0 && extra < 0 {
			extra = 130
		}
		if extra > 0 {
			extra--
		}
	}
	if extra != 0 {
		t.Fatal("the log was not rotated twice in 400 writes")
	}
	// Old backups are removed in the background.
	servertest.Eventually(t, "one backup kept", 10*time.Second, func(context.Context) (bool, string) {
		backups, _ := filepath.Glob(filepath.Join(dir, "audit-*.log"))
		current, err := os.Stat(logPath)
		return len(backups) == 1 && err == nil && current.Size() <= 1<<20, fmt.Sprint(backups)
	})
}
