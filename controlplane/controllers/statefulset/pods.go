package statefulset

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"sync/atomic"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skiff-lab/skiff/controlplane/controllers"
)

func podName(ss *appsv1.StatefulSet, ord int) string { return ss.Name + "-" + strconv.Itoa(ord) }

func claimName(ss *appsv1.StatefulSet, tmpl *corev1.PersistentVolumeClaim, ord int) string {
	return tmpl.Name + "-" + podName(ss, ord)
}

// identityLabels are what tell a pod's identity to Services and users.
func identityLabels(ss *appsv1.StatefulSet, ord int) map[string]string {
	return map[string]string{appsv1.StatefulSetPodNameLabel: podName(ss, ord), appsv1.PodIndexLabel: strconv.Itoa(ord)}
}

func (s *state) identityMatches(pod *corev1.Pod, ord int) bool {
	for k, v := range identityLabels(s.ss, ord) {
		if pod.Labels[k] != v {
			return false
		}
	}
	return true
}

// newPod is the pod of ordinal ord: at the current revision below a
// RollingUpdate's partition, at the update revision otherwise.
func (s *state) newPod(ord int) *corev1.Pod {
	tmpl, rev := s.updTmpl, s.upd.Name
	st := s.ss.Spec.UpdateStrategy
	if st.Type == appsv1.RollingUpdateStatefulSetStrategyType {
		bound := int(s.ss.Status.CurrentReplicas)
		if st.RollingUpdate != nil && st.RollingUpdate.Partition != nil {
			bound = int(*st.RollingUpdate.Partition)
		}
		if ord < s.start+bound {
			tmpl, rev = s.curTmpl, s.cur.Name
		}
	}
	name := podName(s.ss, ord)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.ss.Namespace,
			Labels:          controllers.WithLabel(tmpl.Labels, controllers.HashLabel, rev),
			Annotations:     maps.Clone(tmpl.Annotations),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(s.ss, setKind)}},
		Spec: *tmpl.Spec.DeepCopy(),
	}
	maps.Copy(pod.Labels, identityLabels(s.ss, ord))
	pod.Spec.Hostname, pod.Spec.Subdomain = name, s.ss.Spec.ServiceName
	pod.Spec.Volumes = s.podVolumes(pod.Spec.Volumes, ord)
	return pod
}

// podVolumes puts each claim template's claim in place of the template's
// volume of the same name.
func (s *state) podVolumes(volumes []corev1.Volume, ord int) []corev1.Volume {
	var out []corev1.Volume
	claimed := map[string]bool{}
	for i := range s.ss.Spec.VolumeClaimTemplates {
		t := &s.ss.Spec.VolumeClaimTemplates[i]
		claimed[t.Name] = true
		out = append(out, corev1.Volume{Name: t.Name, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claimName(s.ss, t, ord)}}})
	}
	for _, v := range volumes {
		if !claimed[v.Name] {
			out = append(out, v)
		}
	}
	return out
}

// newClaim is ordinal ord's claim of template t, labelled for the set's
// selector, and owned by the set when its claims go with it.
func (s *state) newClaim(t *corev1.PersistentVolumeClaim, ord int) *corev1.PersistentVolumeClaim {
	claim := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: claimName(s.ss, t, ord), Namespace: s.ss.Namespace,
			Labels: maps.Clone(t.Labels), Annotations: maps.Clone(t.Annotations)},
		Spec: *t.Spec.DeepCopy(),
	}
	if claim.Labels == nil {
		claim.Labels = map[string]string{}
	}
	if sel := s.ss.Spec.Selector; sel != nil {
		maps.Copy(claim.Labels, sel.MatchLabels)
	}
	if rp := s.ss.Spec.PersistentVolumeClaimRetentionPolicy; rp != nil && rp.WhenDeleted == appsv1.DeletePersistentVolumeClaimRetentionPolicyType {
		claim.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(s.ss, setKind)}
	}
	return claim
}

// carryOut does a plan, expecting its creates and deletes.
func (c *Controller) carryOut(ctx context.Context, s *state, p plan) error {
	key := keyOf(s.ss.Namespace, s.ss.Name)
	gone := make([]string, len(p.delete))
	for i, pod := range p.delete {
		gone[i] = pod.Namespace + "/" + pod.Name
	}
	c.expectations.Expect(key, len(p.create), gone)
	var errs []error
	for _, ord := range p.claims {
		errs = append(errs, c.makeClaims(ctx, s, ord))
	}
	for _, pod := range p.relabel {
		errs = append(errs, c.relabel(ctx, s, pod))
	}
	for _, pod := range p.release {
		errs = append(errs, c.releaseClaims(ctx, s, pod))
	}
	errs = append(errs, c.createPods(ctx, s, key, p.create), c.deletePods(ctx, s.ss, key, p.delete))
	return errors.Join(errs...)
}

func (c *Controller) createPods(ctx context.Context, s *state, key string, ords []int) error {
	var tried atomic.Int32
	_, err := controllers.SlowStartBatch(len(ords), 1, func(i int) error {
		tried.Add(1)
		err := c.createPod(ctx, s, ords[i])
		if err != nil {
			c.expectations.LowerCreations(key, 1)
		}
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	})
	c.expectations.LowerCreations(key, len(ords)-int(tried.Load()))
	return err
}

// createPod makes ordinal ord's claims, then its pod.
func (c *Controller) createPod(ctx context.Context, s *state, ord int) error {
	if err := c.makeClaims(ctx, s, ord); err != nil {
		return err
	}
	pod := s.newPod(ord)
	_, err := c.client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	switch {
	case apierrors.IsAlreadyExists(err):
		return err
	case err != nil:
		c.recorder.Eventf(s.ss, corev1.EventTypeWarning, "FailedCreate", "create Pod %s in StatefulSet %s failed error: %v", pod.Name, s.ss.Name, err)
		return fmt.Errorf("create pod %s: %w", pod.Name, err)
	}
	c.recorder.Eventf(s.ss, corev1.EventTypeNormal, "SuccessfulCreate", "create Pod %s in StatefulSet %s successful", pod.Name, s.ss.Name)
	return nil
}

// makeClaims makes the claims of ordinal ord that do not exist; a claim
// still being deleted is waited for.
func (c *Controller) makeClaims(ctx context.Context, s *state, ord int) error {
	for i := range s.ss.Spec.VolumeClaimTemplates {
		claim := s.newClaim(&s.ss.Spec.VolumeClaimTemplates[i], ord)
		existing, err := c.claims.PersistentVolumeClaims(claim.Namespace).Get(claim.Name)
		switch {
		case err == nil && existing.DeletionTimestamp != nil:
			return fmt.Errorf("claim %s of pod %s is being deleted", claim.Name, podName(s.ss, ord))
		case err == nil:
			continue
		case !apierrors.IsNotFound(err):
			return err
		}
		_, err = c.client.CoreV1().PersistentVolumeClaims(claim.Namespace).Create(ctx, claim, metav1.CreateOptions{})
		switch {
		case apierrors.IsAlreadyExists(err):
		case err != nil:
			c.recorder.Eventf(s.ss, corev1.EventTypeWarning, "FailedCreate", "create Claim %s for Pod %s in StatefulSet %s failed error: %v",
				claim.Name, podName(s.ss, ord), s.ss.Name, err)
			return fmt.Errorf("create claim %s: %w", claim.Name, err)
		default:
			c.recorder.Eventf(s.ss, corev1.EventTypeNormal, "SuccessfulCreate", "create Claim %s Pod %s in StatefulSet %s success",
				claim.Name, podName(s.ss, ord), s.ss.Name)
		}
	}
	return nil
}

// relabel sets a pod's identity labels right.
func (c *Controller) relabel(ctx context.Context, s *state, pod *corev1.Pod) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": identityLabels(s.ss, ordinalOf(s.ss, pod))}})
	if err != nil {
		return err
	}
	_, err = c.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("relabel pod %s: %w", pod.Name, err)
	}
	c.recorder.Eventf(s.ss, corev1.EventTypeNormal, "SuccessfulUpdate", "update Pod %s in StatefulSet %s successful", pod.Name, s.ss.Name)
	return nil
}

// releaseClaims hands a condemned pod's claims to the pod, so that the
// garbage collector deletes them once the pod is gone
// (whenScaled: Delete).
func (c *Controller) releaseClaims(ctx context.Context, s *state, pod *corev1.Pod) error {
	podRef := metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID}
	for i := range s.ss.Spec.VolumeClaimTemplates {
		name := claimName(s.ss, &s.ss.Spec.VolumeClaimTemplates[i], ordinalOf(s.ss, pod))
		claim, err := c.claims.PersistentVolumeClaims(pod.Namespace).Get(name)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return err
		}
		if hasOwner(claim, pod.UID) && !hasOwner(claim, s.ss.UID) {
			continue
		}
		refs := []metav1.OwnerReference{podRef}
		for _, r := range claim.OwnerReferences {
			if r.UID != s.ss.UID && r.UID != pod.UID {
				refs = append(refs, r)
			}
		}
		next := claim.DeepCopy()
		next.OwnerReferences = refs
		if _, err := c.client.CoreV1().PersistentVolumeClaims(pod.Namespace).Update(ctx, next, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("hand claim %s to pod %s: %w", name, pod.Name, err)
		}
	}
	return nil
}

func hasOwner(obj metav1.Object, uid types.UID) bool {
	for _, r := range obj.GetOwnerReferences() {
		if r.UID == uid {
			return true
		}
	}
	return false
}

// deletePods deletes pods of the set, each only if it is still the pod
// the sync saw.
func (c *Controller) deletePods(ctx context.Context, ss *appsv1.StatefulSet, key string, pods []*corev1.Pod) error {
	for _, pod := range pods {
		err := c.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(pod.UID))})
		if err != nil {
			c.expectations.DeletionObserved(key, pod.Namespace+"/"+pod.Name)
			if apierrors.IsNotFound(err) {
				continue
			}
			c.recorder.Eventf(ss, corev1.EventTypeWarning, "FailedDelete", "delete Pod %s in StatefulSet %s failed error: %v", pod.Name, ss.Name, err)
			return fmt.Errorf("delete pod %s: %w", pod.Name, err)
		}
		c.recorder.Eventf(ss, corev1.EventTypeNormal, "SuccessfulDelete", "delete Pod %s in StatefulSet %s successful", pod.Name, ss.Name)
	}
	return nil
}
