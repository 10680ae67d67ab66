package machine

import (
	"container/heap"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/cluster"
	"github.com/kuradb/kura/internal/coord"
	"github.com/kuradb/kura/internal/ring"
	"github.com/kuradb/kura/internal/row"
)

// sim runs one Node in virtual time against modelled replicas: the smallest simulator,
// enough to test the node's decisions without waiting for a clock. Events (answers
// arriving, ops' timers) run in order of virtual time, and of scheduling among equals.
type sim struct {
	t     *testing.T
	n     *Node
	now   time.Time
	reps  map[ring.NodeID]*simReplica
	q     events
	seq   int
	hints []coord.StoreHint
}

// simReplica is a replica's model: its rows, and how long it takes to answer.
type simReplica struct {
	id                    ring.NodeID
	role                  ring.Role
	host                  string
	rows                  map[string]row.Row
	readDelay, writeDelay time.Duration
	held, maxHeld         int // writes sent and not answered, now and at most
	writes                int // writes received
}

var t0 = time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)

// newSim returns a node n1 coordinating for replicas n1, n2 and n3 with roles r1, r2 and
// r3 on hosts h1, h2 and h3 (replication factor 3: every key's replica set is all three),
// configured by cfg, which it completes.
func newSim(t *testing.T, cfg Config, r1, r2, r3 ring.Role) *sim {
	s := &sim{t: t, now: t0, reps: map[ring.NodeID]*simReplica{}}
	var members []cluster.Member
	for i, role := range []ring.Role{r1, r2, r3} {
		id := ring.NodeID([]string{"n1", "n2", "n3"}[i])
		host := []string{"h1", "h2", "h3"}[i]
		s.reps[id] = &simReplica{id: id, role: role, host: host, rows: map[string]row.Row{}}
		members = append(members, cluster.Member{ID: id, Host: host, Role: role, Up: true, Status: cluster.Normal,
			Tokens: []ring.Token{ring.Token(int64(i-1) * 1000)}})
	}
	cfg.Self, cfg.ReplicationFactor = "n1", 3
	if cfg.Strategy == nil {
		cfg.Strategy = ring.Simple{}
	}
	if cfg.Policy == nil {
		cfg.Policy = coord.Uniform{}
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 2 * time.Second
	}
	s.n = New(cfg)
	s.setMembers(members)
	return s
}

// setMembers gives the node a view of members.
func (s *sim) setMembers(members []cluster.Member) {
	var nodes []ring.Node
	for _, m := range members {
		nodes = append(nodes, ring.Node{ID: m.ID, Host: m.Host, Role: m.Role, Tokens: m.Tokens})
	}
	r, err := ring.New(nodes)
	if err != nil {
		s.t.Fatal(err)
	}
	s.n.SetView(members, r)
}

// setUp sets whether the failure detector finds id up.
func (s *sim) setUp(id ring.NodeID, up bool) {
	var members []cluster.Member
	for _, rid := range []ring.NodeID{"n1", "n2", "n3"} {
		m, _ := s.n.Member(rid)
		if rid == id {
			m.Up = up
		}
		members = append(members, m)
	}
	s.setMembers(members)
}

type event struct {
	at  time.Time
	seq int
	fn  func()
}

type events []event

func (q events) Len() int { return len(q) }
func (q events) Less(i, j int) bool {
	if !q[i].at.Equal(q[j].at) {
		return q[i].at.Before(q[j].at)
	}
	return q[i].seq < q[j].seq
}
func (q events) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *events) Push(x any)   { *q = append(*q, x.(event)) }
func (q *events) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

// at schedules fn at virtual time when.
func (s *sim) at(when time.Time, fn func()) {
	s.seq++
	heap.Push(&s.q, event{at: when, seq: s.seq, fn: fn})
}

// maxEvents bounds a runUntil: an op whose timer fires without it doing anything would
// otherwise be rearmed at the same instant for ever.
const maxEvents = 1_000_000

// runUntil runs events in order until done reports true; it fails the test if the events
// run out first, or go on without end.
func (s *sim) runUntil(what string, done func() bool) {
	s.t.Helper()
	for n := 0; !done(); n++ {
		if len(s.q) == 0 || n == maxEvents {
			s.t.Fatalf("%d events run, %d left, and not yet: %s", n, len(s.q), what)
		}
		e := heap.Pop(&s.q).(event)
		s.now = e.at
		e.fn()
	}
}

// advance runs every event due within d, and moves the clock d on.
func (s *sim) advance(d time.Duration) {
	s.t.Helper()
	end := s.now.Add(d)
	for n := 0; len(s.q) > 0 && !s.q[0].at.After(end); n++ {
		if n == maxEvents {
			s.t.Fatalf("%d events run within %v, and more to come", n, d)
		}
		e := heap.Pop(&s.q).(event)
		s.now = e.at
		e.fn()
	}
	s.now = end
}

// write is one simulated client write.
type write struct {
	s       *sim
	op      *WriteOp
	start   time.Time
	armed   time.Time
	reply   *coord.Reply
	took    time.Duration
	slow    *SlowWrite
	onReply func()
}

// startWrite starts a write of key at level now.
func (s *sim) startWrite(key string, level coord.Level) *write {
	w := &write{s: s, start: s.now}
	m := row.Mutation{Key: []byte(key), Row: row.Row{Cells: []row.Cell{{Name: []byte("c"), Value: []byte("v"),
		Timestamp: s.now.UnixMicro()}}}}
	w.op = &WriteOp{}
	w.handle(s.n.StartWrite(w.op, s.now, m, level))
	return w
}

// writeSync writes key and runs the simulation until the write replies.
func (s *sim) writeSync(key string, level coord.Level) *write {
	w := s.startWrite(key, level)
	s.runUntil("the write of "+key+" replies", func() bool { return w.reply != nil })
	return w
}

func (w *write) handle(r Ready) {
	s := w.s
	for _, e := range r.Effects {
		switch e := e.(type) {
		case coord.SendWrite:
			s.sendWrite(e, func(at time.Time, err error) { w.handle(w.op.Answer(at, e.To, err)) })
		case coord.StoreHint:
			s.hints = append(s.hints, e)
		}
	}
	if r.Replied && w.reply == nil {
		w.reply, w.took, w.slow = &r.Reply, s.now.Sub(w.start), r.SlowWrite
		if w.onReply != nil {
			w.onReply()
		}
	}
	if next := w.op.Next(); !next.IsZero() && !next.Equal(w.armed) {
		w.armed = next
		s.at(next, func() {
			if w.armed.Equal(next) {
				w.armed = time.Time{}
				w.handle(w.op.Timer(s.now))
			}
		})
	}
}

// sendWrite delivers e to its replica after the replica's write delay, then answers
// with answer; a non-repair write's answer is reported to the node (WriteAnswered).
func (s *sim) sendWrite(e coord.SendWrite, answer func(time.Time, error)) {
	rep, sent := s.reps[e.To], s.now
	rep.held++
	rep.maxHeld = max(rep.maxHeld, rep.held)
	rep.writes++
	s.at(s.now.Add(rep.writeDelay), func() {
		rep.held--
		rep.rows[string(e.Mutation.Key)] = row.Merge(rep.rows[string(e.Mutation.Key)], e.Mutation.Row)
		if !e.Repair {
			s.n.WriteAnswered(e.To, e.Async, s.now.Sub(sent), false, s.now)
		}
		answer(s.now, nil)
	})
}

// read is one simulated client read.
type read struct {
	s     *sim
	op    *ReadOp
	start time.Time
	armed time.Time
	reply *coord.Reply
	took  time.Duration
}

// readSync reads key at level and runs the simulation until the read replies.
func (s *sim) readSync(key string, level coord.Level) *read {
	rd := &read{s: s, start: s.now}
	rd.op = &ReadOp{}
	rd.handle(s.n.StartRead(rd.op, s.now, []byte(key), level))
	s.runUntil("the read of "+key+" replies", func() bool { return rd.reply != nil })
	return rd
}

func (rd *read) handle(r Ready) {
	s := rd.s
	if rd.reply != nil {
		return // the read is over; its repairs carry on without it
	}
	for _, e := range r.Effects {
		switch e := e.(type) {
		case coord.SendRead:
			rep, sent := s.reps[e.To], s.now
			s.at(s.now.Add(rep.readDelay), func() {
				got, found := rep.rows[string(e.Key)]
				resp := coord.ReadResponse{Row: got, Found: found}
				if e.Digest {
					resp = coord.ReadResponse{Digest: row.Digest(got, found)}
				}
				s.n.ReadAnswered(e.To, s.now.Sub(sent), s.now)
				rd.handle(rd.op.Answer(s.now, e.To, resp))
			})
		case coord.SendWrite:
			s.sendWrite(e, func(at time.Time, err error) { rd.handle(rd.op.RepairAnswer(at, e.To, err)) })
		}
	}
	if r.Replied {
		rd.reply, rd.took = &r.Reply, s.now.Sub(rd.start)
		return
	}
	if next := rd.op.Next(); !next.IsZero() && !next.Equal(rd.armed) {
		rd.armed = next
		s.at(next, func() {
			if rd.armed.Equal(next) {
				rd.armed = time.Time{}
				rd.handle(rd.op.Timer(s.now))
			}
		})
	}
}

// hintsFor counts the hints stored for id.
func (s *sim) hintsFor(id ring.NodeID) int {
	n := 0
	for _, h := range s.hints {
		if h.For == id {
			n++
		}
	}
	return n
}

// counts is a Metrics that counts, for tests.
type counts struct {
	requests, sent, repairs, deferred, denied, quick int
	failures, slowed, disagreed                      int
	fellBack, writeSlowed                            int
}

func (c *counts) Request(string, time.Duration, error) { c.requests++ }
func (c *counts) SentTo(ring.Role, bool)               { c.sent++ }
func (c *counts) ReadDone(failures int, disagreed bool, slowed int) {
	c.failures += failures
	c.slowed += slowed
	if disagreed {
		c.disagreed++
	}
}
func (c *counts) WriteDone(fellBack, slowed bool) {
	if fellBack {
		c.fellBack++
	}
	if slowed {
		c.writeSlowed++
	}
}
func (c *counts) RetryDenied()        { c.denied++ }
func (c *counts) RetryToQuickSpares() { c.quick++ }
func (c *counts) Deferred()           { c.deferred++ }
func (c *counts) Repair()             { c.repairs++ }
