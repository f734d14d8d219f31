package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-lab/skiff/agent"
	"github.com/skiff-lab/skiff/agent/nodeapi"
)

// serviceExplanation is what `skiff explain service` shows: the Service's
// endpoints as its EndpointSlices hold them, and each node's view of it.
type serviceExplanation struct {
	Namespace string            `json:"namespace"`
	Name      string            `json:"name"`
	ClusterIP string            `json:"clusterIP"`
	Ports     []string          `json:"ports"`
	Slices    map[string]string `json:"slices"` // name → resourceVersion, in the API
	Endpoints []endpointLine    `json:"endpoints"`
	Nodes     []nodeLine        `json:"nodes"`
}

type endpointLine struct {
	Address string `json:"address"`
	Pod     string `json:"pod,omitempty"`
	Node    string `json:"node,omitempty"`
	Ready   bool   `json:"ready"`
}

// nodeLine is one node's view of the Service, or why it has none.
type nodeLine struct {
	agent.NodeServiceView `json:",inline"`
	// Synced says the node's proxy made its rules from the API's current
	// slices.
	Synced bool   `json:"synced"`
	Error  string `json:"error,omitempty"`
}

// nodeViewTimeout bounds each node's answer.
const nodeViewTimeout = 5 * time.Second

// explainService reads the Service, its EndpointSlices and each node's
// view of it (through the API server's nodes/proxy).
func (c *explainer) explainService(ctx context.Context, name string) (serviceExplanation, error) {
	e := serviceExplanation{Namespace: c.namespace, Name: name, Slices: map[string]string{}, Endpoints: []endpointLine{}, Nodes: []nodeLine{}}
	svc, err := c.client.CoreV1().Services(c.namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return e, err
	}
	e.ClusterIP = svc.Spec.ClusterIP
	for _, p := range svc.Spec.Ports {
		e.Ports = append(e.Ports, portString(p))
	}
	sel := metav1.ListOptions{LabelSelector: discovery.LabelServiceName + "=" + name}
	list, err := c.client.DiscoveryV1().EndpointSlices(c.namespace).List(ctx, sel)
	if err != nil {
		return e, err
	}
	for _, s := range list.Items {
		e.Slices[s.Name] = s.ResourceVersion
		e.Endpoints = append(e.Endpoints, endpointLines(s)...)
	}
	nodes, err := c.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return e, err
	}
	for _, n := range nodes.Items {
		e.Nodes = append(e.Nodes, c.nodeView(ctx, n.Name, name, e.Slices))
	}
	return e, nil
}

func portString(p corev1.ServicePort) string {
	s := fmt.Sprintf("%d/%s", p.Port, p.Protocol)
	if p.Name != "" {
		s = p.Name + " " + s
	}
	return s + "→" + p.TargetPort.String()
}

func endpointLines(s discovery.EndpointSlice) []endpointLine {
	var out []endpointLine
	port := ""
	if len(s.Ports) > 0 && s.Ports[0].Port != nil {
		port = fmt.Sprint(":", *s.Ports[0].Port)
	}
	for _, ep := range s.Endpoints {
		l := endpointLine{Address: strings.Join(ep.Addresses, ",") + port, Ready: ep.Conditions.Ready == nil || *ep.Conditions.Ready}
		if ep.NodeName != nil {
			l.Node = *ep.NodeName
		}
		if t := ep.TargetRef; t != nil {
			l.Pod = t.Namespace + "/" + t.Name
		}
		out = append(out, l)
	}
	return out
}

// nodeView asks node for its view of the Service.
func (c *explainer) nodeView(ctx context.Context, node, name string, current map[string]string) nodeLine {
	l := nodeLine{NodeServiceView: agent.NodeServiceView{Node: node}}
	ctx, cancel := context.WithTimeout(ctx, nodeViewTimeout)
	defer cancel()
	raw, err := c.client.CoreV1().RESTClient().Get().Resource("nodes").Name(node).SubResource("proxy").
		Suffix(nodeapi.ServicesPath, c.namespace, name).DoRaw(ctx)
	if err == nil {
		err = json.Unmarshal(raw, &l.NodeServiceView)
	}
	if err != nil {
		l.Error = err.Error()
		return l
	}
	l.Synced = l.Proxy != nil && maps.Equal(l.Proxy.Slices, current)
	return l
}

// writeService prints a Service's explanation: its endpoints, then one
// line per node: whether its proxy has synced the last change (and how
// many ready endpoints its rules hold), and its DNS server's answer.
func writeService(w io.Writer, e serviceExplanation, now time.Time) error {
	fmt.Fprintf(w, "Service %s/%s: cluster IP %s, ports %s\n", e.Namespace, e.Name, e.ClusterIP, strings.Join(e.Ports, ", "))
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	if len(e.Endpoints) == 0 {
		fmt.Fprintln(tw, "No endpoints.")
	} else {
		fmt.Fprintln(tw, "ENDPOINT\tPOD\tNODE\tREADY")
	}
	for _, ep := range e.Endpoints {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%v\n", ep.Address, orDash(ep.Pod), orDash(ep.Node), ep.Ready)
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "NODE\tPROXY\tDNS")
	for _, n := range e.Nodes {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", n.Node, proxyState(n, e.Slices, now), dnsState(n))
	}
	return tw.Flush()
}

func proxyState(n nodeLine, current map[string]string, now time.Time) string {
	switch {
	case n.Error != "":
		return "unknown: " + n.Error
	case n.Proxy == nil:
		return "no rules for it"
	case !n.Synced:
		return fmt.Sprintf("behind: rules from slices %s, the API has %s", versions(n.Proxy.Slices), versions(current))
	}
	ready := 0
	for _, p := range n.Proxy.Ports {
		for _, ep := range p.Endpoints {
			if ep.Ready {
				ready++
			}
		}
	}
	return fmt.Sprintf("synced %s ago, %d ready endpoints in its rules", now.Sub(n.Proxy.Synced).Round(time.Second), ready)
}

func versions(versionsOf map[string]string) string {
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(versionsOf)) {
		parts = append(parts, name+"@"+versionsOf[name])
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ",")
}

func dnsState(n nodeLine) string {
	switch {
	case n.Error != "":
		return "-"
	case n.DNS.Error != "":
		return n.DNS.Name + ": " + n.DNS.Error
	case len(n.DNS.Addresses) == 0:
		return n.DNS.Name + ": no address"
	}
	return n.DNS.Name + " → " + strings.Join(n.DNS.Addresses, ",")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
