package chaos

import (
	"context"
	"fmt"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// snapshot is what the API says of the cluster at one time.
type snapshot struct {
	nodes        []corev1.Node
	apiEndpoints int // ready addresses of the kubernetes Service
	deployments  map[string]appsv1.Deployment
	services     map[string]bool
	endpoints    map[string]int // Service → ready endpoints
	configmaps   map[string]string
	pods         []corev1.Pod // every namespace's
}

func (s *snapshot) read(ctx context.Context, cs kubernetes.Interface) error {
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	api, err := cs.DiscoveryV1().EndpointSlices("default").List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=kubernetes"})
	if err != nil {
		return err
	}
	deployments, err := cs.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	services, err := cs.CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	slices, err := cs.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	configmaps, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	pods, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	*s = snapshot{nodes: nodes.Items, apiEndpoints: readyEndpoints(api.Items)[""], deployments: map[string]appsv1.Deployment{},
		services: map[string]bool{}, endpoints: readyEndpoints(slices.Items), configmaps: map[string]string{}, pods: pods.Items}
	for _, d := range deployments.Items {
		s.deployments[d.Name] = d
	}
	for _, svc := range services.Items {
		s.services[svc.Name] = true
	}
	for _, cm := range configmaps.Items {
		s.configmaps[cm.Name] = cm.Data["v"]
	}
	return nil
}

// readyEndpoints counts the ready endpoints of each Service's slices; ""
// counts them all.
func readyEndpoints(slices []discoveryv1.EndpointSlice) map[string]int {
	out := map[string]int{}
	for _, sl := range slices {
		for _, e := range sl.Endpoints {
			if e.Conditions.Ready == nil || *e.Conditions.Ready {
				out[sl.Labels[discoveryv1.LabelServiceName]] += len(e.Addresses)
				out[""] += len(e.Addresses)
			}
		}
	}
	return out
}

// has is what the API holds of a record's object, as "exists value".
func (s *snapshot) has(r *record) string {
	switch r.kind {
	case "deployment":
		d, ok := s.deployments[r.name]
		if !ok {
			return "false 0"
		}
		return fmt.Sprintf("true %d", *d.Spec.Replicas)
	case "service":
		return fmt.Sprintf("%t 0", s.services[r.name])
	default:
		v, ok := s.configmaps[r.name]
		if !ok {
			return "false 0"
		}
		n, _ := strconv.Atoi(v)
		return fmt.Sprintf("true %d", n)
	}
}

// live are the pods that are neither ended nor being deleted.
func (s *snapshot) live() []corev1.Pod {
	var out []corev1.Pod
	for _, p := range s.pods {
		if p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			out = append(out, p)
		}
	}
	return out
}

// unsettled: "" once every node is Ready, every server serves the
// kubernetes Service, every Deployment has exactly its replicas, all
// ready, no pod of the workload is being deleted or belongs to no
// Deployment, and every Service's endpoints are its Deployment's pods.
func (s *snapshot) unsettled(nodes, servers int) string {
	if n := readyNodes(s.nodes); n != nodes {
		return fmt.Sprintf("%d of %d nodes Ready", n, nodes)
	}
	if s.apiEndpoints != servers {
		return fmt.Sprintf("the kubernetes Service has %d of %d servers", s.apiEndpoints, servers)
	}
	pods := map[string]int{}
	for _, p := range s.pods {
		if p.Namespace != ns || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if p.DeletionTimestamp != nil {
			return "pod " + p.Name + " is being deleted"
		}
		if _, ok := s.deployments[p.Labels["app"]]; !ok {
			return "pod " + p.Name + " belongs to no Deployment"
		}
		if !podReady(p) {
			return fmt.Sprintf("pod %s on %s is not ready: %s", p.Name, p.Spec.NodeName, podState(p))
		}
		pods[p.Labels["app"]]++
	}
	for name, d := range s.deployments {
		want := *d.Spec.Replicas
		st := d.Status
		if d.Generation != st.ObservedGeneration || st.Replicas != want || st.ReadyReplicas != want || st.UpdatedReplicas != want || int32(pods[name]) != want {
			return fmt.Sprintf("deployment %s: %d replicas wanted, %d pods, status %d/%d ready (generation %d, observed %d)",
				name, want, pods[name], st.ReadyReplicas, st.Replicas, d.Generation, st.ObservedGeneration)
		}
	}
	for name := range s.services {
		if want := pods[name]; s.endpoints[name] != want {
			return fmt.Sprintf("service %s: %d ready endpoints, %d pods", name, s.endpoints[name], want)
		}
	}
	return ""
}

func readyNodes(nodes []corev1.Node) int {
	n := 0
	for _, node := range nodes {
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				n++
			}
		}
	}
	return n
}

func podReady(p corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// podState says why a pod is not ready: its phase and its containers'
// states.
func podState(p corev1.Pod) string {
	out := string(p.Status.Phase)
	for _, c := range p.Status.ContainerStatuses {
		switch st := c.State; {
		case st.Waiting != nil:
			out += fmt.Sprintf("; %s waiting: %s %s", c.Name, st.Waiting.Reason, st.Waiting.Message)
		case st.Terminated != nil:
			out += fmt.Sprintf("; %s terminated: %s %s", c.Name, st.Terminated.Reason, st.Terminated.Message)
		default:
			out += fmt.Sprintf("; %s running, ready %t, %d restarts", c.Name, c.Ready, c.RestartCount)
		}
	}
	return out
}
