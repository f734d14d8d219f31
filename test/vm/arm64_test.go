package vm

import (
	"strings"
	"testing"
	"time"
)

// TestVMArm64 boots the arm64 image under qemu-system-aarch64 (TCG: one
// VM, a single node) and runs a pod to Running on it: make test-vm-arm64.
func TestVMArm64(t *testing.T) {
	requireVMTier(t)
	img := buildImage(t, "arm64")
	accel := accelerator(t, img)
	t.Logf("booting an arm64 VM with %s", accel)
	start := time.Now()
	v := bootVM(t, img, accel, t.TempDir(), "skiff-arm64", "10.99.0.10", 0x10, share(t, img), link{freePort(t), true}, 2048)
	v.auth, v.hostKey = keys(t, img)
	v.connect(15 * time.Minute)
	v.waitShare()
	t.Logf("booted in %s: %s", time.Since(start).Round(time.Second), v.Run("uname -m; systemctl is-system-running --wait"))
	start = time.Now()
	v.Run("/mnt/skiff/node.sh server --skiff /mnt/skiff/skiff --node-ip 10.99.0.10 --images /mnt/skiff/images")
	// The API answers before the in-process agent has registered the node.
	v.Run("until skiff kubectl get node skiff-arm64 >/dev/null 2>&1; do sleep 2; done; skiff kubectl wait --for=condition=Ready node/skiff-arm64 --timeout=900s")
	t.Logf("skiff install server to a Ready node: %s", time.Since(start).Round(time.Second))
	start = time.Now()
	v.Run("skiff kubectl run arch --image=" + busyboxRef + " --image-pull-policy=Never --command -- sh -c 'uname -m; trap \"exit 0\" TERM; sleep 86400 & wait'")
	v.Run("skiff kubectl wait --for=condition=Ready pod/arch --timeout=900s")
	t.Logf("pod Running: %s", time.Since(start).Round(time.Second))
	if out := v.Run("skiff kubectl logs arch"); !strings.Contains(out, "aarch64") {
		t.Errorf("the pod says it runs on %q, want aarch64", out)
	}
	t.Log(v.Run("skiff version; skiff kubectl get nodes -o wide; skiff kubectl get pods -o wide"))
	v.Run("skiff uninstall --purge")
	if out, err := v.Try(cleanCheck, time.Minute); err != nil || out != "" {
		t.Errorf("after uninstall: %v\n%s", err, out)
	}
}
