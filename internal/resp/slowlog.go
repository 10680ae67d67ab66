package resp

import (
	"strconv"
	"sync"
	"time"
)

// The slow log (SLOWLOG GET, LEN, RESET): the last Config.SlowlogMaxLen commands that took
// at least Config.SlowlogThreshold, timed from the start of their execution to their reply
// (store and, for leader commands, the wait for the key's lock included; unknown commands,
// wrong arities and commands queued in MULTI are not executed, so not timed).

// Defaults of the slow log's Config fields, Redis's slowlog-log-slower-than and
// slowlog-max-len.
const (
	DefaultSlowlogThreshold = 10 * time.Millisecond
	DefaultSlowlogMaxLen    = 128
	// MaxSlowlogMaxLen bounds SlowlogMaxLen: an entry keeps up to 32 arguments of 128
	// bytes, so the log holds at most about 256 MiB.
	MaxSlowlogMaxLen = 1 << 16
)

// What an entry keeps of a command, as Redis: at most slowlogMaxArgs arguments (the last
// one saying how many more there were), each cut at slowlogMaxArgBytes.
const (
	slowlogMaxArgs     = 32
	slowlogMaxArgBytes = 128
)

type slowEntry struct {
	id, at, micros int64 // at in unix seconds
	args           [][]byte
	addr, name     string
}

// slowLog is a ring of the newest entries. Only slow commands touch it, so one lock is
// enough.
type slowLog struct {
	mu      sync.Mutex
	entries []slowEntry // oldest first
	nextID  int64
}

// isSlow reports whether a command that took micros is slow: it took at least
// SlowlogThreshold, any command does when that is 1 µs or less (the clock counts whole
// microseconds), none when it is negative.
func (h *Handler) isSlow(micros int64) bool {
	t := h.cfg.SlowlogThreshold
	return t >= 0 && (t <= time.Microsecond || micros >= t.Microseconds())
}

// recordSlow adds a slow command that took micros and ended at now to the log.
func (h *Handler) recordSlow(args [][]byte, s *Session, now, micros int64) {
	s.info.Lock()
	name := s.name
	s.info.Unlock()
	e := slowEntry{at: now / microsPerSecond, micros: micros, args: slowlogArgs(args), addr: s.addr, name: name}
	l := &h.slowlog
	l.mu.Lock()
	defer l.mu.Unlock()
	e.id = l.nextID
	l.nextID++
	if len(l.entries) >= h.cfg.SlowlogMaxLen {
		n := copy(l.entries, l.entries[len(l.entries)-h.cfg.SlowlogMaxLen+1:])
		clear(l.entries[n:])
		l.entries = l.entries[:n]
	}
	l.entries = append(l.entries, e)
}

// slowlogArgs copies what an entry keeps of args, with AUTH's and HELLO AUTH's secrets
// redacted as Redis does.
func slowlogArgs(args [][]byte) [][]byte {
	n := min(len(args), slowlogMaxArgs)
	out := make([][]byte, n)
	for i := range n {
		a := args[i]
		switch {
		case i == slowlogMaxArgs-1 && len(args) > slowlogMaxArgs:
			a = []byte("... (" + strconv.Itoa(len(args)-slowlogMaxArgs+1) + " more arguments)")
		case redacted(args, i):
			a = []byte("(redacted)")
		case len(a) > slowlogMaxArgBytes:
			a = append(a[:slowlogMaxArgBytes:slowlogMaxArgBytes], "... ("+strconv.Itoa(len(a)-slowlogMaxArgBytes)+" more bytes)"...)
		default:
			a = append([]byte{}, a...)
		}
		out[i] = a
	}
	return out
}

// redacted reports whether argument i of a command is a secret: AUTH's arguments, the
// two after HELLO's AUTH, and ACL SETUSER's cleartext password rules (">pw", "<pw").
func redacted(args [][]byte, i int) bool {
	switch {
	case i == 0:
		return false
	case equalFold(args[0], "auth"):
		return true
	case equalFold(args[0], "acl"):
		return i >= 3 && len(args[i]) > 0 && (args[i][0] == '>' || args[i][0] == '<') && equalFold(args[1], "setuser")
	case equalFold(args[0], "hello"):
		for j := 2; j < i && j < len(args); j++ {
			if equalFold(args[j], "auth") && i <= j+2 {
				return true
			}
		}
	}
	return false
}

var slowlogSubs = []subcommand{
	{"get", -2, slowlogGet},
	{"len", 2, func(h *Handler, dst []byte, _ [][]byte, _ *Session) []byte {
		h.slowlog.mu.Lock()
		defer h.slowlog.mu.Unlock()
		return appendInt(dst, int64(len(h.slowlog.entries)))
	}},
	{"reset", 2, func(h *Handler, dst []byte, _ [][]byte, _ *Session) []byte {
		h.slowlog.mu.Lock()
		defer h.slowlog.mu.Unlock()
		h.slowlog.entries = nil
		return appendOK(dst)
	}},
	{"help", 2, func(_ *Handler, dst []byte, _ [][]byte, _ *Session) []byte {
		return appendHelp(dst,
			"SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
			"GET [<count>]",
			"    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
			"    Entries are made of:",
			"    id, timestamp, time in microseconds, arguments array, client IP and port,",
			"    client name",
			"LEN",
			"    Return the length of the slowlog.",
			"RESET",
			"    Reset the slowlog.",
			"HELP",
			"    Prints this help.")
	}},
}

// SLOWLOG subcommand ...
func cmdSlowlog(h *Handler, dst []byte, args [][]byte, s *Session) []byte {
	return dispatchSub(h, dst, args, s, "slowlog", slowlogSubs)
}

// SLOWLOG GET [count]: the newest count entries (10 by default, -1 for all), newest first.
func slowlogGet(h *Handler, dst []byte, args [][]byte, s *Session) []byte {
	count := int64(10)
	switch len(args) {
	case 2:
	case 3:
		n, ok := parseInt(args[2])
		if !ok || n < -1 {
			return appendErr(dst, "ERR count should be greater than or equal to -1")
		}
		count = n
	default:
		return appendErrf(dst, "ERR unknown subcommand or wrong number of arguments for '%s'. Try SLOWLOG HELP.", sanitize(args[1]))
	}
	l := &h.slowlog
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(l.entries)
	if count >= 0 {
		n = int(min(count, int64(n)))
	}
	dst = appendArray(dst, n)
	for i := range n {
		e := &l.entries[len(l.entries)-1-i]
		dst = appendInt(appendInt(appendInt(appendArray(dst, 6), e.id), e.at), e.micros)
		dst = appendArray(dst, len(e.args))
		for _, a := range e.args {
			dst = appendBulk(dst, a)
		}
		dst = appendBulkString(appendBulkString(dst, e.addr), e.name)
	}
	return dst
}
