package main

import (
	"strings"
	"testing"

	"github.com/kuradb/kura/internal/node"
)

func TestHumanBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 1536: "1.5 KiB",
		5 << 20: "5.0 MiB", 3 << 30: "3.0 GiB", 2 << 40: "2.0 TiB", 1 << 62: "4096.0 PiB"} {
		if got := humanBytes(n); got != want {
			t.Errorf("humanBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

// The status table is what operators read: one line per node, grouped by host, with the
// state letters, the load and the ownership.
func TestPrintStatus(t *testing.T) {
	st := &node.ClusterStatus{ReplicationFactor: 3, Placement: "engine-diverse", Routing: "engine-aware", Members: []node.MemberStatus{
		{ID: "b", Host: "host2", Rack: "r1", Engine: "lsm", Role: "write-optimized", Status: "normal", Up: true,
			ClientAddr: "127.0.0.1:2", Tokens: 16, Load: 5 << 20, Owns: 0.5, OwnsRepl: 1.0 / 3},
		{ID: "a", Host: "host1", Rack: "r1", Engine: "lsm", Role: "write-optimized", Status: "leaving",
			ClientAddr: "127.0.0.1:1", Tokens: 16, Load: 1536, Owns: 0.25, OwnsRepl: 1.0 / 3},
		{ID: "c", Host: "host1", Rack: "r1", Engine: "memory", Role: "in-memory", Status: "joining", Up: true,
			ClientAddr: "127.0.0.1:3", Tokens: 0},
		{ID: "d", Host: "host2", Rack: "r1", Engine: "memory", Role: "in-memory", Status: "normal", Up: true, Refilling: true,
			ClientAddr: "127.0.0.1:4", Tokens: 16, Load: 2 << 20, Owns: 0.25, OwnsRepl: 1.0 / 3},
	}}
	var b strings.Builder
	printStatus(&b, st)
	want := `Replication factor 3, placement engine-diverse, routing engine-aware. U = up, D = down.
host   state  id  rack  engine  role             load     tokens  owns   owns (replicated)  client
host1  DL     a   r1    lsm     write-optimized  1.5 KiB  16      25.0%  33.3%              127.0.0.1:1
       UJ     c   r1    memory  in-memory        0 B      0       0.0%   0.0%               127.0.0.1:3
host2  UN     b   r1    lsm     write-optimized  5.0 MiB  16      50.0%  33.3%              127.0.0.1:2
       UFN    d   r1    memory  in-memory        2.0 MiB  16      25.0%  33.3%              127.0.0.1:4
state: U/D (F: refilling, not read from) then J joining, N normal, L leaving, R removed
`
	if got := b.String(); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}
