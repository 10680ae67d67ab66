package resp

import (
	"strings"
	"testing"
)

// A leader request from a peer is input like any other: transaction commands in it are
// refused (WATCH would wait for the lock the request holds) and the rest still run.
func TestLeaderRefusesTransactionCommandsInARequest(t *testing.T) {
	e := newHandlerEnv(t, Config{})
	req := LeaderRequest{Key: []byte("k"), Proto: 2, Multi: true, Cmds: [][][]byte{
		{[]byte("WATCH"), []byte("k")}, {[]byte("MULTI")}, {[]byte("INCR"), []byte("k")},
		{[]byte("EXEC")}, {[]byte("NOPE")}, {[]byte("GET")},
	}}
	out := e.h.RunAtLeader(nil, &req, directStore{e.store})
	r, rest, err := parseReply(out)
	if err != nil || len(rest) != 0 {
		t.Fatalf("reply %q: %v", out, err)
	}
	got := render(r)
	for _, want := range []string{"ERR watch cannot run at a key's leader", "ERR multi cannot run", "(integer) 1",
		"ERR exec cannot run", "unknown command 'NOPE'", "wrong number of arguments for 'get'"} {
		if !strings.Contains(got, want) {
			t.Errorf("reply lacks %q:\n%s", want, got)
		}
	}
}
