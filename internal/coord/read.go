package coord

import (
	"slices"
	"strings"

	"github.com/kuradb/kura/internal/ring"
	"github.com/kuradb/kura/internal/row"
)

// ReadResponse is one replica's answer to a SendRead.
type ReadResponse struct {
	Err    error
	Row    row.Row // when the read asked for data
	Found  bool
	Digest uint64 // when the read asked for a digest
}

// RepairMode says whether a read that found stale replicas waits for their repair.
type RepairMode uint8

const (
	// RepairBackground replies with the newest row at once and repairs in the background
	// (the default).
	RepairBackground RepairMode = iota
	// RepairBlocking replies once the stale replicas have acknowledged the repair, so a
	// later read at the same level cannot see the old row.
	RepairBlocking
)

// Read is one client read in progress. Not safe for concurrent use.
type Read struct {
	key      []byte
	need     int
	mode     RepairMode
	spare    []ring.NodeID
	widen    bool          // on disagreement, ask the spares for data too (ReadPlan.Widen)
	asked    nodeMap[bool] // asked and not answered; the value is true for data
	data     nodeMap[ReadResponse]
	digests  nodeMap[uint64]
	full     bool          // digests disagreed: every answering replica is asked for data
	failures int           // replicas that failed to answer a read
	slowed   int           // replicas asked in place of late ones (OnSlow)
	repairs  nodeMap[bool] // the value is true for a repair the reply waits for
	result   Reply         // the merged row, once resolved
	resolved bool
	replied  bool
}

// StartRead begins reading key at level from replicas under p. With fewer readable
// replicas (up and not refilling) than the level needs it replies ErrUnavailable at once
// and sends nothing.
func StartRead(key []byte, level Level, replicas []Replica, p Policy, mode RepairMode) (*Read, []Effect) {
	rd := &Read{key: key, need: level.Required(len(replicas)), mode: mode}
	if readableCount(replicas) < rd.need || rd.need == 0 {
		rd.replied = true
		return rd, []Effect{Reply{Err: unavailable(rd.need, replicas, true)}}
	}
	plan := p.PlanRead(replicas, rd.need)
	rd.spare, rd.widen = plan.Spare, plan.Widen
	fx := []Effect{rd.ask(plan.Data, true)}
	for _, id := range plan.Digests {
		fx = append(fx, rd.ask(id, false))
	}
	return rd, fx
}

func (rd *Read) ask(id ring.NodeID, data bool) Effect {
	rd.asked.set(id, data)
	return SendRead{To: id, Key: rd.key, Digest: !data}
}

// OnRepairResponse takes replica from's answer to a repair write (nil: applied). In
// RepairBlocking a failed repair fails the read with ErrTimeout: the replica may still
// hold the old row.
func (rd *Read) OnRepairResponse(from ring.NodeID, err error) []Effect {
	if blocking, _ := rd.repairs.get(from); !blocking {
		return nil
	}
	rd.repairs.del(from)
	if err != nil {
		return rd.fail()
	}
	return rd.maybeReply()
}

// OnResponse takes replica from's answer to a read.
func (rd *Read) OnResponse(from ring.NodeID, resp ReadResponse) []Effect {
	wantData, ok := rd.asked.get(from)
	if !ok {
		return nil
	}
	rd.asked.del(from)
	if resp.Err != nil {
		return rd.replace(wantData)
	}
	if rd.full && !wantData {
		// A late digest (the replica was passed over by OnSlow) after the digests
		// disagreed: its row is needed now, as every other answering replica's.
		return []Effect{rd.ask(from, true)}
	}
	if wantData {
		rd.data.set(from, resp)
		rd.digests.del(from)
	} else {
		rd.digests.set(from, resp.Digest)
	}
	return rd.progress()
}

// replace asks a spare replica in place of one that failed, or gives up when none is left
// and too few can still answer.
func (rd *Read) replace(wantData bool) []Effect {
	rd.failures++
	if len(rd.spare) > 0 {
		id := rd.spare[0]
		rd.spare = rd.spare[1:]
		return []Effect{rd.ask(id, wantData || rd.full || len(rd.data) == 0 && !rd.dataAsked())}
	}
	if len(rd.data)+len(rd.digests)+len(rd.asked) < rd.need {
		return rd.fail()
	}
	if len(rd.data) == 0 && !rd.dataAsked() {
		// The data replica failed; a digest replica that answered can send its row.
		if len(rd.digests) > 0 {
			id := rd.digests[0].id
			rd.digests.del(id)
			return []Effect{rd.ask(id, true)}
		}
	}
	return rd.progress()
}

// OnSlow takes the driver's decision that the replicas asked have taken too long (the
// read's counterpart of Write.OnSlow, Cassandra's speculative retry): a spare replica is
// asked in place of each one not yet answered, as if it had failed, while the late ones
// stay asked and may still answer. From then on the read goes on as soon as enough
// answers are in, without waiting for the late ones; a late answer that comes first
// counts as any other. With no spare left, or nothing outstanding, it does nothing.
func (rd *Read) OnSlow() []Effect {
	if !rd.CanSlow() {
		return nil
	}
	var fx []Effect
	for _, e := range rd.asked {
		if len(rd.spare) == 0 {
			break
		}
		id := rd.spare[0]
		rd.spare = rd.spare[1:]
		rd.slowed++
		fx = append(fx, SendRead{To: id, Key: rd.key, Digest: !(e.v || rd.full)})
	}
	for _, e := range fx {
		sr := e.(SendRead)
		rd.asked.set(sr.To, !sr.Digest)
	}
	return fx
}

// SlowSpares returns the spares OnSlow would ask now (none when CanSlow is false), so
// that the driver can judge them before it decides. The slice is the read's own: the
// caller must not modify it.
func (rd *Read) SlowSpares() []ring.NodeID {
	if !rd.CanSlow() {
		return nil
	}
	return rd.spare[:min(len(rd.spare), len(rd.asked))]
}

// CanSlow reports whether OnSlow would ask a spare now: the read has not decided, some
// replica asked has not answered, and a spare is left.
func (rd *Read) CanSlow() bool {
	return !rd.replied && !rd.resolved && len(rd.spare) > 0 && len(rd.asked) > 0
}

// waiting reports whether the read waits for replicas already asked before it decides:
// always, unless OnSlow asked others in their place.
func (rd *Read) waiting() bool { return len(rd.asked) > 0 && rd.slowed == 0 }

func (rd *Read) dataAsked() bool {
	for _, e := range rd.asked {
		if e.v {
			return true
		}
	}
	return false
}

// progress decides once every replica asked has answered (or, after OnSlow, once enough
// have): matching digests reply; a mismatch asks every answering replica for its row;
// full rows are merged, replied and repaired.
func (rd *Read) progress() []Effect {
	if rd.replied || rd.resolved || rd.waiting() || len(rd.data)+len(rd.digests) < rd.need || len(rd.data) == 0 {
		return nil
	}
	if !rd.full {
		// One data read so far, or two when OnSlow asked a spare for the row of a late
		// replica that then answered too.
		d := rd.data[0].v
		want := row.Digest(d.Row, d.Found)
		agree := true
		for _, e := range rd.digests {
			agree = agree && e.v == want
		}
		for _, e := range rd.data[1:] {
			agree = agree && row.Digest(e.v.Row, e.v.Found) == want
		}
		if agree {
			return rd.reply(Reply{Row: d.Row, Found: d.Found})
		}
		rd.full = true
		var fx []Effect
		for _, e := range rd.digests {
			fx = append(fx, rd.ask(e.id, true))
		}
		rd.digests = rd.digests[:0]
		if rd.widen {
			for _, id := range rd.spare {
				fx = append(fx, rd.ask(id, true))
			}
			rd.spare = nil
		}
		if len(fx) == 0 { // the rows that disagreed are all in (after OnSlow): merge them
			return rd.resolve()
		}
		return sortEffects(fx)
	}
	return rd.resolve()
}

// resolve merges every row received, repairs the replicas that lacked part of it, and
// replies (now, or once the repairs are acknowledged in RepairBlocking).
func (rd *Read) resolve() []Effect {
	var merged row.Row
	for _, e := range rd.data {
		if e.v.Found {
			merged = row.Merge(merged, e.v.Row)
		}
	}
	found := !merged.IsEmpty()
	want := row.Digest(merged, found)
	var fx []Effect
	for _, e := range rd.data {
		if row.Digest(e.v.Row, e.v.Found) != want {
			rd.repairs.set(e.id, rd.mode == RepairBlocking)
			fx = append(fx, SendWrite{To: e.id, Mutation: row.Mutation{Key: rd.key, Row: merged.Clone()}, Repair: true})
		}
	}
	if rd.mode == RepairBackground {
		rd.repairs = rd.repairs[:0]
	}
	rd.result, rd.resolved = Reply{Row: merged, Found: found}, true
	return append(sortEffects(fx), rd.maybeReply()...)
}

// maybeReply replies with the resolved row once no blocking repair is outstanding.
func (rd *Read) maybeReply() []Effect {
	if rd.replied || !rd.resolved || len(rd.repairs) > 0 {
		return nil
	}
	return rd.reply(rd.result)
}

func (rd *Read) reply(r Reply) []Effect {
	rd.replied = true
	return []Effect{r}
}

func (rd *Read) fail() []Effect {
	if rd.replied {
		return nil
	}
	return rd.reply(Reply{Err: ErrTimeout})
}

// Disagreed reports whether the answers disagreed, so that rows were asked for, merged
// and the stale replicas repaired.
func (rd *Read) Disagreed() bool { return rd.full }

// Failures returns how many replicas failed to answer a read (each replaced by a spare
// when one was left).
func (rd *Read) Failures() int { return rd.failures }

// Slowed returns how many replicas OnSlow asked in place of late ones.
func (rd *Read) Slowed() int { return rd.slowed }

// OnTimeout takes the request's deadline passing: the client gets ErrTimeout unless it
// already has its answer.
func (rd *Read) OnTimeout() []Effect {
	rd.asked = rd.asked[:0]
	rd.repairs = rd.repairs[:0]
	return rd.fail()
}

// sortEffects orders effects by replica so that transcripts are stable (map order).
func sortEffects(fx []Effect) []Effect {
	to := func(e Effect) ring.NodeID {
		switch e := e.(type) {
		case SendRead:
			return e.To
		case SendWrite:
			return e.To
		}
		return ""
	}
	slices.SortStableFunc(fx, func(a, b Effect) int { return strings.Compare(string(to(a)), string(to(b))) })
	return fx
}
