package encryption

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apiserver/pkg/storage/value"
)

func write(t *testing.T, doc string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "enc.yaml")
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func key(n int) string { return base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, n)) }

const header = "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n"

// TestProviders: each provider writes its prefix and reads back what it
// wrote, and what any listed provider wrote; resources match by name,
// group wildcard and *.*.
func TestProviders(t *testing.T) {
	cfg, err := Load(write(t, header+
		"- resources: [secrets]\n  providers:\n  - secretbox: {keys: [{name: sb, secret: "+key(32)+"}]}\n  - aescbc: {keys: [{name: cbc, secret: "+key(32)+"}]}\n  - identity: {}\n"+
		"- resources: ['*.apps']\n  providers:\n  - aesgcm: {keys: [{name: gcm, secret: "+key(16)+"}]}\n"+
		"- resources: ['*.*']\n  providers:\n  - identity: {}\n"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, dataCtx := t.Context(), value.DefaultContext("/registry/x/y")
	for _, tt := range []struct {
		resource, group, prefix string
	}{{"secrets", "", "k8s:enc:secretbox:v1:sb:"}, {"deployments", "apps", "k8s:enc:aesgcm:v1:gcm:"}, {"configmaps", "", ""}} {
		tr := cfg.For(tt.resource, tt.group)
		if tr == nil {
			t.Fatalf("%s: no transformer", tt.resource)
		}
		out, err := tr.TransformToStorage(ctx, []byte("plain"), dataCtx)
		if err != nil || !strings.HasPrefix(string(out), tt.prefix) || tt.prefix != "" && bytes.Contains(out, []byte("plain")) {
			t.Errorf("%s: wrote %q %v", tt.resource, out, err)
		}
		back, _, err := tr.TransformFromStorage(ctx, out, dataCtx)
		if err != nil || string(back) != "plain" {
			t.Errorf("%s: read back %q %v", tt.resource, back, err)
		}
	}
	secrets := cfg.For("secrets", "")
	if back, stale, err := secrets.TransformFromStorage(ctx, []byte("old plain"), dataCtx); err != nil || string(back) != "old plain" || !stale {
		t.Errorf("plain data under identity: %q %v %v", back, stale, err)
	}
	if cfg.For("leases", "coordination.k8s.io") == nil {
		t.Error("*.* does not match a grouped resource")
	}
}

func TestLoadErrors(t *testing.T) {
	for _, tt := range []struct{ doc, want string }{
		{"kind: Other\n", "want kind EncryptionConfiguration"},
		{header + "- resources: [secrets]\n  providers:\n  - aescbc: {keys: [{name: k, secret: " + key(16) + "}]}\n", "aescbc wants a 32-byte key"},
		{header + "- resources: [secrets]\n  providers:\n  - aesgcm: {keys: [{name: k, secret: '!!'}]}\n", "secret is not base64"},
		{header + "- resources: [secrets]\n  providers:\n  - kms: {name: x, apiVersion: v2}\n", "kms providers are not supported"},
		{header + "- resources: [secrets]\n  providers: []\n", "no providers"},
		{header + "- resources: [secrets]\n  providers:\n  - aesgcm: {keys: [{name: 'a:b', secret: " + key(16) + "}]}\n", "without ':'"},
		{header + "- resources: [secrets]\n  provider: []\n", "unknown field"},
	} {
		if _, err := Load(write(t, tt.doc)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: %v, want %q", tt.doc, err, tt.want)
		}
	}
}
