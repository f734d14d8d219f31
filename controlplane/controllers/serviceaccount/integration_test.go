package serviceaccount_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/skiff-lab/skiff/controlplane/servertest"
)

func TestDefaultServiceAccount(t *testing.T) {
	c := servertest.Start(t).Client()
	ctx := t.Context()
	waitForAccount(t, c, "kube-system", "")

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}
	if _, err := c.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	first := waitForAccount(t, c, "team", "")
	if err := c.CoreV1().ServiceAccounts("team").Delete(ctx, "default", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForAccount(t, c, "team", first)
}

// waitForAccount waits up to 10s for the default ServiceAccount of ns,
// other than the one with UID not, and returns its UID.
func waitForAccount(t *testing.T, c kubernetes.Interface, ns string, not types.UID) types.UID {
	t.Helper()
	var uid types.UID
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		sa, err := c.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		if err != nil || sa.UID == not {
			return false, nil
		}
		uid = sa.UID
		return true, nil
	})
	if err != nil {
		t.Fatalf("default service account in %s (not %q): %v", ns, not, err)
	}
	return uid
}
