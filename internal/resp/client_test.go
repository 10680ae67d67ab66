package resp

import (
	"strings"
	"testing"
	"time"
)

// CLIENT LIST shows every connection with its addresses; CLIENT KILL closes the ones its
// filters match, another's at once and the caller's own after the reply; a connection
// that ends leaves the list.
func TestServerClientListAndKill(t *testing.T) {
	checkLeaks(t)
	ts := startServer(t, Config{})
	a, b, c := dialRaw(t, ts.addr), dialRaw(t, ts.addr), dialRaw(t, ts.addr)
	a.do("CLIENT", "SETNAME", "a")
	idB := strings.TrimPrefix(b.do("CLIENT", "ID"), "(integer) ")
	cAddr := c.nc.LocalAddr().String()

	list := a.do("CLIENT", "LIST")
	for _, want := range []string{
		"addr=" + a.nc.LocalAddr().String() + " laddr=" + ts.addr + " name=a ",
		"id=" + idB + " addr=" + b.nc.LocalAddr().String(),
		"addr=" + cAddr + " laddr=" + ts.addr,
	} {
		if !strings.Contains(list, want) {
			t.Errorf("CLIENT LIST lacks %q:\n%s", want, list)
		}
	}
	if !strings.Contains(a.do("CLIENT", "INFO"), "cmd=client|info") {
		t.Error("CLIENT INFO does not show the command running")
	}

	check(t, "kill b by ID", a.do("CLIENT", "KILL", "ID", idB), "(integer) 1")
	b.expectClosed()
	check(t, "kill c by its address (old form)", a.do("CLIENT", "KILL", cAddr), "OK")
	c.expectClosed()
	check(t, "kill by the server's address, skipping the caller", a.do("CLIENT", "KILL", "LADDR", ts.addr), "(integer) 0")
	check(t, "kill an address gone", a.do("CLIENT", "KILL", "ADDR", cAddr), "(integer) 0")
	if list := a.do("CLIENT", "LIST"); strings.Count(list, "id=") != 1 {
		t.Errorf("after the kills CLIENT LIST has more than the caller:\n%s", list)
	}

	d := dialRaw(t, ts.addr)
	d.do("PING")
	d.nc.Close()
	eventually(t, "a closed connection leaves CLIENT LIST", func() bool {
		return strings.Count(a.do("CLIENT", "LIST"), "id=") == 1
	})

	// Killing oneself replies first, then closes.
	check(t, "kill self", a.do("CLIENT", "KILL", "LADDR", ts.addr, "SKIPME", "no"), "(integer) 1")
	a.expectClosed()
}

// eventually polls cond for up to about five seconds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for range 500 {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("timed out waiting until %s", what)
}

// CLIENT LIST reads other sessions while they change their names, libraries and
// protocols and run commands: the race detector checks the locking.
func TestClientListWhileSessionsChange(t *testing.T) {
	h := newTestHandler(t, newMemStore())
	doAll(t, h, 4, 200, func(w, i int) []string {
		switch i % 5 {
		case 0:
			return []string{"CLIENT", "SETNAME", "n" + strings.Repeat("x", i%7)}
		case 1:
			return []string{"HELLO", []string{"2", "3"}[i%2]}
		case 2:
			return []string{"CLIENT", "SETINFO", "LIB-VER", "1"}
		case 3:
			return []string{"CLIENT", "LIST"}
		}
		return []string{"SLOWLOG", "GET"}
	})
}
