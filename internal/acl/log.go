package acl

import (
	"sync"
	"time"
)

// DefaultLogMaxLen is how many entries ACL LOG keeps by default (Redis's acllog-max-len).
const DefaultLogMaxLen = 128

// logGroupWindow: a denial like an entry made less than this ago counts in that entry
// instead of adding one (Redis's ACL_LOG_GROUPING_MAX_TIME_DELTA).
const logGroupWindow = time.Minute

// Denial reasons, as ACL LOG's "reason" field names them.
const (
	ReasonAuth    = "auth"
	ReasonCommand = "command"
	ReasonKey     = "key"
)

// LogEntry is one ACL LOG entry: Count denials alike in Reason, Context ("toplevel" or
// "multi"), Object (the command, key, or "AUTH") and Username; ClientInfo is the last
// one's CLIENT INFO line.
type LogEntry struct {
	Count                   int
	Reason, Context, Object string
	Username, ClientInfo    string
	Created, Updated        time.Duration // since the caller's clock origin
}

// Log is ACL LOG: the newest denials first, at most its max length. The zero value keeps
// DefaultLogMaxLen entries. Safe for concurrent use.
type Log struct {
	mu      sync.Mutex
	maxLen  int
	entries []LogEntry // newest first
}

// Add records a denial at e.Updated (Count and Created are set by Add).
func (l *Log) Add(e LogEntry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range l.entries {
		o := &l.entries[i]
		if o.Reason == e.Reason && o.Context == e.Context && o.Object == e.Object &&
			o.Username == e.Username && e.Updated-o.Updated < logGroupWindow {
			o.Count++
			o.ClientInfo, o.Updated = e.ClientInfo, e.Updated
			moved := *o
			copy(l.entries[1:i+1], l.entries[:i])
			l.entries[0] = moved
			return
		}
	}
	e.Count, e.Created = 1, e.Updated
	max := l.maxLen
	if max <= 0 {
		max = DefaultLogMaxLen
	}
	l.entries = append([]LogEntry{e}, l.entries...)
	if len(l.entries) > max {
		l.entries = l.entries[:max]
	}
}

// Entries returns the newest n entries (all for n < 0), newest first.
func (l *Log) Entries(n int) []LogEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n < 0 || n > len(l.entries) {
		n = len(l.entries)
	}
	out := make([]LogEntry, n)
	copy(out, l.entries)
	return out
}

// Reset empties the log.
func (l *Log) Reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entries = nil
}
