package controllers

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/dump"
)

// TemplateHash is the hash of a pod template, as Kubernetes
// computes it: FNV-32a over the deep dump of the template, then the
// owner's collisionCount (when set) as 8 little-endian bytes, the
// decimal sum rendered with rand.SafeEncodeString (no vowels, so no
// words): a Deployment's pod-template-hash, a DaemonSet's or
// StatefulSet's controller-revision-hash.
func TemplateHash(template *corev1.PodTemplateSpec, collisionCount *int32) string {
	h := fnv.New32a()
	fmt.Fprint(h, dump.ForHash(*template))
	if collisionCount != nil {
		var b [8]byte
		binary.LittleEndian.PutUint32(b[:], uint32(*collisionCount))
		h.Write(b[:])
	}
	return rand.SafeEncodeString(fmt.Sprint(h.Sum32()))
}
