package acl

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
)

// testParams make hashes cheap: tests check behaviour, BenchmarkHash the cost.
var testParams = Params{MemoryKiB: 64, Time: 1, Threads: 1}

// testCatalog is a few commands of each kind, as package resp categorizes them.
func testCatalog(t testing.TB) *Catalog {
	c, err := NewCatalog([]CommandInfo{
		{"get", CatRead | CatString | CatFast},
		{"set", CatWrite | CatString | CatSlow},
		{"mset", CatWrite | CatString | CatSlow},
		{"hget", CatRead | CatHash | CatFast},
		{"del", CatWrite | CatKeyspace | CatSlow},
		{"ping", CatFast | CatConnection},
		{"config", CatAdmin | CatSlow | CatDangerous},
		{"acl", CatSlow},
		{"acl|whoami", CatSlow},
		{"acl|setuser", CatAdmin | CatSlow | CatDangerous},
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// newTestRegistry returns a registry with cheap hashes and salts from seed.
func newTestRegistry(t testing.TB, seed uint64, def ...string) *Registry {
	r, err := NewRegistry(Config{Catalog: testCatalog(t), Rand: rand.NewChaCha8([32]byte{byte(seed)}),
		Params: testParams, DefaultRules: def})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestTranscripts runs testdata/transcripts/*: rules, rendering and permission checks.
//
//	new [default=<rules>]        a fresh registry (default user's extra rules, space-separated)
//	setuser <name>               applies the input's rules (whitespace-separated); prints the user
//	deluser <names...>
//	list                         ACL LIST
//	check user=<u> cmd=<c> [sub=<s>] [keys=<k,...>] [access=r|w|rw]
//	auth user=<u> pass=<p> addr=<a> at=<seconds>
func TestTranscripts(t *testing.T) {
	files := 0
	t.Cleanup(func() {
		if files == 0 {
			t.Error("no transcript under testdata/transcripts ran")
		}
	})
	datadriven.Walk(t, "testdata/transcripts", func(t *testing.T, path string) {
		files++
		r := newTestRegistry(t, 1)
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			switch td.Cmd {
			case "new":
				var def string
				td.MaybeScanArgs(t, "default", &def)
				r = newTestRegistry(t, 1, strings.Fields(def)...)
				return ""
			case "setuser":
				name := td.CmdArgs[0].Key
				ch, err := r.Prepare(Change{Op: OpSetUser, Users: []string{name}, Rules: strings.Fields(td.Input)})
				if err == nil {
					_, err = r.Apply(ch)
				}
				if err != nil {
					return "ERR " + Reply(err) + "\n"
				}
				return r.Snapshot().User(name).String() + "\n"
			case "deluser":
				var names []string
				for _, a := range td.CmdArgs {
					names = append(names, a.Key)
				}
				if _, err := r.Apply(Change{Op: OpDelUser, Users: names}); err != nil {
					return "ERR " + Reply(err) + "\n"
				}
				return "OK\n"
			case "list":
				return string(FormatFile(r.Snapshot()))
			case "check":
				return check(t, td, r)
			case "auth":
				var user, pass, addr string
				var at int
				td.ScanArgs(t, "user", &user)
				td.ScanArgs(t, "pass", &pass)
				td.ScanArgs(t, "addr", &addr)
				td.ScanArgs(t, "at", &at)
				u, err := r.Authenticate(user, pass, addr, time.Duration(at)*time.Second)
				if err != nil {
					return "ERR " + Reply(err) + "\n"
				}
				return "OK " + u.Name + "\n"
			}
			td.Fatalf(t, "unknown command %q", td.Cmd)
			return ""
		})
	})
}

func check(t *testing.T, td *datadriven.TestData, r *Registry) string {
	var user, cmd, sub, keys, access string
	td.ScanArgs(t, "user", &user)
	td.ScanArgs(t, "cmd", &cmd)
	td.MaybeScanArgs(t, "sub", &sub)
	td.MaybeScanArgs(t, "keys", &keys)
	td.MaybeScanArgs(t, "access", &access)
	u := r.Snapshot().User(user)
	if u == nil {
		return "no such user\n"
	}
	id, ok := r.Catalog().ID(cmd, sub)
	if !ok {
		return "unknown command\n"
	}
	if !u.CanRun(id) {
		return fmt.Sprintf("denied: command %s\n", r.Catalog().Info(id).Name)
	}
	a := map[string]KeyAccess{"r": KeyRead, "w": KeyWrite, "rw": KeyReadWrite, "": KeyReadWrite}[access]
	for _, k := range strings.Split(keys, ",") {
		if k != "" && !u.CanAccessKey([]byte(k), a) {
			return fmt.Sprintf("denied: key %s\n", k)
		}
	}
	return "allowed\n"
}
