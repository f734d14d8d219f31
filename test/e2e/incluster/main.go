// Command incluster lists the pods of its own namespace through client-go's
// in-cluster configuration (the kubernetes Service's address from the
// environment, the projected service account token and CA), as a workload
// that talks to the API does. The e2e tests build it and run it in a pod.
package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

const namespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

func main() {
	if err := run(); err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
}

func run() error {
	cfg, err := rest.InClusterConfig()
	if err != nil {
		return err
	}
	ns, err := os.ReadFile(namespaceFile)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pods, err := client.CoreV1().Pods(strings.TrimSpace(string(ns))).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	fmt.Printf("listed %d pods via %s\n", len(pods.Items), cfg.Host)
	return nil
}
