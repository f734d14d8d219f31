// Package registry describes every kind the API server serves: its
// Resource (names, scope, subresources, how to make one) and its Strategy,
// what the kind adds to the generic handling of package apiserver —
// defaults, validation with kube-apiserver's rules, what an update may
// change, table columns, selectable fields — and the optional interfaces
// some kinds add (graceful or finalizing deletes, allocations, scale).
//
// Nothing here touches a request or the store, except the service
// allocator, whose ClusterIPs and NodePorts live in the store beside the
// Services that hold them.
package registry
