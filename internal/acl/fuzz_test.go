package acl

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// FuzzParseRules applies arbitrary rules to a new user: no panics, and a user that parses
// renders to rules that parse back to the same user.
func FuzzParseRules(f *testing.F) {
	for _, s := range []string{
		"on >pw ~cache:* -@all +get", "+@all -set %R~r:* %W~w:* +set -@admin +get -get",
		"+acl|whoami +config -acl", "reset nopass allkeys allchannels", "&a &b resetchannels",
		"#$argon2id$v=19$m=64,t=1,p=1$c2FsdHNhbHRzYWx0$a2V5a2V5a2V5a2V5a2V5a2V5", "%RW~x ~y ~x",
		"+GET -@READ +@Hash", "<x", "(+get)", "off resetpass >a >b <a",
	} {
		f.Add(s)
	}
	cat := testCatalog(f)
	f.Fuzz(func(t *testing.T, s string) {
		env := &ruleEnv{cat: cat, params: testParams, rand: rand.NewChaCha8([32]byte{})}
		u := newUser("u", cat)
		if err := env.applyRules(u, splitRules(s)); err != nil {
			return
		}
		if want := naiveAllowed(cat, splitRules(s)); !slices.Equal(u.allowed, want) {
			t.Fatalf("%q allows %v, applied one by one %v", s, u.allowed, want)
		}
		again := newUser("u", cat)
		if err := env.applyRules(again, u.Rules()); err != nil {
			t.Fatalf("rendered rules %q do not parse: %v", u.Rules(), err)
		}
		if again.String() != u.String() || !slices.Equal(again.allowed, u.allowed) {
			t.Fatalf("round trip of %q:\n%s\n%s", s, u, again)
		}
	})
}

// FuzzLoadFile loads arbitrary ACL files: no panics, and a file that loads saves to one
// that loads to the same set.
func FuzzLoadFile(f *testing.F) {
	for _, s := range []string{
		"user default on nopass ~* &* +@all\nuser a on >x ~a* -@all +get\n",
		"# comment\n\nuser b off\r\nuser c on nopass +@read -hget %R~r\n",
		"user a on\nuser a off\n", "usr x\n", "user x +nosuch\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r := newTestRegistry(t, 1)
		ch, err := r.PrepareFile(data)
		if err != nil {
			return
		}
		if _, err := r.Apply(ch); err != nil {
			t.Fatalf("a prepared load does not apply: %v", err)
		}
		saved := FormatFile(r.Snapshot())
		r2 := newTestRegistry(t, 2)
		ch, err = r2.PrepareFile(saved)
		if err == nil {
			_, err = r2.Apply(ch)
		}
		if err != nil {
			t.Fatalf("a saved file does not load: %v\n%s", err, saved)
		}
		if again := FormatFile(r2.Snapshot()); string(again) != string(saved) {
			t.Fatalf("reloaded set differs:\n%s\n%s", saved, again)
		}
	})
}
