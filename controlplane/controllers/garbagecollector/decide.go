package garbagecollector

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// ownerState is what the API server says of one owner of an object.
type ownerState int

const (
	// solid: the owner exists and is not waiting for its dependents.
	solid ownerState = iota
	// dangling: the owner does not exist (or another object has its name).
	dangling
	// waiting: the owner is being deleted in the foreground.
	waiting
)

// owner is one ownerReference of an object and its owner's state.
type owner struct {
	ref   metav1.OwnerReference
	state ownerState
}

// plan is what to do with an object whose owners have been looked up.
type plan struct {
	// removeRefs are ownerReferences to drop (by owner UID).
	removeRefs []types.UID
	// unblockRefs are ownerReferences whose blockOwnerDeletion is to be
	// cleared before the object is deleted.
	unblockRefs []types.UID
	// delete the object with policy.
	delete bool
	policy metav1.DeletionPropagation
}

// decide plans for an object with owners (at least one) and finalizers,
// as kube's garbage collector does:
//
//   - While one owner is solid the object stays; references to dangling
//     owners and to owners deleting their dependents are dropped.
//   - Otherwise, if an owner waits for its dependents and the object has
//     dependents of its own, the object goes in the foreground too, so the
//     owner waits for the whole tree; references that would block the
//     owner are cleared first when a dependent is itself deleting in the
//     foreground, since waiting both ways could deadlock.
//   - Otherwise the object goes, with the propagation its own finalizers
//     ask for (orphan, foregroundDeletion) or in the background.
func decide(owners []owner, finalizers []string, hasDependents, dependentDeletingDependents bool) plan {
	var p plan
	var solids, waits, danglings []owner
	for _, o := range owners {
		switch o.state {
		case solid:
			solids = append(solids, o)
		case waiting:
			waits = append(waits, o)
		default:
			danglings = append(danglings, o)
		}
	}
	switch {
	case len(solids) > 0:
		for _, o := range append(danglings, waits...) {
			p.removeRefs = append(p.removeRefs, o.ref.UID)
		}
	case len(waits) > 0 && hasDependents:
		if dependentDeletingDependents {
			for _, o := range waits {
				if blocks(o.ref) {
					p.unblockRefs = append(p.unblockRefs, o.ref.UID)
				}
			}
		}
		p.delete, p.policy = true, metav1.DeletePropagationForeground
	default:
		p.delete, p.policy = true, policyFor(finalizers)
	}
	return p
}

// policyFor is the propagation an object's own finalizers ask for.
func policyFor(finalizers []string) metav1.DeletionPropagation {
	switch {
	case slices.Contains(finalizers, metav1.FinalizerOrphanDependents):
		return metav1.DeletePropagationOrphan
	case slices.Contains(finalizers, metav1.FinalizerDeleteDependents):
		return metav1.DeletePropagationForeground
	}
	return metav1.DeletePropagationBackground
}

// withoutRefs returns refs without those to the given owner UIDs.
func withoutRefs(refs []metav1.OwnerReference, uids []types.UID) []metav1.OwnerReference {
	return slices.DeleteFunc(slices.Clone(refs), func(r metav1.OwnerReference) bool {
		return slices.Contains(uids, r.UID)
	})
}

// unblocked returns refs with blockOwnerDeletion cleared on those to the
// given owner UIDs.
func unblocked(refs []metav1.OwnerReference, uids []types.UID) []metav1.OwnerReference {
	out := slices.Clone(refs)
	for i := range out {
		if slices.Contains(uids, out[i].UID) {
			no := false
			out[i].BlockOwnerDeletion = &no
		}
	}
	return out
}

// withoutFinalizer returns finalizers without f.
func withoutFinalizer(finalizers []string, f string) []string {
	return slices.DeleteFunc(slices.Clone(finalizers), func(s string) bool { return s == f })
}
