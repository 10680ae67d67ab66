package resp

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// LATENCY reports the per-command latencies the handler records as it executes commands
// (timed as for the slow log, see slowlog.go):
//
//   - LATENCY HISTOGRAM: every command's calls and a histogram of their latencies in
//     power-of-two microsecond buckets, as Redis 7's latency tracking reports it. Always on.
//   - LATENCY LATEST, HISTORY, RESET and DOCTOR: latency spikes, Redis's latency monitor
//     with one event per command name ("get", "hset"...) where Redis has classes
//     ("command", "fast-command"). A spike is an execution that took at least the slow
//     log's threshold (Config.SlowlogThreshold), the only threshold kura has; each event
//     keeps the highest latency of each second for its last 160 seconds with spikes, and
//     the highest ever.

// cmdHistogram is one command's histogram: calls by the bucket of their latency in
// microseconds, bucket b holding (2^(b-1), 2^b] and bucket 0 up to 1 µs. Atomic: every
// connection adds to it.
type cmdHistogram struct {
	buckets [histBuckets]atomic.Int64
}

// histBuckets reach 2^39 µs, about six days; longer calls count in the last.
const histBuckets = 40

func (c *cmdHistogram) add(micros int64) {
	b := 0
	if micros > 1 {
		b = min(bits.Len64(uint64(micros-1)), histBuckets-1)
	}
	c.buckets[b].Add(1)
}

// Redis's latency monitor keeps this many samples per event.
const latencySamples = 160

type latencySample struct{ at, ms int64 } // at in unix seconds

// latencyEvent is one event's samples, a ring, and its highest latency ever.
type latencyEvent struct {
	samples []latencySample // oldest first, at most latencySamples
	max     int64
}

// latencyMonitor holds the events. Only spikes touch it, so one lock is enough.
type latencyMonitor struct {
	mu     sync.Mutex
	events map[string]*latencyEvent
}

// recordSpike records a slow execution of c, which ended at now, as a latency spike.
func (h *Handler) recordSpike(c *command, now, micros int64) {
	m := &h.monitor
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.events == nil {
		m.events = map[string]*latencyEvent{}
	}
	e := m.events[c.name]
	if e == nil {
		e = &latencyEvent{}
		m.events[c.name] = e
	}
	sec, ms := now/microsPerSecond, micros/microsPerMilli
	e.max = max(e.max, ms)
	if n := len(e.samples); n > 0 && e.samples[n-1].at == sec {
		e.samples[n-1].ms = max(e.samples[n-1].ms, ms)
		return
	}
	if len(e.samples) == latencySamples {
		e.samples = append(e.samples[:0], e.samples[1:]...)
	}
	e.samples = append(e.samples, latencySample{sec, ms})
}

var latencySubs = []subcommand{
	{"latest", 2, latencyLatest},
	{"history", 3, latencyHistory},
	{"reset", -2, latencyReset},
	{"doctor", 2, latencyDoctor},
	{"histogram", -2, latencyHistogram},
	{"help", 2, func(_ *Handler, dst []byte, _ [][]byte, _ *Session) []byte {
		return appendHelp(dst,
			"LATENCY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
			"DOCTOR",
			"    Return a human readable latency analysis report.",
			"HISTORY <event>",
			"    Return time-latency samples for the <event> class.",
			"LATEST",
			"    Return the latest latency samples for all events.",
			"RESET [<event> ...]",
			"    Reset latency data of one or more <event> classes.",
			"    (default: reset all data for all event classes)",
			"HISTOGRAM [COMMAND ...]",
			"    Return a cumulative distribution of latencies in the format of a histogram for the specified command names.",
			"    If no commands are specified then all histograms are replied.",
			"HELP",
			"    Prints this help.",
			"Events are command names; a spike is a command slower than the slow log's threshold.")
	}},
}

// LATENCY subcommand ...
func cmdLatency(h *Handler, dst []byte, args [][]byte, s *Session) []byte {
	return dispatchSub(h, dst, args, s, "latency", latencySubs)
}

// sortedEvents returns the events' names in order; the caller holds the monitor's lock.
func (m *latencyMonitor) sortedEvents() []string {
	names := make([]string, 0, len(m.events))
	for n := range m.events {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// LATENCY LATEST: per event, its name, the time and latency of its latest sample and its
// highest latency, in milliseconds.
func latencyLatest(h *Handler, dst []byte, _ [][]byte, _ *Session) []byte {
	m := &h.monitor
	m.mu.Lock()
	defer m.mu.Unlock()
	names := m.sortedEvents()
	dst = appendArray(dst, len(names))
	for _, n := range names {
		e := m.events[n]
		last := e.samples[len(e.samples)-1]
		dst = appendBulkString(appendArray(dst, 4), n)
		dst = appendInt(appendInt(appendInt(dst, last.at), last.ms), e.max)
	}
	return dst
}

// LATENCY HISTORY event: the event's samples, oldest first, each its time and latency.
func latencyHistory(h *Handler, dst []byte, args [][]byte, _ *Session) []byte {
	m := &h.monitor
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.events[string(args[2])]
	if e == nil {
		return appendArray(dst, 0)
	}
	dst = appendArray(dst, len(e.samples))
	for _, smp := range e.samples {
		dst = appendInt(appendInt(appendArray(dst, 2), smp.at), smp.ms)
	}
	return dst
}

// LATENCY RESET [event ...]: forgets the events named (all without names) and replies
// with how many there were.
func latencyReset(h *Handler, dst []byte, args [][]byte, _ *Session) []byte {
	m := &h.monitor
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(args) == 2 {
		n := len(m.events)
		m.events = nil
		return appendInt(dst, int64(n))
	}
	n := 0
	for _, a := range args[2:] {
		if _, ok := m.events[string(a)]; ok {
			delete(m.events, string(a))
			n++
		}
	}
	return appendInt(dst, int64(n))
}

// LATENCY DOCTOR: a report of the spikes per event, in plain text.
func latencyDoctor(h *Handler, dst []byte, _ [][]byte, s *Session) []byte {
	m := &h.monitor
	m.mu.Lock()
	defer m.mu.Unlock()
	var b strings.Builder
	t := h.cfg.SlowlogThreshold
	switch {
	case t < 0:
		b.WriteString("Latency monitoring is disabled: the slow log threshold (slowlog-threshold) is negative.\n")
	case len(m.events) == 0:
		fmt.Fprintf(&b, "No command took %v or more since the last reset: nothing to report.\n", t)
	default:
		fmt.Fprintf(&b, "Latency spikes (commands that took %v or more), by command:\n\n", t)
		for _, n := range m.sortedEvents() {
			writeEventReport(&b, n, m.events[n])
		}
	}
	return s.proto.appendVerbatim(dst, b.String())
}

// writeEventReport writes one event's line of LATENCY DOCTOR, with the statistics Redis
// gives: average and mean deviation of its samples, the period between them, the worst.
func writeEventReport(b *strings.Builder, name string, e *latencyEvent) {
	var sum float64
	for _, smp := range e.samples {
		sum += float64(smp.ms)
	}
	avg := sum / float64(len(e.samples))
	var dev float64
	for _, smp := range e.samples {
		dev += math.Abs(float64(smp.ms) - avg)
	}
	dev /= float64(len(e.samples))
	period := int64(0)
	if n := len(e.samples); n > 1 {
		period = (e.samples[n-1].at - e.samples[0].at) / int64(n-1)
	}
	fmt.Fprintf(b, "%s: %d latency spikes (average %.0fms, mean deviation %.0fms, period %d sec). Worst all time event %dms.\n",
		name, len(e.samples), avg, dev, period, e.max)
}

// LATENCY HISTOGRAM [command ...]: a map of command name to a map of its calls and its
// histogram_usec, a map of bucket bound (µs) to the calls at most that long, for the
// buckets where that count grows; commands never called, or unknown, are left out.
func latencyHistogram(h *Handler, dst []byte, args [][]byte, s *Session) []byte {
	type hist struct {
		name   string
		calls  int64
		bounds []int64 // pairs: bound, cumulative calls
	}
	var out []hist
	for _, c := range h.commandsNamed(args[2:]) {
		if c == nil || slices.ContainsFunc(out, func(x hist) bool { return x.name == c.name }) {
			continue
		}
		x := hist{name: c.name}
		for b := range histBuckets {
			if n := h.latency[c.id].buckets[b].Load(); n > 0 {
				x.calls += n
				x.bounds = append(x.bounds, int64(1)<<b, x.calls)
			}
		}
		if x.calls > 0 {
			out = append(out, x)
		}
	}
	dst = s.proto.appendMap(dst, len(out))
	for _, x := range out {
		dst = s.proto.appendMap(appendBulkString(dst, x.name), 2)
		dst = appendInt(appendBulkString(dst, "calls"), x.calls)
		dst = s.proto.appendMap(appendBulkString(dst, "histogram_usec"), len(x.bounds)/2)
		for _, v := range x.bounds {
			dst = appendInt(dst, v)
		}
	}
	return dst
}

// initObservers sets up what began and ended record, and HRANDFIELD's randomness.
func (h *Handler) initObservers(cfg Config) {
	h.rng.r, h.latency = cfg.Rand, make([]cmdHistogram, len(h.table))
	h.subNames = make([][]subName, len(h.table))
	for _, c := range h.table {
		for _, sc := range containers[c.name] {
			h.subNames[c.id] = append(h.subNames[c.id], subName{sc.name, c.name + "|" + sc.name})
		}
	}
}

// began notes that s starts running c (for CLIENT LIST) and returns when it started, in
// Config.Ticks.
func (h *Handler) began(c *command, args [][]byte, s *Session) int64 {
	start := h.cfg.Ticks()
	s.lastSeen.Store(start)
	s.lastCmd.Store(h.commandName(c, args))
	return start
}

// ended records the latency of a command begun at start: its histogram, the latency
// monitor and the slow log.
func (h *Handler) ended(c *command, args [][]byte, s *Session, start int64) {
	micros := max(h.cfg.Ticks()-start, 0)
	s.took = micros
	h.latency[c.id].add(micros)
	if h.isSlow(micros) { // rare: now the wall clock's time
		now := h.now()
		h.recordSpike(c, now, micros)
		h.recordSlow(args, s, now, micros)
	}
}

// commandName returns the name CLIENT LIST shows for a command: "client|list" for a
// container's known subcommand, as Redis, else the command's own. It does not allocate.
func (h *Handler) commandName(c *command, args [][]byte) *string {
	if subs := h.subNames[c.id]; len(subs) > 0 && len(args) > 1 {
		for i := range subs {
			if equalFold(args[1], subs[i].name) {
				return &subs[i].full
			}
		}
	}
	return &c.name
}

// subName is a container's subcommand: its name and the name CLIENT LIST shows.
type subName struct{ name, full string }

// containers are the container commands' subcommands, by container.
var containers = map[string][]subcommand{
	"client": clientSubs, "command": commandSubs, "config": configSubs, "object": objectSubs,
	"memory": memorySubs, "latency": latencySubs, "slowlog": slowlogSubs, "acl": aclSubcommands,
}
