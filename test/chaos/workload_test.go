package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
)

// ns is the workload's namespace.
const ns = "chaos"

// The workload's bounds: at most this many Deployments (each with its
// Service) and ConfigMaps at once, each Deployment 1 or 2 replicas, one
// write every tick.
const (
	maxDeployments = 4
	maxConfigMaps  = 6
	tick           = 300 * time.Millisecond
	writeTimeout   = 5 * time.Second
)

// record is what the API acknowledged last about one object. A write whose
// outcome is unknown (a timeout, a server gone, a 5xx) makes it unsure
// until a later write settles it.
type record struct {
	kind, name string // kind: deployment, service, configmap
	exists     bool
	value      int32 // a Deployment's replicas, a ConfigMap's data "v"
	unsure     bool
}

// workload is the client loop: it creates, scales and deletes Deployments
// with their Services and creates, changes and deletes ConfigMaps, through
// each server in turn, and keeps a ledger of what was acknowledged.
type workload struct {
	clients []kubernetes.Interface
	rnd     *rand.Rand

	mu            sync.Mutex // held for each write, and while paused
	records       map[string]*record
	seq           int
	acked, failed int
}

func newWorkload(clients []kubernetes.Interface, rnd *rand.Rand) *workload {
	return &workload{clients: clients, rnd: rnd, records: map[string]*record{}}
}

// run writes once a tick until ctx ends.
func (w *workload) run(ctx context.Context) {
	for t := time.NewTicker(tick); ; {
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		w.mu.Lock()
		w.write(ctx)
		w.mu.Unlock()
	}
}

// pause waits for the write under way and holds the loop until resume.
func (w *workload) pause()  { w.mu.Lock() }
func (w *workload) resume() { w.mu.Unlock() }

// counts are the writes acknowledged and failed so far.
func (w *workload) counts() (acked, failed int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.acked, w.failed
}

// write makes one change, chosen at random among those the bounds allow.
func (w *workload) write(ctx context.Context) {
	w.seq++
	cs := w.clients[w.seq%len(w.clients)]
	ctx, cancel := context.WithTimeout(ctx, writeTimeout)
	defer cancel()
	deployments, configmaps := w.live("deployment"), w.live("configmap")
	switch n := w.rnd.IntN(6); {
	case n == 0 && len(deployments) < maxDeployments:
		w.createDeployment(ctx, cs, fmt.Sprintf("d-%d", w.seq))
	case n == 1 && len(deployments) > 0:
		w.scale(ctx, cs, deployments[w.rnd.IntN(len(deployments))])
	case n == 2 && len(deployments) > 0 && w.rnd.IntN(3) == 0:
		w.deleteDeployment(ctx, cs, deployments[w.rnd.IntN(len(deployments))])
	case n >= 3 && len(configmaps) < maxConfigMaps && (n == 3 || len(configmaps) == 0):
		w.createConfigMap(ctx, cs, fmt.Sprintf("c-%d", w.seq))
	case n == 4 && len(configmaps) > 0:
		w.changeConfigMap(ctx, cs, configmaps[w.rnd.IntN(len(configmaps))])
	case n == 5 && len(configmaps) > 0:
		w.deleteConfigMap(ctx, cs, configmaps[w.rnd.IntN(len(configmaps))])
	}
}

// live are the names of a kind's objects that exist or may exist.
func (w *workload) live(kind string) []string {
	var out []string
	for _, r := range w.records {
		if r.kind == kind && (r.exists || r.unsure) {
			out = append(out, r.name)
		}
	}
	return out
}

func (w *workload) record(kind, name string) *record {
	key := kind + "/" + name
	r := w.records[key]
	if r == nil {
		r = &record{kind: kind, name: name}
		w.records[key] = r
	}
	return r
}

// settle enters a write's outcome in the ledger: err nil, the object now
// exists (or not) with value; an answer that says the object is or is
// not there settles that; anything else leaves the write's outcome unknown.
func (w *workload) settle(r *record, exists bool, value int32, err error) {
	switch {
	case err == nil:
		w.acked++
		r.exists, r.value, r.unsure = exists, value, false
		return
	case apierrors.IsNotFound(err):
		r.exists, r.value, r.unsure = false, 0, false // gone: no value (the snapshot reads "false 0")
	case apierrors.IsAlreadyExists(err):
		r.unsure = true // there, from an earlier unsure create: its value unknown
	default:
		r.unsure = true
	}
	w.failed++
}

func (w *workload) createDeployment(ctx context.Context, cs kubernetes.Interface, name string) {
	replicas := int32(1 + w.rnd.IntN(2))
	_, err := cs.AppsV1().Deployments(ns).Create(ctx, deployment(name, replicas), metav1.CreateOptions{})
	w.settle(w.record("deployment", name), true, replicas, err)
	if err != nil {
		return
	}
	_, err = cs.CoreV1().Services(ns).Create(ctx, service(name), metav1.CreateOptions{})
	w.settle(w.record("service", name), true, 0, err)
}

func (w *workload) scale(ctx context.Context, cs kubernetes.Interface, name string) {
	replicas := int32(1 + w.rnd.IntN(2))
	patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas)
	_, err := cs.AppsV1().Deployments(ns).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	w.settle(w.record("deployment", name), true, replicas, err)
}

func (w *workload) deleteDeployment(ctx context.Context, cs kubernetes.Interface, name string) {
	bg := metav1.DeletePropagationBackground
	err := cs.CoreV1().Services(ns).Delete(ctx, name, metav1.DeleteOptions{})
	w.settle(w.record("service", name), false, 0, err)
	if err != nil && !apierrors.IsNotFound(err) {
		return
	}
	err = cs.AppsV1().Deployments(ns).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &bg})
	w.settle(w.record("deployment", name), false, 0, err)
}

func (w *workload) createConfigMap(ctx context.Context, cs kubernetes.Interface, name string) {
	value := int32(w.seq)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"v": strconv.Itoa(int(value))}}
	_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
	w.settle(w.record("configmap", name), true, value, err)
}

func (w *workload) changeConfigMap(ctx context.Context, cs kubernetes.Interface, name string) {
	value := int32(w.seq)
	patch := fmt.Sprintf(`{"data":{"v":"%d"}}`, value)
	_, err := cs.CoreV1().ConfigMaps(ns).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	w.settle(w.record("configmap", name), true, value, err)
}

func (w *workload) deleteConfigMap(ctx context.Context, cs kubernetes.Interface, name string) {
	err := cs.CoreV1().ConfigMaps(ns).Delete(ctx, name, metav1.DeleteOptions{})
	w.settle(w.record("configmap", name), false, 0, err)
}

func deployment(name string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	grace := int64(1)
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: &grace,
					Containers: []corev1.Container{{Name: "sleep", Image: image, ImagePullPolicy: corev1.PullNever,
						Command: []string{"sleep", "3600"}}},
				},
			},
		},
	}
}

func service(name string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": name},
			Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}},
	}
}
