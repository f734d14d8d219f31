// Package chaos is skiff's chaos tier (make test-chaos): a lab of three
// servers and two agents (test/vm/lab.sh) under a client that keeps
// creating, scaling and deleting Deployments, Services and ConfigMaps,
// hit by one fault after another — a server, the etcd leader's server, an
// agent, an agent's containerd and a shim killed with SIGKILL, a server cut
// off from the others, a node's disk full. After each fault it checks that
// every write the API acknowledged is there, that nothing is duplicated
// (pods of a Deployment, containers of a pod, pod IPs), that nothing leaked
// on any node (network namespaces, veths, IPAM addresses, iptables rules,
// cgroups, mounts, shims, containers), and how long the cluster took to
// converge; the report is a table in the test's log.
package chaos
