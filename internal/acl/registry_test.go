package acl

import (
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestHashIsSelfDescribingAndVerifies(t *testing.T) {
	h, err := Hash([]byte("secret"), testParams, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(h, "$argon2id$v=19$m=64,t=1,p=1$") {
		t.Fatalf("hash %q does not name its parameters", h)
	}
	for pw, want := range map[string]bool{"secret": true, "Secret": false, "": false} {
		if ok, err := Verify([]byte(pw), h); err != nil || ok != want {
			t.Errorf("Verify(%q) = %v, %v; want %v", pw, ok, err, want)
		}
	}
	h2, _ := Hash([]byte("secret"), testParams, rand.Reader)
	if h == h2 {
		t.Error("two hashes of one password are equal: salts are not fresh")
	}
}

func TestHashRefusesParametersThatWouldStallTheServer(t *testing.T) {
	for _, h := range []string{
		"$argon2id$v=19$m=1048576,t=1,p=1$c2FsdHNhbHRzYWx0$a2V5a2V5a2V5a2V5a2V5a2V5",
		"$argon2id$v=19$m=64,t=99,p=1$c2FsdHNhbHRzYWx0$a2V5a2V5a2V5a2V5a2V5a2V5",
		"$argon2id$v=19$m=64,t=1,p=0$c2FsdHNhbHRzYWx0$a2V5a2V5a2V5a2V5a2V5a2V5",
		"$argon2id$v=19$m=64,t=1$c2FsdHNhbHRzYWx0$a2V5a2V5a2V5a2V5a2V5a2V5",
		"$argon2i$v=19$m=64,t=1,p=1$c2FsdHNhbHRzYWx0$a2V5a2V5a2V5a2V5a2V5a2V5",
		"$argon2id$v=19$m=064,t=1,p=1$c2FsdHNhbHRzYWx0$a2V5a2V5a2V5a2V5a2V5a2V5",
	} {
		if _, err := Verify([]byte("x"), h); !errors.Is(err, ErrBadHash) {
			t.Errorf("Verify(%q): %v, want ErrBadHash", h, err)
		}
	}
}

// BenchmarkHash measures DefaultParams' cost (docs/design/acl.md records it).
func BenchmarkHash(b *testing.B) {
	for b.Loop() {
		if _, err := Hash([]byte("correct horse battery staple"), DefaultParams, rand.Reader); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAuthCached measures an AUTH the credential cache answers.
func BenchmarkAuthCached(b *testing.B) {
	r := newTestRegistry(b, 1)
	r.env.params = DefaultParams
	setUser(b, r, "u", "on", ">pw")
	for b.Loop() {
		if _, err := r.Authenticate("u", "pw", "a", 0); err != nil {
			b.Fatal(err)
		}
	}
}

func setUser(t testing.TB, r *Registry, name string, rules ...string) {
	t.Helper()
	ch, err := r.Prepare(Change{Op: OpSetUser, Users: []string{name}, Rules: rules})
	if err == nil {
		_, err = r.Apply(ch)
	}
	if err != nil {
		t.Fatal(err)
	}
}

func TestCredentialCacheSkipsTheHashUntilTheUserChanges(t *testing.T) {
	r := newTestRegistry(t, 1)
	setUser(t, r, "u", "on", ">pw")
	mac := r.cache.mac("u", "pw")
	if r.cache.has(r.Snapshot().User("u"), mac) {
		t.Fatal("cached before any AUTH")
	}
	if _, err := r.Authenticate("u", "pw", "a", 0); err != nil {
		t.Fatal(err)
	}
	if !r.cache.has(r.Snapshot().User("u"), mac) {
		t.Fatal("a verified pair is not cached")
	}
	// Any change to the user (here its password) makes the entry stale.
	setUser(t, r, "u", "resetpass", ">new")
	if r.cache.has(r.Snapshot().User("u"), mac) {
		t.Fatal("the cache answers for a user that changed")
	}
	if _, err := r.Authenticate("u", "pw", "a", 0); !errors.Is(err, ErrWrongPass) {
		t.Fatalf("old password after a change: %v", err)
	}
	// A wrong password is never cached.
	_, _ = r.Authenticate("u", "bad", "a", 0)
	if r.cache.has(r.Snapshot().User("u"), r.cache.mac("u", "bad")) {
		t.Fatal("a wrong password was cached")
	}
}

func TestCredentialCacheIsBounded(t *testing.T) {
	r := newTestRegistry(t, 1)
	for i := range MaxCachedUsers + 10 {
		u := &User{Name: fmt.Sprint("u", i)}
		r.cache.add(u, r.cache.mac(u.Name, "pw"))
	}
	if n := r.cache.len(); n != MaxCachedUsers {
		t.Fatalf("cache holds %d users, want %d", n, MaxCachedUsers)
	}
	u := &User{Name: "many"}
	for i := range 10 {
		r.cache.add(u, r.cache.mac("many", fmt.Sprint(i)))
	}
	if n := len(r.cache.entries["many"].macs); n != MaxCachedPasswordsPerUser {
		t.Fatalf("%d passwords cached for one user, want %d", n, MaxCachedPasswordsPerUser)
	}
}

func TestLimiterRefusesAnAddressThatFailsTooOftenThenForgives(t *testing.T) {
	r := newTestRegistry(t, 1)
	setUser(t, r, "u", "on", ">pw")
	now := time.Duration(0)
	for range MaxAuthFailures {
		if _, err := r.Authenticate("u", "bad", "1.2.3.4", now); !errors.Is(err, ErrWrongPass) {
			t.Fatalf("failure: %v", err)
		}
		now += time.Second
	}
	_, err := r.Authenticate("u", "pw", "1.2.3.4", now)
	var le *LimitError
	if !errors.As(err, &le) || le.RetryAfter != AuthLockout-time.Second {
		t.Fatalf("right password from a locked-out address: %v", err)
	}
	if _, err := r.Authenticate("u", "pw", "5.6.7.8", now); err != nil {
		t.Fatalf("another address is refused: %v", err)
	}
	now += AuthLockout
	if _, err := r.Authenticate("u", "pw", "1.2.3.4", now); err != nil {
		t.Fatalf("after the lockout: %v", err)
	}
	if r.limiter.Len() != 0 {
		t.Fatal("a success does not clear the address's record")
	}
}

func TestLimiterForgetsFailuresOutsideTheWindow(t *testing.T) {
	var l Limiter
	for i := range 3 * MaxAuthFailures {
		l.Failed("a", time.Duration(i)*AuthFailureWindow/(MaxAuthFailures-1))
	}
	if _, ok := l.Allow("a", 3*AuthFailureWindow); !ok {
		t.Fatal("spread-out failures locked the address out")
	}
}

func TestLimiterTableIsBounded(t *testing.T) {
	var l Limiter
	for i := range MaxTrackedAddrs + 100 {
		l.Failed(fmt.Sprint("10.0.", i), time.Duration(i))
	}
	if n := l.Len(); n > MaxTrackedAddrs {
		t.Fatalf("%d addresses tracked, limit %d", n, MaxTrackedAddrs)
	}
}

func TestLogGroupsAlikeDenialsAndIsBounded(t *testing.T) {
	l := Log{maxLen: 3}
	e := LogEntry{Reason: ReasonCommand, Context: "toplevel", Object: "set", Username: "u"}
	l.Add(e)
	e.Updated = 30 * time.Second
	l.Add(e)
	if got := l.Entries(-1); len(got) != 1 || got[0].Count != 2 || got[0].Created != 0 {
		t.Fatalf("alike denials: %+v", got)
	}
	e.Updated = 2 * time.Minute // past the grouping window
	l.Add(e)
	for _, o := range []string{"a", "b", "c"} {
		l.Add(LogEntry{Reason: ReasonKey, Object: o, Updated: 2 * time.Minute})
	}
	got := l.Entries(-1)
	if len(got) != 3 || got[0].Object != "c" || len(l.Entries(1)) != 1 {
		t.Fatalf("bounded log: %+v", got)
	}
	l.Reset()
	if len(l.Entries(-1)) != 0 {
		t.Fatal("Reset left entries")
	}
}

func TestChangeEncodingRoundTrips(t *testing.T) {
	ch := Change{Op: OpSetUser, Users: []string{"alice"}, Rules: []string{"on", "~a*", "+get"}}
	got, err := DecodeChange(ch.Encode())
	if err != nil || got.Op != ch.Op || strings.Join(got.Rules, " ") != "on ~a* +get" || got.Users[0] != "alice" {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	if _, err := DecodeChange([]byte(`{"v":2,"op":"setuser"}`)); !errors.Is(err, ErrDecode) {
		t.Fatalf("future version: %v", err)
	}
}

// TestPreparedChangesApplyAlikeEverywhere is the replication contract: a change prepared
// on one registry (passwords hashed there) gives the same user set on every other.
func TestPreparedChangesApplyAlikeEverywhere(t *testing.T) {
	a, b := newTestRegistry(t, 1), newTestRegistry(t, 2)
	ch, err := a.Prepare(Change{Op: OpSetUser, Users: []string{"u"}, Rules: []string{"on", ">pw", "~k", "+get"}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(ch.Encode()), ">pw") {
		t.Fatal("a prepared change carries a cleartext password")
	}
	for _, r := range []*Registry{a, b} {
		if _, err := r.Apply(ch); err != nil {
			t.Fatal(err)
		}
	}
	if x, y := a.Snapshot().Encode(), b.Snapshot().Encode(); string(x) != string(y) {
		t.Fatalf("sets differ:\n%s\n%s", x, y)
	}
	if _, err := b.Authenticate("u", "pw", "a", 0); err != nil {
		t.Fatalf("the password does not work on the other node: %v", err)
	}
	c := newTestRegistry(t, 3)
	if _, err := c.Restore(a.Snapshot().Encode()); err != nil {
		t.Fatal(err)
	}
	if string(c.Snapshot().Encode()) != string(a.Snapshot().Encode()) {
		t.Fatal("Restore does not give the encoded set back")
	}
}

func TestLoadingABadFileChangesNothing(t *testing.T) {
	r := newTestRegistry(t, 1)
	setUser(t, r, "keep", "on", "nopass")
	before := r.Snapshot()
	_, err := r.PrepareFile([]byte("# users\nuser a on nopass +get\n\nuser b on +nosuch\n"))
	var fe *FileError
	if !errors.As(err, &fe) || fe.Line != 4 {
		t.Fatalf("error %v does not name line 4", err)
	}
	if fe.Reply() != "line 4: Error in ACL SETUSER modifier '+nosuch': Unknown command or category name in ACL" {
		t.Fatalf("reply %q", fe.Reply())
	}
	if _, err := r.PrepareFile([]byte("user a on\nuser a off\n")); err == nil || !strings.Contains(err.Error(), "line 2: Duplicate user 'a' found") {
		t.Fatalf("duplicate user: %v", err)
	}
	if r.Snapshot() != before {
		t.Fatal("a bad file changed the set")
	}
}

func TestLoadedFileWithoutDefaultUserKeepsTheConfiguredOne(t *testing.T) {
	r := newTestRegistry(t, 1, ">pw")
	ch, err := r.PrepareFile([]byte("user a on >x ~* +@all\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Apply(ch); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Authenticate(DefaultUser, "pw", "a", 0); err != nil {
		t.Fatalf("default user after load: %v", err)
	}
	if _, err := r.Authenticate("a", "x", "a", 0); err != nil {
		t.Fatalf("loaded user: %v", err)
	}
	// What FormatFile writes loads back to the same set.
	r2 := newTestRegistry(t, 2)
	ch, err = r2.PrepareFile(FormatFile(r.Snapshot()))
	if err == nil {
		_, err = r2.Apply(ch)
	}
	if err != nil || string(FormatFile(r2.Snapshot())) != string(FormatFile(r.Snapshot())) {
		t.Fatalf("reload: %v\n%s\n%s", err, FormatFile(r2.Snapshot()), FormatFile(r.Snapshot()))
	}
}

func TestSubscribersSeeEveryNewSet(t *testing.T) {
	r := newTestRegistry(t, 1)
	var seen []uint64
	cancel := r.Subscribe(func(s *Snapshot) { seen = append(seen, s.Version()) })
	setUser(t, r, "a", "on")
	if _, err := r.Apply(Change{Op: OpDelUser, Users: []string{"a"}}); err != nil {
		t.Fatal(err)
	}
	cancel()
	setUser(t, r, "b")
	if fmt.Sprint(seen) != "[1 2]" {
		t.Fatalf("versions seen: %v", seen)
	}
}
