package resp

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/kuradb/kura/internal/acl"
)

// TestServerClosesConnectionsOfRevokedUsers: deleting a user or turning it off closes its
// open connections at once (Redis keeps those of users turned off).
func TestServerClosesConnectionsOfRevokedUsers(t *testing.T) {
	checkLeaks(t)
	ts := startServer(t, Config{})
	ctx := context.Background()
	admin := ts.client(t, nil)
	for _, u := range []string{"alice", "bob"} {
		check(t, "setuser "+u, admin.Do(ctx, "ACL", "SETUSER", u, "on", ">pw", "allkeys", "+@all").Err(), nil)
	}
	alice := ts.client(t, &redis.Options{Username: "alice", Password: "pw", PoolSize: 1, MaxRetries: -1})
	check(t, "alice sets", alice.Set(ctx, "k", "v", 0).Err(), nil)
	raw := map[string]*rawConn{}
	for _, u := range []string{"alice", "bob"} {
		raw[u] = dialRaw(t, ts.addr)
		check(t, "raw auth "+u, raw[u].do("AUTH", u, "pw"), "OK")
	}
	list := admin.ClientList(ctx).Val()
	check(t, "CLIENT LIST names users", strings.Contains(list, "user=alice") && strings.Contains(list, "user=bob"), true)

	check(t, "deluser", admin.Do(ctx, "ACL", "DELUSER", "alice").Val(), int64(1))
	check(t, "bob off", admin.Do(ctx, "ACL", "SETUSER", "bob", "off").Err(), nil)
	for _, u := range []string{"alice", "bob"} {
		_ = raw[u].nc.SetReadDeadline(time.Now().Add(time.Second))
		raw[u].expectClosed()
	}
	// go-redis finds its pooled connection closed; a new one cannot authenticate.
	err := alice.Get(ctx, "k").Err()
	check(t, "deleted user's client fails", err != nil, true)
	check(t, "the default user is untouched", admin.Get(ctx, "k").Val(), "v")
}

// TestServerACLChangesGoThroughACLCommit: with ACLCommit set, SETUSER and DELUSER hand it
// a prepared change (no cleartext password) and reply with its outcome.
func TestServerACLChangesGoThroughACLCommit(t *testing.T) {
	checkLeaks(t)
	reg, err := NewACLRegistry("")
	if err != nil {
		t.Fatal(err)
	}
	var proposed []string
	fail := false
	ts := startServer(t, Config{ACL: reg, ACLCommit: func(ctx context.Context, ch acl.Change) error {
		b := ch.Encode()
		proposed = append(proposed, string(b))
		if fail {
			return errors.New("meta: no quorum")
		}
		decoded, err := acl.DecodeChange(b) // as another node would receive it
		if err != nil {
			return err
		}
		_, err = reg.Apply(decoded)
		return err
	}})
	c := dialRaw(t, ts.addr)
	check(t, "setuser", c.do("ACL", "SETUSER", "alice", "on", ">secret", "~*", "+get"), "OK")
	check(t, "proposed", len(proposed) == 1 && !strings.Contains(proposed[0], "secret") &&
		strings.Contains(proposed[0], `"#$argon2id$`), true)
	a := dialRaw(t, ts.addr)
	check(t, "auth", a.do("AUTH", "alice", "secret"), "OK")
	fail = true
	check(t, "failed commit", c.do("ACL", "DELUSER", "alice"), "(error) ERR meta: no quorum")
	check(t, "still there", c.do("ACL", "USERS"), "1) \"alice\"\n2) \"default\"")
}

// TestServerACLFileSaveAndLoad: ACL SAVE writes the file, ACL LOAD reads it; a file that
// does not parse is refused with its line and changes nothing.
func TestServerACLFileSaveAndLoad(t *testing.T) {
	checkLeaks(t)
	path := filepath.Join(t.TempDir(), "users.acl")
	ts := startServer(t, Config{ACLFile: path})
	c := dialRaw(t, ts.addr)
	check(t, "setuser", c.do("ACL", "SETUSER", "alice", "on", ">pw", "~a*", "+get"), "OK")
	check(t, "save", c.do("ACL", "SAVE"), "OK")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	check(t, "saved", strings.Contains(string(data), "user alice on #$argon2id$") && !strings.Contains(string(data), "pw "), true)
	bad := string(data) + "user bob on +nosuch\n"
	if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	line := strings.Count(bad, "\n")
	check(t, "bad load", c.do("ACL", "LOAD"), "(error) ERR "+path+":"+strconv.Itoa(line)+": Error in ACL SETUSER modifier '+nosuch': Unknown command or category name in ACL")
	check(t, "unchanged", c.do("ACL", "USERS"), "1) \"alice\"\n2) \"default\"")
	if err := os.WriteFile(path, []byte("user carol on nopass ~* +@all\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	check(t, "load", c.do("ACL", "LOAD"), "OK")
	check(t, "loaded", c.do("ACL", "USERS"), "1) \"carol\"\n2) \"default\"")
}

// TestServerRefusesAnAddressAfterTooManyFailedAuths: the limiter keys on the client's IP,
// so a new connection from it is refused too, without the password being checked.
func TestServerRefusesAnAddressAfterTooManyFailedAuths(t *testing.T) {
	checkLeaks(t)
	ts := startServer(t, Config{Password: "s3cret"})
	c := dialRaw(t, ts.addr)
	for range acl.MaxAuthFailures {
		check(t, "wrong", c.do("AUTH", "nope"), "(error) "+errWrongPass)
	}
	got := dialRaw(t, ts.addr).do("AUTH", "s3cret")
	check(t, "refused", strings.HasPrefix(got, "(error) ERR too many failed AUTH attempts from this address; retry in"), true)
}

func TestSlowlogRedactsACLSetUserPasswords(t *testing.T) {
	args := [][]byte{[]byte("ACL"), []byte("SETUSER"), []byte("u"), []byte(">pw"), []byte("on"), []byte("<old")}
	var got []bool
	for i := range args {
		got = append(got, redacted(args, i))
	}
	check(t, "redacted", got, []bool{false, false, false, true, false, true})
	check(t, "other ACL subcommands", redacted([][]byte{[]byte("acl"), []byte("dryrun"), []byte("u"), []byte(">x")}, 3), false)
}
