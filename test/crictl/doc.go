// Package crictl pins the crictl that `make crictl` builds: unmodified
// sigs.k8s.io/cri-tools, the CRI client people use on Kubernetes nodes
// (Debian 12 has no package of it). It is a module of its own so that its
// dependencies stay out of skiff's.
package crictl
