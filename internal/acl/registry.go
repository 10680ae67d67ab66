package acl

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
)

// DefaultUser is the user a connection starts as, which always exists.
const DefaultUser = "default"

// defaultUserRules make the default user of a fresh registry: Redis's.
var defaultUserRules = []string{"on", "nopass", "~*", "&*", "+@all"}

// Snapshot is one immutable version of the user set. It is safe for concurrent use.
type Snapshot struct {
	version uint64
	users   map[string]*User
}

// Version counts the changes applied since the registry was made (0 for the first set).
func (s *Snapshot) Version() uint64 { return s.version }

// User returns the user named name, or nil.
func (s *Snapshot) User(name string) *User { return s.users[name] }

// Users returns every user, sorted by name.
func (s *Snapshot) Users() []*User {
	out := make([]*User, 0, len(s.users))
	for _, u := range s.users {
		out = append(out, u)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// snapshotVersion is the version of Snapshot's encoding.
const snapshotVersion = 1

type encodedSnapshot struct {
	V       int      `json:"v"`
	Version uint64   `json:"version"`
	Users   []string `json:"users"` // ACL LIST lines
}

// Encode returns the whole user set as JSON with a format version:
// {"v":1,"version":7,"users":["user default on nopass ~* &* +@all",...]}. Passwords are
// in it as hashes only. Registry.Restore reads it.
func (s *Snapshot) Encode() []byte {
	e := encodedSnapshot{V: snapshotVersion, Version: s.version}
	for _, u := range s.Users() {
		e.Users = append(e.Users, u.String())
	}
	b, err := json.Marshal(e)
	if err != nil {
		panic(err) // strings always marshal
	}
	return b
}

// Config configures a Registry.
type Config struct {
	// Catalog is the commands rules can name. Required.
	Catalog *Catalog
	// Rand supplies password salts and the credential cache's key: crypto/rand.Reader in
	// production, a seeded reader in tests. Required; it must be safe for concurrent use.
	Rand io.Reader
	// Params are the argon2id costs of new hashes. Zero means DefaultParams.
	Params Params
	// DefaultRules are applied to the default user after Redis's "on nopass ~* &* +@all",
	// when the user set is made and when a loaded file does not define the default user:
	// the front end's --password becomes ">password" here, as Redis's requirepass.
	DefaultRules []string
	// LogMaxLen is how many entries ACL LOG keeps. Zero means DefaultLogMaxLen.
	LogMaxLen int
}

// Registry holds the current user set and everything authentication remembers: the
// credential cache, the failed-AUTH limiter and ACL LOG. Readers take a Snapshot without
// locking; changes are serialized and each publishes a new Snapshot. Safe for concurrent
// use; it starts no goroutines and reads no clock (callers pass the time).
type Registry struct {
	env     ruleEnv
	defRule []string
	cur     atomic.Pointer[Snapshot]

	mu     sync.Mutex // serializes changes and subscriptions
	subs   map[int]func(*Snapshot)
	nextID int

	dummyOnce sync.Once
	dummy     string // see burn

	cache   credCache
	limiter Limiter
	log     Log
}

// NewRegistry returns a registry holding only the default user.
func NewRegistry(cfg Config) (*Registry, error) {
	if cfg.Catalog == nil || cfg.Rand == nil {
		return nil, errors.New("acl: Config needs a Catalog and a Rand")
	}
	if cfg.Params == (Params{}) {
		cfg.Params = DefaultParams
	}
	r := &Registry{env: ruleEnv{cat: cfg.Catalog, params: cfg.Params, rand: cfg.Rand},
		defRule: append(slices.Clone(defaultUserRules), cfg.DefaultRules...), subs: map[int]func(*Snapshot){}}
	if err := r.cache.init(cfg.Rand); err != nil {
		return nil, err
	}
	r.log.maxLen = cfg.LogMaxLen
	users, err := parseLines(&r.env, nil, r.defRule)
	if err != nil {
		return nil, fmt.Errorf("acl: DefaultRules: %w", err)
	}
	r.cur.Store(&Snapshot{users: users})
	return r, nil
}

// Catalog returns the registry's catalog.
func (r *Registry) Catalog() *Catalog { return r.env.cat }

// Snapshot returns the current user set.
func (r *Registry) Snapshot() *Snapshot { return r.cur.Load() }

// Log returns ACL LOG.
func (r *Registry) Log() *Log { return &r.log }

// Limiter returns the failed-AUTH limiter.
func (r *Registry) Limiter() *Limiter { return &r.limiter }

// Prepare checks a change against the current set and returns it ready to propose or
// apply: cleartext passwords replaced by their hashes (see Change). It costs a slow hash
// per cleartext password. For OpLoad, Rules are an ACL file's user lines.
func (r *Registry) Prepare(ch Change) (Change, error) {
	switch ch.Op {
	case OpSetUser:
		if len(ch.Users) != 1 || !validName(ch.Users[0]) {
			return Change{}, ErrBadUsername
		}
		u := newUser(ch.Users[0], r.env.cat)
		if old := r.Snapshot().User(ch.Users[0]); old != nil {
			u = old.clone()
		}
		rules, err := r.env.prepareRules(u, ch.Rules)
		if err != nil {
			return Change{}, err
		}
		return Change{Op: OpSetUser, Users: ch.Users, Rules: rules}, nil
	case OpLoad:
		rules := make([]string, len(ch.Rules))
		for i, l := range ch.Rules {
			p, err := r.env.prepareLine(l)
			if err != nil {
				return Change{}, &FileError{Line: i + 1, Err: err}
			}
			rules[i] = p
		}
		ch = Change{Op: OpLoad, Rules: rules}
		_, err := applyChange(&r.env, nil, ch, r.defRule)
		return ch, err
	}
	_, err := applyChange(&r.env, r.Snapshot().users, ch, r.defRule)
	return ch, err
}

// PrepareFile parses an ACL file into a prepared OpLoad change, with errors naming the
// file's line numbers. Nothing changes until the change is applied.
func (r *Registry) PrepareFile(data []byte) (Change, error) {
	lines, numbers, err := splitFile(data)
	if err != nil {
		return Change{}, err
	}
	ch, err := r.Prepare(Change{Op: OpLoad, Rules: lines})
	var fe *FileError
	if errors.As(err, &fe) && fe.Line >= 1 && fe.Line <= len(numbers) {
		return Change{}, &FileError{Line: numbers[fe.Line-1], Err: fe.Err}
	}
	return ch, err
}

// Apply applies ch and publishes the new set, or returns an error and changes nothing.
// Applying the same prepared changes in the same order to registries with the same
// catalog, DefaultRules and starting set gives the same sets (cleartext passwords, which
// only unprepared changes carry, are hashed with fresh salts). Subscribers run before
// Apply returns.
func (r *Registry) Apply(ch Change) (*Snapshot, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	cur := r.cur.Load()
	users, err := applyChange(&r.env, cur.users, ch, r.defRule)
	if err != nil {
		return nil, err
	}
	return r.publish(&Snapshot{version: cur.version + 1, users: users}), nil
}

// Restore replaces the whole set by one that Snapshot.Encode wrote.
func (r *Registry) Restore(data []byte) (*Snapshot, error) {
	var e encodedSnapshot
	if err := json.Unmarshal(data, &e); err != nil {
		return nil, fmt.Errorf("%w snapshot: %w", ErrDecode, err)
	}
	if e.V != snapshotVersion {
		return nil, fmt.Errorf("%w snapshot: version %d, want %d", ErrDecode, e.V, snapshotVersion)
	}
	env := r.env
	env.rand = nil // an encoded set holds hashes only
	users, err := parseLines(&env, e.Users, r.defRule)
	if err != nil {
		return nil, fmt.Errorf("%w snapshot: %w", ErrDecode, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.publish(&Snapshot{version: e.Version, users: users}), nil
}

// publish installs s and tells the subscribers; r.mu is held.
func (r *Registry) publish(s *Snapshot) *Snapshot {
	r.cur.Store(s)
	ids := make([]int, 0, len(r.subs))
	for id := range r.subs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		r.subs[id](s)
	}
	return s
}

// Subscribe calls fn with every new set after it is published, in order. fn runs on the
// goroutine that applied the change, with the registry's change lock held: it must be
// quick and must not change the registry. cancel stops the calls.
func (r *Registry) Subscribe(fn func(*Snapshot)) (cancel func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	id := r.nextID
	r.nextID++
	r.subs[id] = fn
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		delete(r.subs, id)
	}
}
