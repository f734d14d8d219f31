// Package volumes prepares the content of a pod's volumes on the node the
// way the kubelet does, so that the agent only has to bind-mount
// directories into containers.
//
// It holds four independent pieces:
//
//   - WriteAtomic publishes a set of files (a Payload) into a volume
//     directory so that readers always see one whole version. configMap,
//     secret, downwardAPI and projected volumes are written with it.
//   - Payload and the pure ConfigMapFiles, SecretFiles, DownwardAPIFiles and
//     ProjectedFiles compute what such a volume holds from the API objects.
//   - CheckHostPath enforces a hostPath volume's type, creating the path
//     for the …OrCreate types.
//   - MountTmpfs and Unmount back an emptyDir of medium Memory with tmpfs,
//     and ResolveSubPath turns a volumeMount's subPath into a host path
//     that stays inside its volume.
//
// Nothing here keeps state between calls: every function is idempotent and
// a restarted agent adopts what an earlier run left on disk.
package volumes
