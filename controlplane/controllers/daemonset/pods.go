package daemonset

import (
	"github.com/skiff-lab/skiff/controlplane/controllers"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
)

// defaultTolerations are the taints every DaemonSet pod tolerates, as
// Kubernetes adds them: a node that is not ready, unreachable, under
// pressure or cordoned keeps its daemons.
var defaultTolerations = []corev1.Toleration{
	{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
	{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
	{Key: corev1.TaintNodeDiskPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodeMemoryPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodePIDPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
}

// tolerations are the template's and the defaults it lacks (and, for a
// pod on the host's network, the unavailable pod network).
func tolerations(spec *corev1.PodSpec) []corev1.Toleration {
	defaults := defaultTolerations
	if spec.HostNetwork {
		defaults = append(defaults[:len(defaults):len(defaults)],
			corev1.Toleration{Key: corev1.TaintNodeNetworkUnavailable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule})
	}
	out := append([]corev1.Toleration(nil), spec.Tolerations...)
	for _, d := range defaults {
		found := false
		for _, t := range spec.Tolerations {
			if t.Key == d.Key && t.Effect == d.Effect {
				found = true
			}
		}
		if !found {
			out = append(out, d)
		}
	}
	return out
}

// placement says whether a DaemonSet's pod should run on node, and
// whether a pod already there may keep running.
func placement(ds *appsv1.DaemonSet, node *corev1.Node) (run, keep bool) {
	if node.DeletionTimestamp != nil {
		return false, false
	}
	pod := &corev1.Pod{Spec: ds.Spec.Template.Spec}
	if ok, _ := nodeaffinity.GetRequiredNodeAffinity(pod).Match(node); !ok {
		return false, false
	}
	tols := tolerations(&ds.Spec.Template.Spec)
	untolerated := func(effect corev1.TaintEffect) bool {
		_, found := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), node.Spec.Taints, tols,
			func(t *corev1.Taint) bool { return t.Effect == effect }, false)
		return found
	}
	untoleratedExecute, untoleratedSchedule := untolerated(corev1.TaintEffectNoExecute), untolerated(corev1.TaintEffectNoSchedule)
	return !untoleratedExecute && !untoleratedSchedule, !untoleratedExecute
}

// podFor is the DaemonSet's pod for node: its template, the revision's
// hash and the template generation as labels, pinned to the node by node
// affinity, with the default tolerations.
func podFor(ds *appsv1.DaemonSet, node, hash string) *corev1.Pod {
	tmpl := ds.Spec.Template.DeepCopy()
	pod := &corev1.Pod{ObjectMeta: tmpl.ObjectMeta, Spec: tmpl.Spec}
	pod.Name, pod.GenerateName, pod.Namespace = "", ds.Name+"-", ds.Namespace
	pod.Labels = controllers.WithLabel(pod.Labels, hashLabel, hash)
	if gen := ds.Annotations[templateGenerationAnnotation]; gen != "" {
		pod.Labels[templateGenerationLabel] = gen
	}
	pod.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(ds, dsKind)}
	pod.Spec.Tolerations = tolerations(&tmpl.Spec)
	if pod.Spec.Affinity == nil {
		pod.Spec.Affinity = &corev1.Affinity{}
	}
	if pod.Spec.Affinity.NodeAffinity == nil {
		pod.Spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{{
			Key: metav1.ObjectNameField, Operator: corev1.NodeSelectorOpIn, Values: []string{node}}}}}}
	return pod
}

const (
	// templateGenerationAnnotation is where apps/v1 keeps the count of a
	// DaemonSet's template changes; its pods carry it as a label.
	templateGenerationAnnotation = appsv1.DeprecatedTemplateGeneration
	templateGenerationLabel      = "pod-template-generation"
)

// nodeOf is the node a DaemonSet pod runs on or is pinned to.
func nodeOf(pod *corev1.Pod) string {
	if pod.Spec.NodeName != "" {
		return pod.Spec.NodeName
	}
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return ""
	}
	for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, f := range term.MatchFields {
			if f.Key == metav1.ObjectNameField && f.Operator == corev1.NodeSelectorOpIn && len(f.Values) == 1 {
				return f.Values[0]
			}
		}
	}
	return ""
}
