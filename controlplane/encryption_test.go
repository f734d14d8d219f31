package controlplane_test

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagemigrationv1 "k8s.io/api/storagemigration/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/skiff-lab/skiff/controlplane"
	"github.com/skiff-lab/skiff/controlplane/servertest"
)

// encryptionConfig writes an EncryptionConfiguration for secrets with the
// given providers' YAML.
func encryptionConfig(t *testing.T, dir, providers string) string {
	t.Helper()
	path := filepath.Join(dir, "encryption.yaml")
	doc := "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers:\n" + providers
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func aesKey(name string, fill byte) string {
	return fmt.Sprintf("      - {name: %s, secret: %s}\n", name, base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{fill}, 32)))
}

// TestEncryptionAtRest: with an EncryptionConfiguration, a Secret is
// ciphertext in etcd (k8s:enc:aesgcm:v1:<key>:) and plain through the
// API; ConfigMaps, not listed, stay plain; after a new key is put first,
// the old Secret still reads and a StorageVersionMigration re-encrypts it
// with the new key.
func TestEncryptionAtRest(t *testing.T) {
	dir := t.TempDir()
	cfgPath := encryptionConfig(t, dir, "  - aesgcm:\n      keys:\n"+aesKey("key1", 1)+"  - identity: {}\n")
	openEtcd := servertest.OpenEtcd(t)
	s := servertest.StartWith(t, func(c *controlplane.Config) { c.EncryptionProviderConfig = cfgPath; openEtcd(c) })
	admin, ctx := s.Client(), t.Context()
	etcd := s.EtcdClient()
	raw := func(key string) string {
		t.Helper()
		resp, err := etcd.Get(ctx, key)
		if err != nil || len(resp.Kvs) != 1 {
			t.Fatalf("etcd get %s: %v %v", key, resp, err)
		}
		return string(resp.Kvs[0].Value)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db"}, StringData: map[string]string{"password": "hunter2-plaintext"}}
	if _, err := admin.CoreV1().Secrets("default").Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "open"}, Data: map[string]string{"k": "visible-plaintext"}}
	if _, err := admin.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if v := raw("/registry/secrets/default/db"); !strings.HasPrefix(v, "k8s:enc:aesgcm:v1:key1:") || strings.Contains(v, "hunter2") {
		t.Errorf("the Secret in etcd: %q", v)
	}
	if v := raw("/registry/configmaps/default/open"); !strings.Contains(v, "visible-plaintext") {
		t.Errorf("the ConfigMap in etcd is not plain: %q", v)
	}
	if got, err := admin.CoreV1().Secrets("default").Get(ctx, "db", metav1.GetOptions{}); err != nil || string(got.Data["password"]) != "hunter2-plaintext" {
		t.Fatalf("the Secret through the API: %v %v", got, err)
	}

	encryptionConfig(t, dir, "  - aesgcm:\n      keys:\n"+aesKey("key2", 2)+aesKey("key1", 1)+"  - identity: {}\n")
	s.Restart()
	admin = s.Client()
	got, err := admin.CoreV1().Secrets("default").Get(ctx, "db", metav1.GetOptions{})
	if err != nil || string(got.Data["password"]) != "hunter2-plaintext" {
		t.Fatalf("the Secret after the new key: %v %v", got, err)
	}
	// A StorageVersionMigration of secrets writes each again, encrypted
	// with the new first key; one of a resource nobody serves fails.
	migrate(t, admin, "secrets", storagemigrationv1.MigrationSucceeded)
	if v := raw("/registry/secrets/default/db"); !strings.HasPrefix(v, "k8s:enc:aesgcm:v1:key2:") {
		t.Errorf("the migrated Secret in etcd: %q", v)
	}
	migrate(t, admin, "foos", storagemigrationv1.MigrationFailed)
}

// migrate creates a StorageVersionMigration of the core resource and
// waits for it to end with the condition want.
func migrate(t *testing.T, client kubernetes.Interface, resource string, want storagemigrationv1.MigrationConditionType) {
	t.Helper()
	svm := &storagemigrationv1.StorageVersionMigration{ObjectMeta: metav1.ObjectMeta{Name: "migrate-" + resource},
		Spec: storagemigrationv1.StorageVersionMigrationSpec{Resource: metav1.GroupResource{Resource: resource}}}
	if _, err := client.StoragemigrationV1().StorageVersionMigrations().Create(t.Context(), svm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "migration of "+resource+" to end "+string(want), func() bool {
		got, err := client.StoragemigrationV1().StorageVersionMigrations().Get(t.Context(), svm.Name, metav1.GetOptions{})
		return err == nil && apimeta.IsStatusConditionTrue(got.Status.Conditions, string(want))
	})
}
