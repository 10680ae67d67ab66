package acl

import (
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// Authentication errors. ErrWrongPass covers unknown users, disabled users and wrong
// passwords alike, as Redis's WRONGPASS does.
var (
	ErrWrongPass = errors.New("acl: invalid username-password pair or user is disabled")
	// ErrTooManyFailures wraps a *LimitError.
	ErrTooManyFailures = errors.New("acl: too many failed AUTH attempts")
)

// LimitError is an AUTH refused, without checking the password, because its address
// failed too often (see Limiter).
type LimitError struct{ RetryAfter time.Duration }

func (e *LimitError) Error() string {
	return fmt.Sprintf("%v; retry in %v", ErrTooManyFailures, e.RetryAfter)
}
func (e *LimitError) Unwrap() error { return ErrTooManyFailures }

// Reply is the error's reply text after "ERR ".
func (e *LimitError) Reply() string {
	return fmt.Sprintf("too many failed AUTH attempts from this address; retry in %d s", int64((e.RetryAfter+time.Second-1)/time.Second))
}

// Authenticate checks name's password for a client at addr (its IP: the limiter's key)
// at time now (any monotonic origin) and returns the user. It refuses without hashing
// when addr failed too often (a *LimitError), and otherwise costs one slow hash per
// stored password unless the pair was verified before and the user has not changed since
// (the credential cache). Failures and successes feed the limiter. Safe for concurrent
// use; the slow hash runs without any lock held.
func (r *Registry) Authenticate(name, password, addr string, now time.Duration) (*User, error) {
	if wait, ok := r.limiter.Allow(addr, now); !ok {
		return nil, &LimitError{RetryAfter: wait}
	}
	u := r.Snapshot().User(name)
	if u != nil && u.Enabled && r.check(u, password) {
		r.limiter.Succeeded(addr)
		return u, nil
	}
	if u == nil || !u.Enabled {
		r.burn(password)
	}
	r.limiter.Failed(addr, now)
	return nil, ErrWrongPass
}

// burn costs what checking one password costs, so that a failed AUTH takes as long for an
// unknown or disabled user as for a wrong password: timing does not tell which users
// exist. The hash it checks against is made on first use.
func (r *Registry) burn(password string) {
	r.dummyOnce.Do(func() {
		r.dummy, _ = Hash([]byte("kura: no such user"), r.env.params, r.env.rand)
	})
	_, _ = Verify([]byte(password), r.dummy)
}

// check reports whether password is one of u's.
func (r *Registry) check(u *User, password string) bool {
	if u.NoPass {
		return true
	}
	mac := r.cache.mac(u.Name, password)
	if r.cache.has(u, mac) {
		return true
	}
	for _, h := range u.hashes {
		if ok, _ := Verify([]byte(password), h); ok {
			r.cache.add(u, mac)
			return true
		}
	}
	return false
}

// Credential cache limits.
const (
	// MaxCachedUsers bounds the users the credential cache remembers; past it the least
	// recently used user's entry goes.
	MaxCachedUsers = 1024
	// MaxCachedPasswordsPerUser bounds the verified passwords remembered per user (a user
	// may have several during a password rotation).
	MaxCachedPasswordsPerUser = 4
)

// credCache remembers, per user, HMACs of passwords that verified, under a key drawn at
// start that never leaves the process: a later AUTH with the same pair costs an HMAC
// instead of a slow hash, and the cache's contents are useless to whoever reads the
// process's memory without the key... which it also holds: the point is speed, not
// secrecy beyond the hashes' own. An entry is tied to the *User it was verified against:
// any change to the user makes a new User, so its entries stop matching.
type credCache struct {
	key     []byte
	mu      sync.Mutex
	entries map[string]*cacheEntry
	tick    uint64
}

type cacheEntry struct {
	user *User
	macs [][sha256.Size]byte
	used uint64
}

func (c *credCache) init(rand io.Reader) error {
	c.key = make([]byte, 32)
	if _, err := io.ReadFull(rand, c.key); err != nil {
		return fmt.Errorf("acl: reading the credential cache key: %w", err)
	}
	c.entries = map[string]*cacheEntry{}
	return nil
}

func (c *credCache) mac(name, password string) [sha256.Size]byte {
	m := hmac.New(sha256.New, c.key)
	m.Write([]byte(name))
	m.Write([]byte{0})
	m.Write([]byte(password))
	var out [sha256.Size]byte
	m.Sum(out[:0])
	return out
}

// has reports whether mac was verified against u itself (not an older version of it).
func (c *credCache) has(u *User, mac [sha256.Size]byte) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[u.Name]
	if e == nil || e.user != u {
		return false
	}
	for _, m := range e.macs {
		if hmac.Equal(m[:], mac[:]) {
			c.tick++
			e.used = c.tick
			return true
		}
	}
	return false
}

func (c *credCache) add(u *User, mac [sha256.Size]byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tick++
	e := c.entries[u.Name]
	if e == nil || e.user != u {
		if e == nil && len(c.entries) >= MaxCachedUsers {
			c.evictLocked()
		}
		e = &cacheEntry{user: u}
		c.entries[u.Name] = e
	}
	if len(e.macs) >= MaxCachedPasswordsPerUser {
		e.macs = e.macs[1:]
	}
	e.macs = append(e.macs, mac)
	e.used = c.tick
}

func (c *credCache) evictLocked() {
	var oldest string
	var min uint64
	for n, e := range c.entries {
		if oldest == "" || e.used < min || (e.used == min && n < oldest) {
			oldest, min = n, e.used
		}
	}
	delete(c.entries, oldest)
}

// len is the number of users cached, for tests.
func (c *credCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}
