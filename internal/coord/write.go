package coord

import (
	"fmt"
	"slices"

	"github.com/kuradb/kura/internal/ring"
	"github.com/kuradb/kura/internal/row"
)

// Write is one client write in progress. Its timestamp was assigned before it started
// (by the coordinator's hybrid logical clock), so retries and hints carry the same cells.
// Not safe for concurrent use: the driver feeds it one input at a time.
//
// A write goes to one replica group (StartWrite) or to several (StartWriteGroups: a
// range that is moving is written to its current and its pending replica set). Each
// group counts its own acknowledgements toward its own need at the level, and the write
// succeeds once every group has met its need. A single group's write is laid out to fit
// the allocation size a write had before groups (192 bytes): the later groups are
// allocated apart.
type Write struct {
	m        row.Mutation
	targets  []ring.NodeID        // sent the write from the start, over every group
	deferred []ring.NodeID        // hinted from the start instead (WritePlan.Deferred), over every group
	pending  map[ring.NodeID]bool // targets that have not answered
	first    group                // the first group's count: the only one's, usually
	more     *moreGroups          // nil with a single group
	slowed   bool                 // a fallback came from OnSlow
	replied  bool
}

// group is one replica group's count toward the level.
type group struct {
	need     int32
	acks     int32         // acknowledgements that count
	spare    int32         // acknowledgements from targets outside counted, not yet counted
	fallback bool          // a counted target failed or was slow: every ack counts
	counted  []ring.NodeID // the group's WritePlan.Counted
	deferred []ring.NodeID // its WritePlan.Deferred not yet sent the write, none a target
}

// moreGroups are a write's groups after the first, and every group's replicas (the
// first's included), which tell which groups an answer counts in.
type moreGroups struct {
	groups   []group
	replicas [][]Replica
}

// StartWrite begins writing m at level to replicas under p, and returns the request and
// its first effects. With fewer live replicas than the level needs it replies
// ErrUnavailable at once and sends nothing.
func StartWrite(m row.Mutation, level Level, replicas []Replica, p Policy) (*Write, []Effect) {
	w := &Write{m: m, pending: map[ring.NodeID]bool{}}
	need := level.Required(len(replicas))
	w.first.need = int32(need)
	if live(replicas) < need || need == 0 {
		w.replied = true
		return w, []Effect{Reply{Err: unavailable(need, replicas, false)}}
	}
	plan := p.PlanWrite(replicas, need)
	w.targets, w.deferred = plan.Targets, plan.Deferred
	w.first.counted, w.first.deferred = plan.Counted, plan.Deferred
	return w, w.send(plan.Hinted)
}

// StartWriteGroups begins writing m at level to several replica groups under p: each
// group needs level.Required(len(group)) acknowledgements from its own members, a
// replica in several groups counts in each, and the write succeeds once every group
// has met its need. It replies ErrUnavailable at once, sending nothing, when any group
// has fewer live replicas than it needs; ErrTimeout once some group can no longer meet
// its need. A replica must be described alike in every group it is in.
//
// The policy plans each group on its own (which targets count from the start, which are
// sent the write without waiting for them, which are deferred), and the plans are
// joined: the targets are the union, each sent the write once, asynchronously only if
// it counts in none of its groups from the start, so that a replica one group writes to
// asynchronously (a read-optimized one under EngineAware) is waited for when another
// group must count it (its synchronous replicas are fewer than its need). A replica is
// deferred only if no group makes it a target. A counted target that fails, or OnSlow,
// falls back the groups it concerns only: their acknowledgements all count from then on
// and their deferred replicas are sent the write. With one group it is StartWrite.
func StartWriteGroups(m row.Mutation, level Level, groups [][]Replica, p Policy) (*Write, []Effect) {
	switch len(groups) {
	case 0:
		return StartWrite(m, level, nil, p)
	case 1:
		return StartWrite(m, level, groups[0], p)
	}
	w := &Write{m: m, pending: map[ring.NodeID]bool{}, more: &moreGroups{groups: make([]group, len(groups)-1), replicas: groups}}
	for i, replicas := range groups {
		need := level.Required(len(replicas))
		w.group(i).need = int32(need)
		if live(replicas) < need || need == 0 {
			w.replied = true
			return w, []Effect{Reply{Err: unavailableIn(need, replicas, false, fmt.Sprintf(" in replica group %d of %d", i+1, len(groups)))}}
		}
	}
	var hinted []ring.NodeID
	for i, replicas := range groups {
		g := w.group(i)
		plan := p.PlanWrite(replicas, int(g.need))
		g.counted, g.deferred = plan.Counted, plan.Deferred
		w.targets = appendNew(w.targets, plan.Targets)
		hinted = appendNew(hinted, plan.Hinted)
	}
	for i := range groups {
		g := w.group(i)
		g.deferred = slices.DeleteFunc(g.deferred, func(id ring.NodeID) bool { return slices.Contains(w.targets, id) })
		w.deferred = appendNew(w.deferred, g.deferred)
	}
	return w, w.send(hinted)
}

// appendNew appends to dst the IDs of ids it does not hold yet.
func appendNew(dst, ids []ring.NodeID) []ring.NodeID {
	for _, id := range ids {
		if !slices.Contains(dst, id) {
			dst = append(dst, id)
		}
	}
	return dst
}

// send returns the first effects: the writes to the targets, the hints for hinted (down)
// replicas and for deferred ones.
func (w *Write) send(hinted []ring.NodeID) []Effect {
	var fx []Effect
	for _, id := range w.targets {
		w.pending[id] = true
		fx = append(fx, SendWrite{To: id, Mutation: w.m, Async: !w.countsSomewhere(id)})
	}
	for _, id := range hinted {
		fx = append(fx, StoreHint{For: id, Mutation: w.m})
	}
	for _, id := range w.deferred {
		fx = append(fx, StoreHint{For: id, Mutation: w.m, Deferred: true})
	}
	return fx
}

// groups returns how many groups the write has.
func (w *Write) groups() int {
	if w.more == nil {
		return 1
	}
	return 1 + len(w.more.groups)
}

// group returns group i.
func (w *Write) group(i int) *group {
	if i == 0 {
		return &w.first
	}
	return &w.more.groups[i-1]
}

// in reports whether id is a replica of group i (always, with a single group: only its
// replicas are targets).
func (w *Write) in(i int, id ring.NodeID) bool {
	return w.more == nil || slices.ContainsFunc(w.more.replicas[i], func(r Replica) bool { return r.ID == id })
}

// counts reports whether id's acknowledgement counts toward g now.
func (g *group) counts(id ring.NodeID) bool {
	return g.fallback || g.counted == nil || slices.Contains(g.counted, id)
}

// countsSomewhere reports whether id's acknowledgement counts now in a group it is in.
func (w *Write) countsSomewhere(id ring.NodeID) bool {
	for i := range w.groups() {
		if w.in(i, id) && w.group(i).counts(id) {
			return true
		}
	}
	return false
}

// OnResponse takes replica from's answer: nil for applied, an error for failed. A failed
// replica gets a hint. Answers from replicas not asked, or asked and already answered,
// are ignored.
func (w *Write) OnResponse(from ring.NodeID, err error) []Effect {
	if !w.pending[from] {
		return nil
	}
	delete(w.pending, from)
	if err != nil {
		return w.failed([]ring.NodeID{from})
	}
	for i := range w.groups() {
		switch g := w.group(i); {
		case !w.in(i, from):
		case g.counts(from):
			g.acks++
		default:
			g.spare++
		}
	}
	return w.check()
}

// OnTimeout takes the request's deadline passing: every replica that has not answered
// gets a hint, and the client gets ErrTimeout unless the write already succeeded.
func (w *Write) OnTimeout() []Effect {
	var late []ring.NodeID
	for _, id := range slices.Concat(w.targets, w.deferred) {
		if w.pending[id] {
			late = append(late, id)
			delete(w.pending, id)
		}
	}
	fx := w.failed(late)
	if !w.replied {
		w.replied = true
		fx = append(fx, Reply{Err: ErrTimeout})
	}
	return fx
}

// failed hints the failed replicas and, in each group where a counted one failed, lets
// every ack count.
func (w *Write) failed(ids []ring.NodeID) []Effect {
	var fx []Effect
	for _, id := range ids {
		if !slices.Contains(w.deferred, id) { // those were hinted from the start
			fx = append(fx, StoreHint{For: id, Mutation: w.m})
		}
		for i := range w.groups() {
			if g := w.group(i); !g.fallback && g.counted != nil && slices.Contains(g.counted, id) {
				fx = append(fx, w.fallBack(g)...)
			}
		}
	}
	return append(fx, w.check()...)
}

// fallBack lets every acknowledgement count toward g from now on, held-back ones
// included, and sends the write to g's deferred replicas (already hinted: the hint's
// replay will find the write applied, which is harmless) unless g has met its need or
// the write has replied. A replica sent the write is deferred in no other group: there it
// is a target whose acknowledgement counts once that group falls back too.
func (w *Write) fallBack(g *group) []Effect {
	met := g.acks >= g.need
	g.fallback = true
	g.acks += g.spare
	g.spare = 0
	if w.replied || met {
		return nil
	}
	var fx []Effect
	for _, id := range g.deferred {
		w.pending[id] = true
		fx = append(fx, SendWrite{To: id, Mutation: w.m})
		for j := range w.groups() {
			if o := w.group(j); o != g {
				o.deferred = slices.DeleteFunc(o.deferred, func(d ring.NodeID) bool { return d == id })
			}
		}
	}
	return fx
}

// check replies once every group has enough acknowledgements, or when one can no longer
// get them.
func (w *Write) check() []Effect {
	if w.replied {
		return nil
	}
	met := true
	for i := range w.groups() {
		g := w.group(i)
		if g.acks >= g.need {
			continue
		}
		met = false
		// Any pending target may still count: directly, or after a counted one fails and
		// the group falls back to every acknowledgement (spare ones included).
		if g.acks+g.spare+w.pendingIn(i) < g.need {
			w.replied = true
			return []Effect{Reply{Err: ErrTimeout}}
		}
	}
	if met {
		w.replied = true
		return []Effect{Reply{}}
	}
	return nil
}

// pendingIn counts group i's targets that have not answered.
func (w *Write) pendingIn(i int) int32 {
	if w.more == nil {
		return int32(len(w.pending))
	}
	n := int32(0)
	for _, r := range w.more.replicas[i] {
		if w.pending[r.ID] {
			n++
		}
	}
	return n
}

// FellBack reports whether a counted target failed or was slow (OnSlow), so that every
// acknowledgement counted from then on (the engine-aware write waiting for the
// read-optimized replica), in some group.
func (w *Write) FellBack() bool {
	for i := range w.groups() {
		if w.group(i).fallback {
			return true
		}
	}
	return false
}

// WaitsForCounted reports whether only some targets count toward the level (the plan has
// Counted) in a group that has not met its need yet, so that the driver should call
// OnSlow if they take too long.
func (w *Write) WaitsForCounted() bool {
	if w.replied {
		return false
	}
	for i := range w.groups() {
		if w.group(i).waits() {
			return true
		}
	}
	return false
}

// waits reports whether g waits for its counted targets only.
func (g *group) waits() bool { return g.counted != nil && !g.fallback && g.acks < g.need }

// OnSlow takes the driver's decision that the counted targets are too slow (the paper's
// timeout on a synchronous write): from then on every acknowledgement counts, as when a
// counted target fails, in every group that still waits for its counted targets.
// Targets that have not answered stay pending and get no hint unless they fail or time
// out.
func (w *Write) OnSlow() []Effect {
	if !w.WaitsForCounted() {
		return nil
	}
	w.slowed = true
	var fx []Effect
	for i := range w.groups() {
		if g := w.group(i); g.waits() {
			fx = append(fx, w.fallBack(g)...)
		}
	}
	return append(fx, w.check()...)
}

// Slowed reports whether the write fell back because of OnSlow rather than a failure.
func (w *Write) Slowed() bool { return w.slowed }

// Done reports whether every target has answered or timed out: the driver may forget
// the request.
func (w *Write) Done() bool { return w.replied && len(w.pending) == 0 }
