package flowsim

// minHeap is an indexed binary min-heap of int32 ids keyed by a float64, ties broken by the
// smaller id so that the order (and with it the simulation) is deterministic. pos[id] is the
// id's index in items, or -1 when the id is not in the heap; it grows with the ids.
//
// The simulator keeps two: flows by predicted completion time, and (inside a solve) links by
// fair share. container/heap would do, at the cost of an interface call per comparison on the
// solve's hot path.
type minHeap struct {
	items []heapItem
	pos   []int32
}

type heapItem struct {
	key float64
	id  int32
}

func (h *minHeap) len() int { return len(h.items) }

// min returns the smallest item; the heap must not be empty.
func (h *minHeap) min() heapItem { return h.items[0] }

func (h *minHeap) contains(id int32) bool { return int(id) < len(h.pos) && h.pos[id] >= 0 }

// set inserts id with key, or moves it to key if it is already in the heap.
func (h *minHeap) set(id int32, key float64) {
	for int(id) >= len(h.pos) {
		h.pos = append(h.pos, -1)
	}
	if i := h.pos[id]; i >= 0 {
		old := h.items[i].key
		h.items[i].key = key
		if key < old {
			h.up(int(i))
		} else {
			h.down(int(i))
		}
		return
	}
	h.items = append(h.items, heapItem{key: key, id: id})
	h.pos[id] = int32(len(h.items) - 1)
	h.up(len(h.items) - 1)
}

// remove takes id out of the heap if it is there.
func (h *minHeap) remove(id int32) {
	if !h.contains(id) {
		return
	}
	i := int(h.pos[id])
	last := len(h.items) - 1
	if i != last {
		h.swap(i, last)
	}
	h.items = h.items[:last]
	h.pos[id] = -1
	if i != last {
		h.down(i)
		h.up(i)
	}
}

// pop removes and returns the smallest item; the heap must not be empty.
func (h *minHeap) pop() heapItem {
	it := h.items[0]
	h.remove(it.id)
	return it
}

// clear empties the heap, keeping its memory.
func (h *minHeap) clear() {
	for _, it := range h.items {
		h.pos[it.id] = -1
	}
	h.items = h.items[:0]
}

func (h *minHeap) less(i, j int) bool {
	a, b := h.items[i], h.items[j]
	return a.key < b.key || (a.key == b.key && a.id < b.id)
}

func (h *minHeap) swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.pos[h.items[i].id] = int32(i)
	h.pos[h.items[j].id] = int32(j)
}

func (h *minHeap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(i, p) {
			return
		}
		h.swap(i, p)
		i = p
	}
}

func (h *minHeap) down(i int) {
	n := len(h.items)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && h.less(r, l) {
			m = r
		}
		if !h.less(m, i) {
			return
		}
		h.swap(i, m)
		i = m
	}
}
