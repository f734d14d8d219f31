package plugins

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/skiff-lab/skiff/controlplane/scheduler/framework"
)

// podMatcher is a pod affinity term or spread constraint's selection of
// pods: a label selector within a set of namespaces (empty: every one).
type podMatcher struct {
	selector   labels.Selector
	namespaces sets.Set[string]
}

// affinityMatcher reads a pod (anti-)affinity term written in pod's spec.
// An empty namespaceSelector ({}) means every namespace; other namespace
// selectors need namespace labels, which the scheduler does not follow,
// and are read as the pod's own namespace.
func affinityMatcher(pod *corev1.Pod, term *corev1.PodAffinityTerm) podMatcher {
	sel, err := metav1.LabelSelectorAsSelector(term.LabelSelector)
	if err != nil || term.LabelSelector == nil {
		sel = labels.Nothing()
	}
	m := podMatcher{selector: sel, namespaces: sets.New(term.Namespaces...)}
	allNamespaces := term.NamespaceSelector != nil && len(term.NamespaceSelector.MatchLabels)+len(term.NamespaceSelector.MatchExpressions) == 0
	if allNamespaces {
		m.namespaces = nil
	} else if m.namespaces.Len() == 0 {
		m.namespaces = sets.New(pod.Namespace)
	}
	return m
}

func (m podMatcher) matches(pod *corev1.Pod) bool {
	return (m.namespaces == nil || m.namespaces.Has(pod.Namespace)) && m.selector.Matches(labels.Set(pod.Labels))
}

// countMatching counts the pods on ni that matches accepts.
func countMatching(ni *framework.NodeInfo, matches func(*corev1.Pod) bool) int {
	n := 0
	for _, p := range ni.Pods {
		if matches(p) {
			n++
		}
	}
	return n
}

// readState returns the value a PreFilter stored under key, or the zero
// value when there is none.
func readState[T any](state *framework.CycleState, key string) T {
	v, _ := state.Read(key)
	t, _ := v.(T)
	return t
}

// topologyValue is node's value for key, and whether it has the label.
func topologyValue(node *corev1.Node, key string) (string, bool) {
	v, ok := node.Labels[key]
	return v, ok
}
