package install

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// ServerInstalled tells what to do next once an installed server answers
// (systemd started it: it sent READY=1): kubectl with its admin
// kubeconfig, and how a node joins with the token under dataDir, at the
// URL the cluster advertises.
func (m Machine) ServerInstalled(ctx context.Context, kubeconfig, dataDir string) error {
	token := filepath.Join(dataDir, "server", "token")
	fmt.Fprintf(m.Out, "skiff server is up.\n  kubectl:    skiff kubectl get nodes   (or kubectl, with KUBECONFIG=%s)\n", kubeconfig)
	join := "https://<this server>:6443"
	if url, err := advertisedURL(ctx, kubeconfig); err == nil {
		join = url
	}
	fmt.Fprintf(m.Out, "  join token: %s\n  add a node: skiff install agent --server %s --token $(cat %s)   (the token's content, on the new node)\n", token, join, token)
	return nil
}

// advertisedURL is the API server's URL as the cluster knows it: the
// default/kubernetes Endpoints.
func advertisedURL(ctx context.Context, kubeconfig string) (string, error) {
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return "", err
	}
	ep, err := kubernetes.NewForConfigOrDie(rc).CoreV1().Endpoints(metav1.NamespaceDefault).Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil || len(ep.Subsets) == 0 || len(ep.Subsets[0].Addresses) == 0 || len(ep.Subsets[0].Ports) == 0 {
		return "", fmt.Errorf("no address in default/kubernetes: %v", err)
	}
	s := ep.Subsets[0]
	return fmt.Sprintf("https://%s:%d", s.Addresses[0].IP, s.Ports[0].Port), nil
}

// AgentInstalled waits, with the agent's credentials in kubeconfig (which
// the agent may not have written yet), until its Node name is Ready, or
// ctx ends.
func (m Machine) AgentInstalled(ctx context.Context, kubeconfig, name string) error {
	fmt.Fprintf(m.Out, "waiting for node %s to be Ready\n", name)
	var last string
	err := wait.PollUntilContextCancel(ctx, 2*time.Second, true, func(ctx context.Context) (bool, error) {
		ready, why, err := nodeReady(ctx, kubeconfig, name)
		if err != nil {
			last = err.Error()
		} else if why != "" {
			last = why
		}
		return ready, nil
	})
	if err != nil {
		return fmt.Errorf("node %s not Ready (%s): %w; see journalctl -u skiff-agent.service", name, last, err)
	}
	fmt.Fprintf(m.Out, "node %s is Ready.\n", name)
	return nil
}

// nodeReady reads the Node's Ready condition: whether it is true, and the
// condition as it stands ("" when the Node has none yet).
func nodeReady(ctx context.Context, kubeconfig, name string) (bool, string, error) {
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return false, "", err
	}
	node, err := kubernetes.NewForConfigOrDie(rc).CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return false, "", err
	}
	for _, c := range node.Status.Conditions {
		if c.Type == v1.NodeReady {
			return c.Status == v1.ConditionTrue, fmt.Sprintf("Ready=%s %s", c.Status, c.Message), nil
		}
	}
	return false, "", nil
}
