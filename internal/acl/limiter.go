package acl

import (
	"sync"
	"time"
)

// Failed-AUTH limits, per client address (IP). An address that fails MaxAuthFailures
// times within AuthFailureWindow is refused for AuthLockout, without its passwords being
// checked: guessing costs the attacker time, and costs the server no slow hashes. A
// success clears the address's record.
const (
	MaxAuthFailures   = 10
	AuthFailureWindow = time.Minute
	AuthLockout       = time.Minute
	// MaxTrackedAddrs bounds the table; past it, expired records go first, then the one
	// that failed longest ago.
	MaxTrackedAddrs = 10000
)

// Limiter counts failed AUTHs per address. Times are durations since any fixed origin
// (a monotonic clock). The zero value is ready; safe for concurrent use.
type Limiter struct {
	mu    sync.Mutex
	addrs map[string]*failures
}

type failures struct {
	count        int
	windowStart  time.Duration
	last         time.Duration
	blockedUntil time.Duration
}

// Allow reports whether addr may try to authenticate at now, and if not how long it must
// wait.
func (l *Limiter) Allow(addr string, now time.Duration) (wait time.Duration, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f := l.addrs[addr]
	if f == nil || now >= f.blockedUntil {
		return 0, true
	}
	return f.blockedUntil - now, false
}

// Failed records a failed attempt from addr at now.
func (l *Limiter) Failed(addr string, now time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.addrs == nil {
		l.addrs = map[string]*failures{}
	}
	f := l.addrs[addr]
	if f == nil {
		if len(l.addrs) >= MaxTrackedAddrs {
			l.evictLocked(now)
		}
		f = &failures{windowStart: now}
		l.addrs[addr] = f
	}
	if now-f.windowStart >= AuthFailureWindow {
		f.count, f.windowStart = 0, now
	}
	f.count++
	f.last = now
	if f.count >= MaxAuthFailures {
		f.blockedUntil = now + AuthLockout
		f.count, f.windowStart = 0, now+AuthLockout
	}
}

// Succeeded clears addr's record.
func (l *Limiter) Succeeded(addr string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.addrs, addr)
}

// Len is the number of addresses tracked.
func (l *Limiter) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.addrs)
}

func (l *Limiter) evictLocked(now time.Duration) {
	var oldest string
	for a, f := range l.addrs {
		if now >= f.blockedUntil && now-f.windowStart >= AuthFailureWindow {
			delete(l.addrs, a)
		} else if o := l.addrs[oldest]; o == nil || f.last < o.last || (f.last == o.last && a < oldest) {
			oldest = a
		}
	}
	if len(l.addrs) >= MaxTrackedAddrs {
		delete(l.addrs, oldest)
	}
}
