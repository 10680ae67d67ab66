package tiered

import (
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kuradb/kura/internal/access"
	"github.com/kuradb/kura/internal/engine"
)

// Defaults of MigratorConfig.
const (
	DefaultDisplace           = 2
	DefaultMoveBytesPerSecond = 32 << 20
	// defaultRowBytes is the size assumed for a row not on the fast tier when the slow
	// tier cannot tell its average yet.
	defaultRowBytes = 1024
)

// MigratorConfig configures a Migrator.
type MigratorConfig struct {
	// BudgetBytes is how much row data the fast tier may hold.
	BudgetBytes int64
	// Displace is Policy.Displace; default DefaultDisplace.
	Displace float64
	// MoveBytesPerSecond bounds the migration traffic; default DefaultMoveBytesPerSecond.
	MoveBytesPerSecond int64
	// Now is the clock the access tracker is fed with; default time.Now.
	Now func() time.Time
	// Logger receives a line per decision that moves rows, and errors; default discards.
	Logger *slog.Logger
}

func (c MigratorConfig) withDefaults() MigratorConfig {
	if c.Displace <= 0 {
		c.Displace = DefaultDisplace
	}
	if c.MoveBytesPerSecond <= 0 {
		c.MoveBytesPerSecond = DefaultMoveBytesPerSecond
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Migrator decides, at every roll-over of the access tracker's window, which rows belong
// on the fast tier (Policy.Decide on the tracker's counts) and moves them, within a bound
// on bytes per second. Its decisions are Step; Start runs Step once per window.
type Migrator struct {
	db      *DB
	tracker *access.Tracker
	cfg     MigratorConfig
	// budget is the fast tier's budget: cfg.BudgetBytes until SetBudget.
	budget atomic.Int64
	// deviceCap is the budget the fast device has been found to hold (fitDevice), or
	// math.MaxInt64 while it has not been found short. The budget in force is the lower
	// of the two (limit).
	deviceCap atomic.Int64

	mu sync.Mutex // held by Step and promoteRead, which may take minutes on a busy device
	// pool holds, once the budget is full, the fast tier's lowest-scored rows at the last
	// Step, lowest first: the rows a read's promotion may displace (see promoteRead).
	pool []Candidate
	// capChanged is when fitDevice last changed deviceCap.
	capChanged time.Time

	lastMu sync.Mutex
	last   Decision

	started    atomic.Bool
	sampled    sync.WaitGroup // sampleLoop
	stop, done chan struct{}
	stopOnce   sync.Once

	samplesMu sync.Mutex
	samples   []sample // counters over the last minutes, oldest first, for Recent

	// Promotion on read (see promoteRead): keys read from the slow tier since the last
	// drain, and keys whose slow rows writes replaced whole (noteWrite), while the budget
	// has room or pool offers rows.
	readMu   sync.Mutex
	read     map[string]Captured
	full     atomic.Bool // the budget had no room at the last look
	swapping atomic.Bool // the budget is full and pool is not empty
	promoted atomic.Int64
	// promotedWritten counts the promotions whose row a write captured.
	promotedWritten atomic.Int64
	displaced       atomic.Int64
	// reported is displaced at the last Step's log line.
	reported int64
}

// Limits of promotion on read.
const (
	// readDrainEvery is how often the keys read from the slow tier are promoted: soon
	// enough that their blocks are still in the slow tier's block cache, so that the
	// move reads nothing from the slow device.
	readDrainEvery = 100 * time.Millisecond
	// readQueueMax bounds the keys waiting; more are left to the window's decision.
	readQueueMax = 4096
	// poolMax bounds the rows a Step offers for displacement until the next one.
	poolMax = 4096
)

// Decision is what one Step saw and did.
type Decision struct {
	// At is when it ran.
	At time.Time
	// Promoted and Demoted count the rows moved each way; MovedBytes their size.
	Promoted, Demoted int
	MovedBytes        int64
	// Threshold is the lowest score (access.Tracker.Score) of a row on the fast tier once
	// the budget is full: a row must score Displace times more to take its place. It is 0
	// while the budget has room.
	Threshold float64
	// FastBytes is the row data on the fast tier after the moves, by the engine's count.
	FastBytes int64
	// Took is how long the moves took, pauses for the byte rate included.
	Took time.Duration
}

// NewMigrator returns a migrator for db; db must have been opened with a Tracker.
func NewMigrator(db *DB, cfg MigratorConfig) (*Migrator, error) {
	if db.opts.Tracker == nil {
		return nil, fmt.Errorf("tiered: migrator: the engine counts no reads (Options.Tracker is nil)")
	}
	if cfg.BudgetBytes < 0 {
		return nil, fmt.Errorf("tiered: migrator: %w: budget %d bytes", engine.ErrInvalid, cfg.BudgetBytes)
	}
	m := &Migrator{db: db, tracker: db.opts.Tracker, cfg: cfg.withDefaults(),
		stop: make(chan struct{}), done: make(chan struct{}), read: make(map[string]Captured)}
	m.budget.Store(cfg.BudgetBytes)
	m.deviceCap.Store(math.MaxInt64)
	m.seedCap()
	return m, nil
}

// seedCap caps the budget from the start when the fast device cannot take the rest of
// it: at the rows on the fast tier now and four fifths of the room the device has left,
// the rest kept for the store's own overhead (its log, memtables and versions not yet
// merged took about a quarter more than the rows in the evaluation), so that the cap is
// not found by filling the device. fitDevice moves it from there.
func (m *Migrator) seedCap() {
	fast := m.db.FastRowBytes()
	rest := m.budget.Load() - fast
	if rest <= 0 || !m.db.fastLowBy(rest+rest/4) {
		return
	}
	// The largest write the device takes, to a mebibyte: DiskLow answers yes or no.
	lo, hi := int64(0), rest+rest/4
	for hi-lo > 1<<20 {
		if mid := lo + (hi-lo)/2; m.db.fastLowBy(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	m.deviceCap.Store(fast + lo*4/5)
	m.cfg.Logger.Warn("tiered: the fast device cannot hold the budget: budget capped", "cap_bytes", fast+lo*4/5,
		"budget_bytes", m.budget.Load(), "fast_row_bytes", fast, "device_room_bytes", lo)
}

// SetBudget changes the fast tier's budget on a running engine (`kura admin tiers
// --set-budget`): a larger one takes rows read from the slow tier from now on, a smaller
// one demotes the lowest-scored rows over it at the next window's decision.
func (m *Migrator) SetBudget(bytes int64) error {
	if bytes < 0 {
		return fmt.Errorf("tiered: %w: budget %d bytes", engine.ErrInvalid, bytes)
	}
	m.budget.Store(bytes)
	if _, capped := m.DeviceCap(); !capped {
		m.seedCap()
	}
	m.full.Store(m.db.FastRowBytes()+m.db.slowRowBytes() > m.limit())
	return nil
}

// Budget returns the fast tier's budget in bytes of rows, as configured.
func (m *Migrator) Budget() int64 { return m.budget.Load() }

// DeviceCap returns the budget the fast device has been found to hold, and false while
// it has not been found short (see fitDevice).
func (m *Migrator) DeviceCap() (int64, bool) {
	c := m.deviceCap.Load()
	return c, c != math.MaxInt64
}

// BudgetInForce returns the budget the migrator keeps to: the configured one, or less
// while the fast device holds less (DeviceCap).
func (m *Migrator) BudgetInForce() int64 { return m.limit() }

// limit is the budget in force: the configured one, or less if the device holds less.
func (m *Migrator) limit() int64 { return min(m.budget.Load(), m.deviceCap.Load()) }

// capEvery is how long fitDevice waits between changes of the cap: a demoted row's space
// comes back only when the fast store compacts its deletion away, so a device found short
// again moments after a cut has not yet had the chance to gain the room cut.
const capEvery = time.Minute

// fitDevice fits the budget to what the fast device holds, from the device's free space
// at a decision. The budget counts rows' bytes; the fast store takes more (its log,
// memtables, versions not yet merged), and a budget set near the device's size fills it
// first. Found short (past its reserve, engine.DiskWatcher), the device's cap becomes the
// fast rows' bytes less a twentieth, so that the decision demotes the lowest-scored rows
// and hotter ones can take their place; without it no row moves in and only rows written
// move out. Found with room for the rest of the budget and a tenth more, the cap is
// lifted; with room for a tenth of the cap, it rises a twentieth. Cuts and rises come at
// most once every capEvery. It reports whether it cut the cap. The caller holds mu.
func (m *Migrator) fitDevice(now time.Time) (cut bool) {
	c, capped := m.DeviceCap()
	rest := m.budget.Load() - m.db.FastRowBytes()
	settled := m.capChanged.IsZero() || now.Sub(m.capChanged) >= capEvery
	var to int64
	switch {
	case m.db.fastLow():
		to = min(m.db.FastRowBytes(), c)
		to -= to / 20
		if !settled || capped && to >= c {
			return false
		}
	case !capped:
		return false
	case !m.db.fastLowBy(rest + rest/10):
		to = math.MaxInt64
	case settled && !m.db.fastLowBy(c/10):
		to = c + max(c/20, 1)
		if to >= m.budget.Load() {
			to = math.MaxInt64
		}
	default:
		return false
	}
	m.deviceCap.Store(to)
	m.capChanged = now
	if to == math.MaxInt64 {
		m.cfg.Logger.Info("tiered: the fast device has room again: the budget is in force", "budget_bytes", m.budget.Load())
		return false
	}
	if to > c {
		m.cfg.Logger.Info("tiered: the fast device has room: budget cap raised", "cap_bytes", to,
			"budget_bytes", m.budget.Load(), "fast_row_bytes", m.db.FastRowBytes())
		return false
	}
	m.cfg.Logger.Warn("tiered: the fast device holds less than the budget: budget capped", "cap_bytes", to,
		"budget_bytes", m.budget.Load(), "fast_row_bytes", m.db.FastRowBytes())
	return true
}

// policy is the Policy a step applies.
func (m *Migrator) policy() Policy {
	w := m.tracker.Config().Window
	return Policy{BudgetBytes: m.limit(), MinReads: m.tracker.Config().MinCount, Displace: m.cfg.Displace,
		MaxMoveBytes: int64(float64(m.cfg.MoveBytesPerSecond) * w.Seconds())}
}

// Step decides from the tracker's last complete window before now and carries the moves
// out, pausing as needed to stay within MoveBytesPerSecond. It returns the moves made.
func (m *Migrator) Step(now time.Time) ([]Move, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	est := m.db.slowRowBytes()
	// While the migrator runs (Start), hot rows are promoted as they are read
	// (promoteRead), from the row the read captured, and the decision promotes none: a
	// promotion of its own reads the row from the slow device, one row at a time, to save
	// at most the device read of the row's next read, which would promote it anyway; and
	// while it ran (137 s for 1,060 rows, and once the budget was full 236 s for 1,287, on
	// the saturated emulated HDD) it held up every promotion on read. It only makes room
	// (rows over the budget) and, once the budget is full, offers its lowest-scored rows
	// for reads to displace (pool).
	var hot []access.Key
	if !m.started.Load() {
		hot = m.tracker.Top(now)
	}
	m.readMu.Lock()
	queued := make(map[string]bool, len(m.read))
	for k := range m.read {
		queued[k] = true
	}
	m.readMu.Unlock()
	cut := m.fitDevice(now)
	var in Input
	for _, k := range hot {
		if queued[k.Key] {
			continue // promoted on read within moments, without reading the slow tier
		}
		if m.db.HomeOf([]byte(k.Key)) == Fast {
			continue // the fast rows are listed only in part (FastUnlistedBytes)
		}
		in.Hot = append(in.Hot, Candidate{Key: k.Key, Reads: k.Count, Score: m.tracker.Score([]byte(k.Key), now), Bytes: est})
	}
	p := m.policy()
	total, rows := m.db.FastRowBytes(), m.db.fastKeys.Load()
	in.Fast = m.db.lowestFast(listedFast(p.BudgetBytes, total, rows, len(in.Hot)), func(k []byte) (int, float64) {
		return m.tracker.Count(k, now), m.tracker.Score(k, now)
	})
	in.FastUnlistedBytes = total
	for _, c := range in.Fast {
		in.FastUnlistedBytes -= c.Bytes
	}
	moves := p.Decide(in)
	if m.db.fastLow() { // no room on the fast device, whatever the budget says: no promotion
		moves = slices.DeleteFunc(moves, func(mv Move) bool { return mv.To == Fast })
	}
	start := time.Now()
	d := Decision{At: now, Threshold: threshold(p, in, rows-int64(len(in.Fast)), moves)}
	before := m.db.movedBytes[Fast].Load() + m.db.movedBytes[Slow].Load()
	err := m.carryOut(moves, &d)
	if cut && d.Demoted > 0 && err == nil {
		// The demoted rows' deletions sit in the fast store's memtable, which a fast tier
		// taking no rows does not fill: flushed, they reach the tables its compactions
		// merge, and their space comes back.
		if ferr := m.db.tiers[Fast].Flush(); ferr != nil {
			m.cfg.Logger.Warn("tiered: flush the fast tier after a cut", "err", ferr)
		}
	}
	d.MovedBytes = m.db.movedBytes[Fast].Load() + m.db.movedBytes[Slow].Load() - before
	d.Took = time.Since(start)
	d.FastBytes = m.db.FastRowBytes()
	full := d.FastBytes+est > m.limit()
	m.full.Store(full)
	m.pool = nil
	if full && m.started.Load() {
		m.pool = lowestKept(in.Fast, moves, poolMax)
	}
	m.swapping.Store(len(m.pool) > 0)
	if n := m.displaced.Load(); n > m.reported {
		m.cfg.Logger.Info("tiered: reads displaced rows since the last decision", "displaced", n-m.reported,
			"promoted_on_read_total", m.promoted.Load(),
			"of_them_written", m.promotedWritten.Load())
		m.reported = n
	}
	m.lastMu.Lock()
	m.last = d
	m.lastMu.Unlock()
	if len(moves) > 0 {
		m.cfg.Logger.Info("tiered: moved rows", "promoted", d.Promoted, "demoted", d.Demoted,
			"bytes", d.MovedBytes, "took", d.Took, "threshold", d.Threshold, "fast_bytes", d.FastBytes)
	}
	return moves, err
}

// listedFast is how many of the lowest-scored fast rows a Step lists for its decision
// (Input.FastUnlistedBytes): the rows it offers for reads to displace (poolMax), two for
// each hot row (a promotion displaces rows of about its size), and twice the rows that
// would bring the fast tier back within the budget. A decision that would demote more
// demotes what is listed, and the next one goes on.
func listedFast(budget, fastBytes, fastRows int64, hot int) int {
	n := poolMax + 2*hot + 16
	if over := fastBytes - budget; over > 0 && fastRows > 0 {
		n += int(2 * (over/max(1, fastBytes/fastRows) + 1))
	}
	return n
}

// lowestKept returns up to n of fast's rows that moves leave on the fast tier, lowest
// score first.
func lowestKept(fast []Candidate, moves []Move, n int) []Candidate {
	gone := make(map[string]bool, len(moves))
	for _, mv := range moves {
		gone[mv.Key] = mv.To == Slow
	}
	kept := make([]Candidate, 0, len(fast))
	for _, c := range fast {
		if !gone[c.Key] {
			kept = append(kept, c)
		}
	}
	slices.SortFunc(kept, lowestFirst)
	return slices.Clip(kept[:min(n, len(kept))])
}

// carryOut makes the moves in their order, a chunk of one direction at a time, pausing
// between chunks to keep to the byte rate. A Stop cuts the pauses short and ends it.
func (m *Migrator) carryOut(moves []Move, d *Decision) error {
	start := time.Now()
	movedBefore := m.db.movedTotal()
	for len(moves) > 0 {
		to := moves[0].To
		n := 0
		for n < len(moves) && n < moveChunk && moves[n].To == to {
			n++
		}
		keys := make([][]byte, n)
		for i := range n {
			keys[i] = []byte(moves[i].Key)
		}
		if err := m.db.Move(keys, to); err != nil {
			return err
		}
		if to == Fast {
			d.Promoted += n
		} else {
			d.Demoted += n
		}
		moves = moves[n:]
		moved := m.db.movedTotal() - movedBefore
		due := time.Duration(float64(time.Second) * float64(moved) / float64(m.cfg.MoveBytesPerSecond))
		if wait := due - time.Since(start); wait > 0 && len(moves) > 0 {
			select {
			case <-time.After(wait):
			case <-m.stop:
				return nil
			}
		}
	}
	return nil
}

// threshold is the lowest score of a row on the fast tier once the moves are made, if
// the budget is then full; 0 while it has room for a row of the average size. unlisted
// is the number of fast rows not in in.Fast (their bytes are in.FastUnlistedBytes):
// they score at least as high as the listed ones, so if every listed row left, the
// highest listed score stands for theirs.
func threshold(p Policy, in Input, unlisted int64, moves []Move) float64 {
	score := make(map[string]float64, len(in.Fast)+len(in.Hot))
	size := make(map[string]int64, len(in.Fast)+len(in.Hot))
	on := make(map[string]bool, len(in.Fast))
	used := in.FastUnlistedBytes
	for _, c := range append(slices.Clone(in.Hot), in.Fast...) {
		score[c.Key], size[c.Key] = c.Score, c.Bytes
	}
	for _, c := range in.Fast {
		on[c.Key] = true
		used += c.Bytes
	}
	for _, mv := range moves {
		if mv.To == Fast {
			used += size[mv.Key]
		} else {
			used -= size[mv.Key]
		}
		on[mv.Key] = mv.To == Fast
	}
	kept := unlisted
	for _, ok := range on {
		if ok {
			kept++
		}
	}
	if kept == 0 || p.BudgetBytes-used >= used/kept {
		return 0
	}
	least := -1.0
	for k, ok := range on {
		if ok && (least < 0 || score[k] < least) {
			least = score[k]
		}
	}
	if least < 0 { // every listed row left: the unlisted ones score no lower than they did
		for _, c := range in.Fast {
			least = max(least, c.Score)
		}
	}
	return max(least, 0)
}

// Last returns the latest decision.
func (m *Migrator) Last() Decision {
	m.lastMu.Lock()
	defer m.lastMu.Unlock()
	return m.last
}

// Start runs Step once after every roll-over of the tracker's window, checked ten times
// a window, until Stop. It also promotes the rows read from the slow tier as they are
// read (every readDrainEvery), rather than at the window's end: while the budget has
// room, those hot by the paper's rule (K=1), so that the fast tier fills as fast as
// clients name rows; once it is full, those that score Displace times higher than rows
// the last Step offered, which they displace. Such a promotion copies the row the
// client's read saw, unless a write to its stripe came since, so it reads nothing from the
// slow device. Writes, when the engine counts them (Options.CountWrites), rank rows, and
// those that replace a row whole (a SET) are promoted like reads, from the row they leave
// (DB.captureWrites, noteWrite). Other writes move nothing: such a row moves at its next
// read, from that read's capture. (Promoted as they were written, rows had nothing
// captured and each promotion read the slow device: on the emulated HDD the fast tier
// filled ten times slower than on reads alone, docs/benchmarks.md at 77be0fa.)
func (m *Migrator) Start() {
	if m.started.CompareAndSwap(false, true) {
		m.sampled.Add(1)
		w := m.tracker.Config().Window
		m.full.Store(m.db.FastRowBytes()+m.db.slowRowBytes() > m.limit())
		hook := m.noteRead
		m.db.slowRead.Store(&hook)
		written := m.noteWrite
		m.db.slowWrite.Store(&written)
		go m.loop(w, m.cfg.Now().UnixNano()/int64(w))
		go m.sampleLoop(max(w/10, 10*time.Millisecond))
	}
}

// sampleLoop samples the counters every interval until Stop, on a goroutine of its own:
// moves on a busy slow device can hold the decision loop for minutes.
func (m *Migrator) sampleLoop(interval time.Duration) {
	defer m.sampled.Done()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-tick.C:
			m.sample(m.cfg.Now())
		}
	}
}

// noteRead queues a key just read from the slow tier, with the row the read saw (see
// queue).
func (m *Migrator) noteRead(key, stored []byte, token uint64) {
	m.queue(key, Captured{Stored: stored, Token: token})
}

// noteWrite queues a key whose slow row a write replaced whole (DB.captureWrites), as
// noteRead does a key read: the row is known without reading the slow device, so
// promoting it costs a write to the fast one, and under a mixed workload the fast tier
// fills from the rows written as well as those read.
func (m *Migrator) noteWrite(key, stored []byte, token uint64) {
	m.queue(key, Captured{Stored: stored, Token: token, Written: true})
}

// queue queues key with its capture for promoteRead, unless the budget is full and no
// Step has offered rows to displace. A capture replaces the key's queued one, which is
// older; a new key waits only while the queue holds fewer than readQueueMax.
func (m *Migrator) queue(key []byte, c Captured) {
	if m.full.Load() && !m.swapping.Load() {
		return
	}
	m.readMu.Lock()
	if _, queued := m.read[string(key)]; queued || len(m.read) < readQueueMax {
		m.read[string(key)] = c
	}
	m.readMu.Unlock()
}

// loop steps whenever the window differs from lastWindow, the one Start began in, and
// promotes the rows read from the slow tier in between.
func (m *Migrator) loop(w time.Duration, lastWindow int64) {
	defer close(m.done)
	tick := time.NewTicker(max(w/10, 10*time.Millisecond))
	defer tick.Stop()
	drain := time.NewTicker(readDrainEvery)
	defer drain.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-drain.C:
			if err := m.promoteRead(m.cfg.Now()); err != nil {
				m.cfg.Logger.Error("tiered: promotion on read", "err", err)
			}
			continue
		case <-tick.C:
		}
		now := m.cfg.Now()
		if win := now.UnixNano() / int64(w); win != lastWindow {
			lastWindow = win
			if _, err := m.Step(now); err != nil {
				m.cfg.Logger.Error("tiered: migration", "err", err)
			}
		}
	}
}

// promoteRead moves the queued keys that are hot (read at least K times in this window or
// the last, the read that queued them counted) to the fast tier, highest score first, at
// most the byte rate's share of readDrainEvery: into the budget's room while it has some,
// and once it is full in place of rows the last Step offered (pool) that score Displace
// times lower now, which move to the slow tier first. The same Policy.Decide as a Step's
// decides, over the queued keys and the offered rows; but a promotion here copies the row
// the read captured, so a swap reads nothing from the slow device (the demoted row is read
// from the fast one).
func (m *Migrator) promoteRead(now time.Time) error {
	m.readMu.Lock()
	queued := m.read
	m.read = make(map[string]Captured, len(queued))
	m.readMu.Unlock()
	if len(queued) == 0 || m.db.fastLow() { // no room on the fast device: no promotion
		return nil
	}
	m.mu.Lock() // not during a Step
	defer m.mu.Unlock()
	est := m.db.slowRowBytes()
	p := m.policy()
	var hot []Candidate
	for k := range queued {
		kb := []byte(k)
		if m.db.HomeOf(kb) != Slow {
			continue
		}
		recent := m.tracker.Recent(kb, now)
		// The read that queued the key counts, however late the drain: by the time a
		// starved drain runs, that read's window may have rolled out of Count and Recent.
		reads := max(m.tracker.Count(kb, now), recent, 1)
		if reads >= p.MinReads {
			hot = append(hot, Candidate{Key: k, Reads: reads, Score: m.tracker.Score(kb, now), Bytes: est})
		}
	}
	room := max(0, m.limit()-m.db.FastRowBytes())
	var offered []Candidate
	var offeredBytes int64
	if room < est*int64(len(hot)) { // rescore as many of the offered rows as could go
		for _, c := range m.pool {
			if len(offered) >= 2*len(hot)+16 {
				break
			}
			kb := []byte(c.Key)
			if m.db.HomeOf(kb) != Fast {
				continue
			}
			recent := m.tracker.Recent(kb, now)
			c.Reads, c.Score = max(m.tracker.Count(kb, now), recent), m.tracker.Score(kb, now)
			offered = append(offered, c)
			offeredBytes += c.Bytes
		}
	}
	p.BudgetBytes = room + offeredBytes
	p.MaxMoveBytes = max(est, int64(float64(m.cfg.MoveBytesPerSecond)*readDrainEvery.Seconds()))
	var promote, demote [][]byte
	for _, mv := range p.Decide(Input{Fast: offered, Hot: hot}) {
		if mv.To == Fast {
			promote = append(promote, []byte(mv.Key))
		} else {
			demote = append(demote, []byte(mv.Key))
		}
	}
	defer func() {
		m.full.Store(m.db.FastRowBytes()+est > m.limit())
		m.swapping.Store(len(m.pool) > 0)
	}()
	if len(demote) > 0 {
		if err := m.db.Move(demote, Slow); err != nil {
			return err
		}
		m.displaced.Add(int64(len(demote)))
		gone := make(map[string]bool, len(demote))
		for _, k := range demote {
			gone[string(k)] = true
		}
		m.pool = slices.DeleteFunc(m.pool, func(c Candidate) bool { return gone[c.Key] })
	}
	if len(promote) == 0 {
		return nil
	}
	if err := m.db.moveCaptured(promote, queued); err != nil {
		return err
	}
	m.promoted.Add(int64(len(promote)))
	for _, k := range promote {
		if queued[string(k)].Written {
			m.promotedWritten.Add(1)
		}
	}
	return nil
}

// PromotedOnRead is the number of rows promoted as they were read, or written when the
// engine counts writes (see Start).
func (m *Migrator) PromotedOnRead() int64 { return m.promoted.Load() }

// PromotedOnWrite is the part of PromotedOnRead whose rows a write captured (noteWrite).
func (m *Migrator) PromotedOnWrite() int64 { return m.promotedWritten.Load() }

// DisplacedOnRead is the number of rows moved to the slow tier to make room for rows
// promoted as they were read, once the budget was full.
func (m *Migrator) DisplacedOnRead() int64 { return m.displaced.Load() }

// Stop ends the loop started by Start, cutting a pause between moves short, and waits
// for it. It is safe to call more than once, and without Start.
func (m *Migrator) Stop() {
	m.stopOnce.Do(func() { close(m.stop) })
	if m.started.Load() {
		<-m.done
		m.sampled.Wait()
		m.db.slowRead.Store(nil)
		m.db.slowWrite.Store(nil)
	}
}

// sample is the engine's counters at one moment.
type sample struct {
	at    time.Time
	reads [2]int64
	moved int64
}

// Bounds of the samples kept for Recent.
const (
	sampleKeep    = 2 * time.Minute
	sampleMaxKept = 1024
)

// sample records the counters at now, dropping samples older than sampleKeep.
func (m *Migrator) sample(now time.Time) {
	s := sample{at: now, reads: [2]int64{m.db.reads[Slow].Load(), m.db.reads[Fast].Load()}, moved: m.db.movedTotal()}
	m.samplesMu.Lock()
	defer m.samplesMu.Unlock()
	m.samples = append(m.samples, s)
	drop := 0
	for drop < len(m.samples)-1 && (now.Sub(m.samples[drop].at) > sampleKeep || len(m.samples)-drop > sampleMaxKept) {
		drop++
	}
	m.samples = m.samples[drop:]
}

// Rates are the engine's recent activity.
type Rates struct {
	// Over is the span the figures cover (up to the span asked for, less when the
	// migrator has not run that long).
	Over time.Duration
	// Reads is the number of reads in that span, and FastShare the share of them the
	// fast tier served (0 when there were none).
	Reads     int64
	FastShare float64
	// MovedBytesPerSecond is the migration traffic.
	MovedBytesPerSecond float64
}

// Recent returns the rates over the last span before now (measured from samples taken ten
// times a window while Start runs), with the current counters as the end point.
func (m *Migrator) Recent(span time.Duration, now time.Time) Rates {
	end := sample{at: now, reads: [2]int64{m.db.reads[Slow].Load(), m.db.reads[Fast].Load()}, moved: m.db.movedTotal()}
	m.samplesMu.Lock()
	start := end
	for _, s := range m.samples {
		if now.Sub(s.at) <= span {
			start = s
			break
		}
	}
	m.samplesMu.Unlock()
	return rates(start, end)
}

// rates are the figures between two samples.
func rates(a, b sample) Rates {
	r := Rates{Over: b.at.Sub(a.at)}
	fast, slow := b.reads[Fast]-a.reads[Fast], b.reads[Slow]-a.reads[Slow]
	r.Reads = fast + slow
	if r.Reads > 0 {
		r.FastShare = float64(fast) / float64(r.Reads)
	}
	if r.Over > 0 {
		r.MovedBytesPerSecond = float64(b.moved-a.moved) / r.Over.Seconds()
	}
	return r
}

// SinceOpen returns the rates since the engine opened, up to now.
func (m *Migrator) SinceOpen(opened, now time.Time) Rates {
	return rates(sample{at: opened}, sample{at: now, reads: [2]int64{m.db.reads[Slow].Load(), m.db.reads[Fast].Load()}, moved: m.db.movedTotal()})
}
