package enginetest

import (
	"bytes"
	"fmt"

	"github.com/kuradb/kura/internal/row"
)

type opKind uint8

const (
	opApply        opKind = iota // apply a valid batch
	opApplyInvalid               // apply a batch with one invalid mutation: ErrInvalid, nothing applied
	opGet
	opScan
	opAdvance // move the shared clock forward
	opFlush
	opReopen    // Close and Open (persistent engines; others Flush)
	opIterOpen  // open an iterator into a slot and keep it across later operations
	opIterDrain // drain and close the slot's iterator
	opDeleteRange
)

// iterSlots is how many iterators a sequence holds open at once.
const iterSlots = 2

// op is one generated operation; which fields matter depends on kind.
type op struct {
	kind   opKind
	batch  []row.Mutation
	key    []byte
	lo, hi []byte
	micros int64
	slot   int
}

func (o op) String() string {
	switch o.kind {
	case opApply:
		return "apply " + describeBatch(o.batch)
	case opApplyInvalid:
		return "apply-invalid " + describeBatch(o.batch)
	case opGet:
		return fmt.Sprintf("get %q", o.key)
	case opScan:
		return fmt.Sprintf("scan [%s, %s)", fmtBound(o.lo), fmtBound(o.hi))
	case opAdvance:
		return fmt.Sprintf("advance clock %dµs", o.micros)
	case opFlush:
		return "flush"
	case opReopen:
		return "close+open"
	case opIterOpen:
		return fmt.Sprintf("iterator %d open [%s, %s)", o.slot, fmtBound(o.lo), fmtBound(o.hi))
	case opIterDrain:
		return fmt.Sprintf("iterator %d drain", o.slot)
	case opDeleteRange:
		return fmt.Sprintf("delete range [%s, %s)", fmtBound(o.lo), fmtBound(o.hi))
	}
	return fmt.Sprintf("op(%d)", o.kind)
}

// touches reports whether p writes a key that o reads, or opens the iterator o drains.
func (p op) touches(o op) bool {
	if p.kind == opIterOpen && o.kind == opIterDrain && p.slot == o.slot {
		return true
	}
	if p.kind == opDeleteRange {
		return p.deletes(o)
	}
	if p.kind != opApply {
		return false
	}
	for _, m := range p.batch {
		switch o.kind {
		case opGet:
			if bytes.Equal(m.Key, o.key) {
				return true
			}
		case opScan, opIterDrain, opIterOpen:
			return true // a range: every write may matter; historyOf keeps the tail
		case opApply, opApplyInvalid:
			for _, w := range o.batch {
				if bytes.Equal(m.Key, w.Key) {
					return true
				}
			}
		}
	}
	return false
}

// deletes reports whether p, a range deletion, deletes a key that o reads or writes.
func (p op) deletes(o op) bool {
	switch o.kind {
	case opGet:
		return inRange(o.key, p.lo, p.hi)
	case opScan, opIterDrain, opIterOpen:
		return true
	case opApply, opApplyInvalid:
		for _, m := range o.batch {
			if inRange(m.Key, p.lo, p.hi) {
				return true
			}
		}
	}
	return false
}

// generateOps makes n operations from seed. The sequence depends only on seed, n and
// whether any engine persists (close+open is only generated then), never on results.
// Rules that keep results comparable: the clock never moves while an iterator is open
// (expiry inside an iterator may be judged at open or at Next), and close+open only happens
// with no iterator open. Every iterator is drained by the end.
func generateOps(seed uint64, n int, persistent bool) []op {
	g := newGenerator(seed)
	now := StartMicros
	var open [iterSlots]bool
	ops := make([]op, 0, n+iterSlots)
	for len(ops) < n {
		o, ok := g.nextOp(now, &open, persistent)
		if !ok {
			continue
		}
		if o.kind == opAdvance {
			now += o.micros
		}
		ops = append(ops, o)
	}
	for s := range open {
		if open[s] {
			ops = append(ops, op{kind: opIterDrain, slot: s})
		}
	}
	return append(ops, op{kind: opScan})
}

// nextOp draws one operation, or reports false when the draw is not allowed now.
func (g *generator) nextOp(now int64, open *[iterSlots]bool, persistent bool) (op, bool) {
	anyOpen := open[0] || open[1]
	slot := g.rng.IntN(iterSlots)
	switch p := g.rng.IntN(1000); {
	case p < 380:
		return op{kind: opApply, batch: g.batch(now)}, true
	case p < 400:
		return op{kind: opApplyInvalid, batch: g.invalidBatch(now)}, true
	case p < 640:
		return op{kind: opGet, key: g.key()}, true
	case p < 650:
		lo, hi := g.bounds()
		return op{kind: opDeleteRange, lo: lo, hi: hi}, true
	case p < 760:
		lo, hi := g.bounds()
		return op{kind: opScan, lo: lo, hi: hi}, true
	case p < 880:
		return op{kind: opAdvance, micros: 1 + g.rng.Int64N(8)}, !anyOpen
	case p < 910:
		return op{kind: opFlush}, true
	case p < 915:
		return op{kind: opReopen}, persistent && !anyOpen
	case p < 960:
		if open[slot] {
			return op{}, false
		}
		open[slot] = true
		lo, hi := g.bounds()
		return op{kind: opIterOpen, slot: slot, lo: lo, hi: hi}, true
	default:
		if !open[slot] {
			return op{}, false
		}
		open[slot] = false
		return op{kind: opIterDrain, slot: slot}, true
	}
}
