package garbagecollector

import (
	"slices"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// identity names one object: what an ownerReference says, plus the
// namespace (empty for cluster-scoped objects).
type identity struct {
	APIVersion string
	Kind       string
	Namespace  string
	Name       string
	UID        types.UID
}

// object is the metadata the graph needs of an informer object.
type object struct {
	identity
	GVR        schema.GroupVersionResource
	Owners     []metav1.OwnerReference
	Finalizers []string
	Deleting   bool // has a deletionTimestamp
}

// node is one object in the graph. A virtual node stands for an owner the
// graph has only seen named in ownerReferences; it becomes real when an
// informer shows it, or goes when a GET shows it does not exist.
type node struct {
	id       identity
	gvr      schema.GroupVersionResource // zero for virtual nodes
	observed bool
	owners   []metav1.OwnerReference
	// dependents are the nodes whose ownerReferences name this one.
	dependents map[types.UID]*node
	deleting   bool
	// deletingDependents: being deleted in the foreground, waiting for
	// its blocking dependents.
	deletingDependents bool
}

// work is what a graph change asks the workers to look at.
type work struct {
	// attemptDelete are objects that may have to go (or lose references).
	attemptDelete []types.UID
	// orphan are owners whose dependents must lose their references.
	orphan []types.UID
}

func (w *work) delete(uids ...types.UID) { w.attemptDelete = append(w.attemptDelete, uids...) }

// graph is the owner→dependents graph of every watched object, by UID. It
// is safe for concurrent use; its methods do no I/O and return the work
// a change makes necessary.
type graph struct {
	mu    sync.Mutex
	nodes map[types.UID]*node
}

func newGraph() *graph {
	return &graph{nodes: map[types.UID]*node{}}
}

// upsert records an added or updated object.
func (g *graph) upsert(obj object) work {
	g.mu.Lock()
	defer g.mu.Unlock()
	var w work
	n := g.nodes[obj.UID]
	if n == nil {
		n = &node{id: obj.identity, dependents: map[types.UID]*node{}}
		g.nodes[obj.UID] = n
	}
	n.id, n.gvr, n.observed = obj.identity, obj.GVR, true
	g.relink(n, obj.Owners, &w)
	wasDeletingDependents := n.deletingDependents
	n.deleting = obj.Deleting
	n.deletingDependents = obj.Deleting && slices.Contains(obj.Finalizers, metav1.FinalizerDeleteDependents)
	if n.deletingDependents {
		// Itself, to drop the finalizer once nothing blocks it; its
		// dependents, the first time, to delete them.
		w.delete(n.id.UID)
		if !wasDeletingDependents {
			w.delete(uidsOf(n.dependents)...)
		}
	}
	if obj.Deleting && slices.Contains(obj.Finalizers, metav1.FinalizerOrphanDependents) {
		w.orphan = append(w.orphan, n.id.UID)
	}
	return w
}

// remove records a deleted object: its dependents may have lost their
// last owner.
func (g *graph) remove(uid types.UID) work {
	g.mu.Lock()
	defer g.mu.Unlock()
	var w work
	n := g.nodes[uid]
	if n == nil {
		return w
	}
	g.relink(n, nil, &w)
	delete(g.nodes, uid)
	w.delete(uidsOf(n.dependents)...)
	return w
}

// relink makes n's owner links match owners. New links to owners that
// are virtual, or deleting their dependents, make n worth a look;
// virtual owners are verified. Owners that lost a blocking dependent
// and wait for their dependents are looked at again.
func (g *graph) relink(n *node, owners []metav1.OwnerReference, w *work) {
	for _, old := range n.owners {
		cur := findOwner(owners, old.UID)
		owner := g.nodes[old.UID]
		if owner == nil || (cur != nil && (!blocks(old) || blocks(*cur))) {
			continue
		}
		if cur == nil {
			delete(owner.dependents, n.id.UID)
		}
		if owner.deletingDependents {
			w.delete(owner.id.UID)
		}
		if !owner.observed && len(owner.dependents) == 0 {
			delete(g.nodes, owner.id.UID)
		}
	}
	for _, ref := range owners {
		if findOwner(n.owners, ref.UID) != nil {
			continue
		}
		owner := g.nodes[ref.UID]
		if owner == nil {
			owner = &node{id: ownerIdentity(ref, n.id.Namespace), dependents: map[types.UID]*node{}}
			g.nodes[ref.UID] = owner
		}
		if owner.observed && owner.id.Namespace != "" && owner.id.Namespace != n.id.Namespace {
			// A namespaced owner is always in its dependent's namespace:
			// this reference names something else, which the workers
			// look up on the API server.
			w.delete(n.id.UID)
			continue
		}
		owner.dependents[n.id.UID] = n
		if !owner.observed {
			w.delete(owner.id.UID)
		}
		if !owner.observed || owner.deletingDependents {
			w.delete(n.id.UID)
		}
	}
	n.owners = slices.Clone(owners)
}

// snapshot is a copy of what the workers need of one node.
type snapshot struct {
	id                 identity
	gvr                schema.GroupVersionResource
	observed           bool
	deleting           bool
	deletingDependents bool
	// dependents, with the reference each holds to this node.
	dependents []dependent
}

type dependent struct {
	id                 identity
	gvr                schema.GroupVersionResource
	ref                metav1.OwnerReference
	deletingDependents bool
}

// get returns a snapshot of node uid, or false if the graph does not hold it.
func (g *graph) get(uid types.UID) (snapshot, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := g.nodes[uid]
	if n == nil {
		return snapshot{}, false
	}
	s := snapshot{id: n.id, gvr: n.gvr, observed: n.observed, deleting: n.deleting, deletingDependents: n.deletingDependents}
	for _, d := range n.dependents {
		if ref := findOwner(d.owners, uid); ref != nil {
			s.dependents = append(s.dependents, dependent{id: d.id, gvr: d.gvr, ref: *ref, deletingDependents: d.deletingDependents})
		}
	}
	return s, true
}

// blocking are the dependents that hold up a foreground deletion of s.
func (s snapshot) blocking() []dependent {
	var out []dependent
	for _, d := range s.dependents {
		if blocks(d.ref) {
			out = append(out, d)
		}
	}
	return out
}

func blocks(ref metav1.OwnerReference) bool {
	return ref.BlockOwnerDeletion != nil && *ref.BlockOwnerDeletion
}

func findOwner(refs []metav1.OwnerReference, uid types.UID) *metav1.OwnerReference {
	for i := range refs {
		if refs[i].UID == uid {
			return &refs[i]
		}
	}
	return nil
}

// ownerIdentity is the identity an ownerReference of an object in
// namespace names; whether the owner really is namespaced is only known
// once its kind is mapped to a resource.
func ownerIdentity(ref metav1.OwnerReference, namespace string) identity {
	return identity{APIVersion: ref.APIVersion, Kind: ref.Kind, Namespace: namespace, Name: ref.Name, UID: ref.UID}
}

func uidsOf(nodes map[types.UID]*node) []types.UID {
	out := make([]types.UID, 0, len(nodes))
	for uid := range nodes {
		out = append(out, uid)
	}
	slices.Sort(out)
	return out
}
