package coord

import "github.com/kuradb/kura/internal/ring"

// nodeMap is a map from replica to V for the handful of replicas of one request: a slice
// searched linearly, which costs no hashing and, unlike a map, iterates in a fixed order
// (insertion), so that decisions that pick "any" replica are deterministic.
type nodeMap[V any] []nodeEntry[V]

type nodeEntry[V any] struct {
	id ring.NodeID
	v  V
}

func (m nodeMap[V]) get(id ring.NodeID) (V, bool) {
	for _, e := range m {
		if e.id == id {
			return e.v, true
		}
	}
	var zero V
	return zero, false
}

func (m *nodeMap[V]) set(id ring.NodeID, v V) {
	for i := range *m {
		if (*m)[i].id == id {
			(*m)[i].v = v
			return
		}
	}
	*m = append(*m, nodeEntry[V]{id, v})
}

func (m *nodeMap[V]) del(id ring.NodeID) {
	for i, e := range *m {
		if e.id == id {
			*m = append((*m)[:i], (*m)[i+1:]...)
			return
		}
	}
}
