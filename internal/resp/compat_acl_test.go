package resp

import (
	"strings"
	"testing"

	"github.com/kuradb/kura/internal/redistest"
)

// aclScript is a session per line group: "@conn" switches connection (a new one on first
// use), other lines are commands. Replies must be Redis's, errors word for word; lines
// whose replies hold password hashes (kura's are argon2id, Redis's SHA-256) are avoided,
// and so are HELLO's (it names the server) and rules whose rendering differs (Redis 7.0
// recomputes the rules from the categories, kura keeps them in order; docs/design/acl.md).
var aclScript = []string{
	"@admin",
	"ACL SETUSER alice on >pw ~cache:* -@all +get +set +acl|whoami +client|setname",
	"ACL SETUSER bob on nopass ~a* %R~b* &ch +@hash -hget",
	"ACL GETUSER bob",
	"ACL SETUSER carol off >pw +@all",
	"ACL SETUSER x +nosuch",
	"ACL SETUSER x +@nosuch",
	"ACL SETUSER x on bar",
	"ACL SETUSER x %X~a",
	"ACL SETUSER x <nope",
	"ACL SETUSER x ~a allkeys %R~b",
	"ACL SETUSER a\x01b on",
	"ACL DELUSER default",
	"ACL GETUSER nobody",
	"ACL DRYRUN alice get cache:1",
	"ACL DRYRUN alice get other",
	"ACL DRYRUN alice del cache:1",
	"ACL DRYRUN nobody get x",
	"ACL CAT",
	"ACL CAT nosuch",
	"@alice",
	"AUTH alice wrong",
	"AUTH nobody pw",
	"AUTH carol pw",
	"AUTH alice pw",
	"ACL WHOAMI",
	"SET cache:1 v",
	"GET cache:1",
	"SET other v",
	"GET other",
	"DEL cache:1",
	"MGET cache:1",
	"ACL LIST",
	"CLIENT ID",
	"CLIENT SETNAME me",
	"HELLO 3 AUTH alice wrong",
	"@admin",
	"ACL SETUSER default >adminpw",
	"ACL DELUSER alice bob carol nobody",
	"@anon",
	"GET x",
	"PING",
	"AUTH wrong",
	"HELLO 2 AUTH default wrong",
	"AUTH default adminpw",
	"ACL WHOAMI",
	"ACL SETUSER default nopass",
}

// TestACLRepliesAsRedisServerDoes runs aclScript against kura and a real redis-server.
func TestACLRepliesAsRedisServerDoes(t *testing.T) {
	redisAddr := redistest.Start(t)
	checkLeaks(t)
	ts := startServer(t, Config{})
	want := runACLScript(t, redisAddr)
	got := runACLScript(t, ts.addr)
	for i := range aclScript {
		if got[i] != want[i] {
			t.Errorf("%q:\nkura:\n%s\nredis-server:\n%s", aclScript[i], got[i], want[i])
		}
	}
}

func runACLScript(t *testing.T, addr string) []string {
	conns := map[string]*rawConn{}
	var c *rawConn
	out := make([]string, len(aclScript))
	for i, line := range aclScript {
		if name, ok := strings.CutPrefix(line, "@"); ok {
			if conns[name] == nil {
				conns[name] = dialRaw(t, addr)
			}
			c = conns[name]
			continue
		}
		out[i] = c.do(strings.Fields(line)...)
	}
	return out
}
