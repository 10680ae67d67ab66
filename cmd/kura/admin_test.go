package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/admin"
	"github.com/kuradb/kura/internal/engine/tiered"
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
// state letters, the load, the ownership and each clock's offset from the node asked.
func TestPrintStatus(t *testing.T) {
	far, near := int64(-3_002_345), int64(812)
	st := &admin.ClusterStatus{Self: "b", ReplicationFactor: 3, Placement: "engine-diverse", Routing: "engine-aware", MaxClockOffsetUS: 500_000,
		Members: []admin.MemberStatus{
			{ID: "b", Host: "host2", Rack: "r1", Engine: "lsm", Role: "write-optimized", Status: "normal", Up: true, Behind: true,
				ClientAddr: "127.0.0.1:2", Tokens: 16, Load: 5 << 20, Owns: 0.5, OwnsRepl: 1.0 / 3},
			{ID: "a", Host: "host1", Rack: "r1", Engine: "lsm", Role: "write-optimized", Status: "leaving",
				ClientAddr: "127.0.0.1:1", Tokens: 16, Load: 1536, Owns: 0.25, OwnsRepl: 1.0 / 3},
			{ID: "c", Host: "host1", Rack: "r1", Engine: "memory", Role: "in-memory", Status: "joining", Up: true,
				ClientAddr: "127.0.0.1:3", Tokens: 0, ClockOffsetUS: &far, ClockSkewed: true},
			{ID: "d", Host: "host2", Rack: "r1", Engine: "memory", Role: "in-memory", Status: "normal", Up: true, Refilling: true,
				ClientAddr: "127.0.0.1:4", Tokens: 16, Load: 2 << 20, Owns: 0.25, OwnsRepl: 1.0 / 3, ClockOffsetUS: &near},
		}}
	var b strings.Builder
	printStatus(&b, st)
	want := `Replication factor 3, placement engine-diverse, routing engine-aware. U = up, D = down.
host   state  id  rack  engine  role             load     tokens  owns   owns (replicated)  clock    client
host1  DL     a   r1    lsm     write-optimized  1.5 KiB  16      25.0%  33.3%              ?        127.0.0.1:1
       UCJ    c   r1    memory  in-memory        0 B      0       0.0%   0.0%               -3.002s  127.0.0.1:3
host2  UBN    b   r1    lsm     write-optimized  5.0 MiB  16      50.0%  33.3%              0        127.0.0.1:2
       UFN    d   r1    memory  in-memory        2.0 MiB  16      25.0%  33.3%              +812µs   127.0.0.1:4
state: U/D (F: refilling, not read from; B: behind, hints held for it; C: clock off by more than max_clock_offset) then J joining, N normal, L leaving, X left (decommissioned), R removed
clock: each node's clock minus this node's (b), as estimated from its internode responses; ? = no estimate (none yet, or an older version); max_clock_offset 500ms
`
	if got := b.String(); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	// A node out of sync says so first.
	st.ClockOutOfSync = true
	b.Reset()
	printStatus(&b, st)
	if line, _, _ := strings.Cut(b.String()[strings.Index(b.String(), "\n")+1:], "\n"); !strings.Contains(line, "refuses writes") {
		t.Errorf("an out-of-sync node's status begins:\n%s", b.String())
	}
}

// Each replica the node asked holds repair marks for gets a line saying how much of the
// ring it lost writes in and how to bring them back.
func TestPrintStatusSaysWhichReplicasNeedRepair(t *testing.T) {
	st := &admin.ClusterStatus{Self: "n1", Members: []admin.MemberStatus{{ID: "n2", AdminAddr: "10.0.0.2:9380"}},
		Repairs: []admin.RepairStatus{
			{Replica: "n2", Share: 0.5, Spans: []admin.TokenSpan{{Start: -100, End: 0}, {Start: 50, End: 60}}},
			{Replica: "n4", Share: 1.0 / 4096, Spans: []admin.TokenSpan{{Start: 0, End: 10}}},
		}}
	var b strings.Builder
	printStatus(&b, st)
	var got []string
	for _, l := range strings.Split(b.String(), "\n") {
		if strings.HasPrefix(l, "needs repair") {
			got = append(got, l)
		}
	}
	want := []string{
		"needs repair: node n2: 2 token spans (50% of the ring) lost hints n1 dropped; run `kura admin repair --admin 10.0.0.2:9380`",
		"needs repair: node n4: 1 token span (0.0244% of the ring) lost hints n1 dropped; run `kura admin repair` on it",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestPrintTiers(t *testing.T) {
	all := []admin.TiersStatus{{Node: "n1", Host: "host1", BudgetBytes: 1 << 30, Window: 10 * time.Second, MinReads: 1,
		CountWrites: true, FastRowBytes: 900 << 20, InBoth: 2, DeviceCapBytes: 950 << 20,
		PromotedOnRead: 1100, PromotedOnWrite: 400,
		Tiers: []admin.TierStatus{
			{Tier: "fast", Keys: 1000, DiskBytes: 950 << 20, Reads: 900, MovedIn: 1200, MovedInBytes: 1200 << 10},
			{Tier: "slow", Keys: 9000, DiskBytes: 9 << 30, Reads: 100, MovedIn: 200, MovedInBytes: 200 << 10}},
		SinceStart:   tiered.Rates{Reads: 1000, FastShare: 0.9},
		LastMinute:   tiered.Rates{Over: time.Minute, Reads: 600, FastShare: 0.95, MovedBytesPerSecond: 2 << 20},
		LastDecision: tiered.Decision{Threshold: 3}}}
	var b strings.Builder
	printTiers(&b, all)
	want := `host   node  tier  keys  disk       reads  moved in
host1  n1    fast  1000  950.0 MiB  900    1200 rows, 1.2 MiB
             slow  9000  9.0 GiB    100    200 rows, 200.0 KiB
host1: fast budget 1.0 GiB, 900.0 MiB of rows on it; reads from the fast tier 90.0% since start, 95.0% over the last 1m0s; moving 2.0 MiB/s; threshold score 3.00 (reads and writes per 10s, aged; K=1); 2 keys moving
host1: 1100 rows promoted from what a read or a write replacing the row saw (400 from writes), since start
host1: the fast device holds less than the budget: 950.0 MiB of rows in force until it has room again
`
	if got := b.String(); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

// kura admin rebuild POSTs /rebuild and prints the answer; a refusal is an error carrying
// the node's reason.
func TestAdminRebuildPostsAndReportsRefusals(t *testing.T) {
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/rebuild" {
			http.Error(w, "unexpected "+r.Method+" "+r.URL.Path, http.StatusBadRequest)
			return
		}
		if calls++; calls > 1 {
			http.Error(w, "node: already refilling from peers", http.StatusConflict)
			return
		}
		w.Write([]byte("rebuilding\n"))
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	var out strings.Builder
	if err := printAdmin(context.Background(), &out, http.MethodPost, addr, "/rebuild"); err != nil || out.String() != "rebuilding\n" {
		t.Fatalf("first rebuild: %q, %v", out.String(), err)
	}
	if err := printAdmin(context.Background(), &out, http.MethodPost, addr, "/rebuild"); err == nil || !strings.Contains(err.Error(), "already refilling") {
		t.Fatalf("second rebuild: %v, want the node's refusal", err)
	}
}

// The metadata part of kura admin status: the epoch, the voters and leader (or that none
// is known, and what that means), the change in flight and the streams into the node.
func TestPrintTopology(t *testing.T) {
	var sb strings.Builder
	printTopology(&sb, &admin.TopologyStatus{Epoch: 12, Voters: []string{"a", "b", "c"}, StreamLimit: 32 << 20,
		Change: &admin.ChangeStatus{ID: 3, What: "join d,e", Ranges: 10, Moved: 4, Transfers: 12, Done: 5, Bytes: 12 << 30, DoneBytes: 5 << 30},
		Streams: []admin.StreamStatus{
			{Index: 2, Source: "a", Bytes: 1 << 30, Estimate: 2 << 30, RateBPS: 32 << 20, ETASeconds: 32},
			{Index: 7, Source: "b", Estimate: 1 << 30, Error: "stream: destination disk full"},
			{Index: 9, Source: "c", Bytes: 1 << 30, Estimate: 1 << 30, Done: true},
		}})
	printTopology(&sb, &admin.TopologyStatus{Epoch: 13, Voters: []string{"a"}, Leader: "a"})
	want := `Ring version (epoch) 12; metadata voters a,b,c, leader none known: topology changes wait, data requests go on; stream limit 32.0 MiB/s.
Change 3: join d,e; 4 of 10 ranges moved, 5 of 12 transfers done (5.0 GiB of 12.0 GiB).
Streams into this node:
  transfer 2 from a: 1.0 GiB of ~2.0 GiB, 32.0 MiB/s, ETA 32s
  transfer 7 from b: 0 B of ~1.0 GiB, 0 B/s, ETA 0s; last run stopped: stream: destination disk full
  transfer 9 from c: 1.0 GiB of ~1.0 GiB, done
Ring version (epoch) 13; metadata voters a, leader a; stream limit none.
No change in flight.
`
	if sb.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", sb.String(), want)
	}
}
