package authn

import (
	"testing"
	"time"

	"github.com/skiff-lab/skiff/jointoken"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestBootstrapTokenUsable(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	secret := func(edit func(*corev1.Secret)) *corev1.Secret {
		s := jointoken.Secret("abcdef", "0123456789abcdef", "", now.Add(time.Hour), nil)
		s.Data = map[string][]byte{}
		for k, v := range s.StringData {
			s.Data[k] = []byte(v)
		}
		if edit != nil {
			edit(s)
		}
		return s
	}
	for _, tt := range []struct {
		name   string
		secret *corev1.Secret
		given  string
		want   string
	}{
		{"usable", secret(nil), "0123456789abcdef", ""},
		{"wrong secret", secret(nil), "0123456789abcdeg", "wrong secret"},
		{"expired", secret(func(s *corev1.Secret) { s.Data["expiration"] = []byte(now.Add(-time.Second).Format(time.RFC3339)) }), "0123456789abcdef", "expired"},
		{"not for authentication", secret(func(s *corev1.Secret) { delete(s.Data, "usage-bootstrap-authentication") }), "0123456789abcdef", "not for authentication"},
		{"an Opaque secret", secret(func(s *corev1.Secret) { s.Type = corev1.SecretTypeOpaque }), "0123456789abcdef", "not a bootstrap token secret"},
		{"being deleted", secret(func(s *corev1.Secret) { s.DeletionTimestamp = &metav1.Time{Time: now} }), "0123456789abcdef", "being deleted"},
	} {
		if got := unusable(tt.secret, tt.given, now); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}
