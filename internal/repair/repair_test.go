package repair_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/engine/btree"
	"github.com/kuradb/kura/internal/engine/lsm"
	"github.com/kuradb/kura/internal/engine/memory"
	"github.com/kuradb/kura/internal/repair"
	"github.com/kuradb/kura/internal/ring"
	"github.com/kuradb/kura/internal/row"
	"github.com/kuradb/kura/internal/wire"
)

// openMemory returns a memory engine whose clock reads now.
func openMemory(t testing.TB, now int64) engine.Engine {
	t.Helper()
	e, err := memory.Open("", memory.Options{Options: engine.Options{Clock: func() int64 { return now }}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// put applies client-keyed mutations to e under their engine keys.
func put(t testing.TB, e engine.Engine, ms ...row.Mutation) {
	t.Helper()
	for i := range ms {
		ms[i].Key = ring.EngineKey(ms[i].Key)
	}
	if err := e.Apply(ms); err != nil {
		t.Fatal(err)
	}
}

// loopback is a Peer that serves through r, and logs each request and response when log
// is set.
func loopback(r *repair.Responder, log *strings.Builder) repair.Peer {
	return func(req []byte) ([]byte, error) {
		resp, err := r.Serve(req)
		if log != nil {
			describe(log, req, resp, err)
		}
		return resp, err
	}
}

func describe(log *strings.Builder, req, resp []byte, err error) {
	q, qerr := wire.DecodeRepairRequest(req)
	if qerr != nil {
		fmt.Fprintf(log, "bad request: %v\n", qerr)
		return
	}
	names := map[wire.RepairStep]string{wire.RepairOpen: "open", wire.RepairDescend: "descend",
		wire.RepairLeaves: "leaves", wire.RepairRows: "rows", wire.RepairClose: "close"}
	fmt.Fprintf(log, "%s", names[q.Step])
	switch q.Step {
	case wire.RepairDescend:
		fmt.Fprintf(log, " depth=%d hashes=%d", q.Depth, len(q.Hashes))
	case wire.RepairLeaves:
		fmt.Fprintf(log, " leaves=%d entries=%d", len(q.Counts), len(q.Entries))
	case wire.RepairRows:
		fmt.Fprintf(log, " rows=%s", keys(q.Rows))
	}
	fmt.Fprintf(log, " (%d B) -> ", len(req))
	if err != nil {
		fmt.Fprintf(log, "error %v\n", err)
		return
	}
	p, perr := wire.DecodeRepairResponse(resp)
	if perr != nil {
		fmt.Fprintf(log, "bad response: %v\n", perr)
		return
	}
	bits := make([]byte, len(p.Differ))
	for i, b := range p.Differ {
		bits[i] = '0'
		if b {
			bits[i] = '1'
		}
	}
	fmt.Fprintf(log, "bits=%s", bits)
	if len(p.Rows) > 0 {
		fmt.Fprintf(log, " rows=%s", keys(p.Rows))
	}
	if p.Held != 0 {
		fmt.Fprintf(log, " held=%d", p.Held)
	}
	fmt.Fprintf(log, " (%d B)\n", len(resp))
}

func keys(ms []row.Mutation) string {
	var ks []string
	for _, m := range ms {
		ks = append(ks, string(m.Key))
	}
	slices.Sort(ks)
	return strings.Join(ks, ",")
}

// parseRow reads "f=v@ts", "f=v@ts~exp" (expires at exp), "-f@ts" (a cell tombstone)
// and "!@ts" (a row tombstone) fields.
func parseRow(fields []string) (row.Row, error) {
	var r row.Row
	for _, f := range fields {
		spec, tsText, ok := strings.Cut(f, "@")
		if !ok {
			return r, fmt.Errorf("%q: no @ts", f)
		}
		tsText, expText, hasExp := strings.Cut(tsText, "~")
		ts, err := strconv.ParseInt(tsText, 10, 64)
		if err != nil {
			return r, err
		}
		switch {
		case spec == "!":
			r.Deleted = ts
		case strings.HasPrefix(spec, "-"):
			r.Cells = append(r.Cells, row.Cell{Name: []byte(spec[1:]), Timestamp: ts, Tombstone: true})
		default:
			name, value, _ := strings.Cut(spec, "=")
			c := row.Cell{Name: []byte(name), Value: []byte(value), Timestamp: ts}
			if hasExp {
				if c.ExpiresAt, err = strconv.ParseInt(expText, 10, 64); err != nil {
					return r, err
				}
			}
			r.Cells = append(r.Cells, c)
		}
	}
	slices.SortFunc(r.Cells, func(a, b row.Cell) int { return bytes.Compare(a.Name, b.Name) })
	return r, nil
}

func formatRow(r row.Row) string {
	var fs []string
	if r.Deleted != 0 {
		fs = append(fs, fmt.Sprintf("!@%d", r.Deleted))
	}
	for _, c := range r.Cells {
		switch {
		case c.Tombstone:
			fs = append(fs, fmt.Sprintf("-%s@%d", c.Name, c.Timestamp))
		case c.ExpiresAt != 0:
			fs = append(fs, fmt.Sprintf("%s=%s@%d~%d", c.Name, c.Value, c.Timestamp, c.ExpiresAt))
		default:
			fs = append(fs, fmt.Sprintf("%s=%s@%d", c.Name, c.Value, c.Timestamp))
		}
	}
	return strings.Join(fs, " ")
}

// dump lists e's rows by client key.
func dump(t testing.TB, e engine.Engine) string {
	t.Helper()
	var lines []string
	err := engine.Scanner{Engine: e}.Scan(nil, nil, func(ek []byte, r row.Row) error {
		_, k, err := ring.SplitEngineKey(ek)
		lines = append(lines, fmt.Sprintf("%s: %s", k, formatRow(r)))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n") + "\n"
}

// TestRepairTranscripts runs testdata/*: replicas on the memory engine, rows written to
// them, and sessions between them with every message shown.
//
//	write NAME [now=T]       input: "KEY FIELD..." (see parseRow); a new replica if needed
//	repair A B salt=S now=T grace=G [start=T end=T]   A initiates with B (whole ring)
//	rows NAME
func TestRepairTranscripts(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		replicas := map[string]engine.Engine{}
		get := func(name string) engine.Engine {
			if replicas[name] == nil {
				replicas[name] = openMemory(t, 1_000_000)
			}
			return replicas[name]
		}
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			switch td.Cmd {
			case "write":
				e := get(td.CmdArgs[0].Key)
				for _, line := range strings.Split(strings.TrimSpace(td.Input), "\n") {
					f := strings.Fields(line)
					r, err := parseRow(f[1:])
					if err != nil {
						t.Fatalf("%s: %v", td.Pos, err)
					}
					put(t, e, row.Mutation{Key: []byte(f[0]), Row: r})
				}
				return ""
			case "rows":
				return dump(t, get(td.CmdArgs[0].Key))
			case "repair":
				a, b := get(td.CmdArgs[0].Key), get(td.CmdArgs[1].Key)
				var salt uint64
				var now, grace, start, end int64
				td.ScanArgs(t, "salt", &salt)
				td.ScanArgs(t, "now", &now)
				td.ScanArgs(t, "grace", &grace)
				start, end = int64(ring.MinToken), int64(ring.MinToken)
				if td.HasArg("start") {
					td.ScanArgs(t, "start", &start)
					td.ScanArgs(t, "end", &end)
				}
				resp := &repair.Responder{Store: engine.Scanner{Engine: b}}
				var log strings.Builder
				st, err := repair.Run(engine.Scanner{Engine: a}, loopback(resp, &log), 1, ring.Token(start), ring.Token(end),
					repair.View{Salt: salt, Now: now, Grace: grace})
				if err != nil {
					fmt.Fprintf(&log, "error: %v\n", err)
				}
				fmt.Fprintf(&log, "rows %d/%d depth %d differing: nodes %d leaves %d rows %d (%d B); sent %d received %d; %d messages, %d B out, %d B in; responder holds %d sessions\n",
					st.Rows, st.PeerRows, st.Depth, st.NodesDiffering, st.LeavesDiffering, st.RowsDiffering, st.BytesDiffering,
					st.RowsSent, st.RowsReceived, st.Messages, st.BytesSent, st.BytesReceived, resp.Sessions())
				return log.String()
			}
			t.Fatalf("%s: unknown command %q", td.Pos, td.Cmd)
			return ""
		})
	})
}

// history is a random set of writes to a few keys, each one cell write, cell delete, row
// delete or expiring write, timestamped by ts.
func history(rng *rand.Rand, keys, n int, ts func() int64) []row.Mutation {
	ms := make([]row.Mutation, n)
	for i := range ms {
		k := []byte(fmt.Sprintf("k%03d", rng.IntN(keys)))
		ts := ts()
		f := []byte(fmt.Sprintf("f%d", rng.IntN(4)))
		var r row.Row
		switch rng.IntN(10) {
		case 0:
			r.Deleted = ts
		case 1, 2:
			r.Cells = []row.Cell{{Name: f, Timestamp: ts, Tombstone: true}}
		case 3:
			r.Cells = []row.Cell{{Name: f, Value: []byte(fmt.Sprint("e", i)), Timestamp: ts, ExpiresAt: ts + rng.Int64N(1500)}}
		default:
			r.Cells = []row.Cell{{Name: f, Value: bytes.Repeat([]byte{byte('a' + rng.IntN(26))}, rng.IntN(40)), Timestamp: ts}}
		}
		ms[i] = row.Mutation{Key: k, Row: r}
	}
	return ms
}

// timestamps returns distinct timestamps in [1, n], in random order. Two writes of one
// cell never share a timestamp (the clock makes them distinct): at a tie between an
// expired cell and a live one, what replicas compare (the expired cell as a tombstone,
// engine.ReadView) would decide otherwise than a merge of the cells as written, for
// repair as for read repair.
func timestamps(rng *rand.Rand, n int) func() int64 {
	perm := rng.Perm(n)
	return func() int64 {
		ts := int64(perm[0] + 1)
		perm = perm[1:]
		return ts
	}
}

// After a session, two replicas with arbitrary divergent histories hold the merge of
// both: what one replica holds that was given every write of both. A second session then
// finds the roots equal.
func TestRepairLeavesBothReplicasWithTheMergeOfBoth(t *testing.T) {
	seed := repair.SeedForTest(t)
	rng := rand.New(rand.NewPCG(seed, 1))
	const now = 1200 // some cells expired; tombstones all within the grace period
	for trial := range 200 {
		a, b, want := openMemory(t, now), openMemory(t, now), openMemory(t, now)
		keys := 1 + rng.IntN(60)
		ts := timestamps(rng, 1000)
		shared := history(rng, keys, rng.IntN(100), ts)
		onlyA, onlyB := history(rng, keys, rng.IntN(50), ts), history(rng, keys, rng.IntN(50), ts)
		for _, ms := range [][]row.Mutation{shared, onlyA} {
			put(t, a, slices.Clone(ms)...)
			put(t, want, slices.Clone(ms)...)
		}
		put(t, b, slices.Clone(shared)...)
		put(t, b, slices.Clone(onlyB)...)
		put(t, want, slices.Clone(onlyB)...)
		start, end := ring.MinToken, ring.MinToken
		if rng.IntN(2) == 0 { // a range of the ring rather than all of it: rows outside stay
			start, end = ring.Token(rng.Uint64()), ring.Token(rng.Uint64())
		}
		inRange := repair.Shape{Start: start, End: end}
		resp := &repair.Responder{Store: engine.Scanner{Engine: b}}
		v := repair.View{Salt: rng.Uint64(), Now: now, Grace: 2000}
		st, err := repair.Run(engine.Scanner{Engine: a}, loopback(resp, nil), uint64(trial), start, end, v)
		if err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		for _, e := range []engine.Engine{a, b} {
			err := engine.Scanner{Engine: want}.Scan(nil, nil, func(ek []byte, w row.Row) error {
				tok, k, _ := ring.SplitEngineKey(ek)
				if !inRange.Contains(tok) {
					return nil
				}
				got, found, err := e.Get(ek)
				if err != nil || !found || !bytes.Equal(row.AppendEncode(nil, &got), row.AppendEncode(nil, &w)) {
					t.Fatalf("trial %d: %s holds %q as %q (found %v, %v), want %q (stats %+v)", trial, e.Name(), k, formatRow(got), found, err, formatRow(w), st)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		v.Salt++
		again, err := repair.Run(engine.Scanner{Engine: a}, loopback(resp, nil), uint64(trial), start, end, v)
		if err != nil || again.Depth != 0 || again.RowsSent+again.RowsReceived != 0 {
			t.Fatalf("trial %d: a second session: %+v, %v", trial, again, err)
		}
		if resp.Sessions() != 0 {
			t.Fatalf("trial %d: the responder still holds %d sessions", trial, resp.Sessions())
		}
	}
}

// openEngines returns an lsm, a btree and a memory engine, all reading the clock now.
func openEngines(t *testing.T, now int64) []engine.Engine {
	clock := func() int64 { return now }
	l, err := lsm.Open(t.TempDir(), lsm.Options{Options: engine.Options{Clock: clock}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	b, err := btree.Open(t.TempDir(), btree.Options{Options: engine.Options{Clock: clock}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return []engine.Engine{l, b, openMemory(t, now)}
}

// An lsm, a btree and a memory replica of the same ranges compare equal when they hold
// the same data (one message, no rows), and converge when they do not.
func TestRepairAcrossEngines(t *testing.T) {
	seed := repair.SeedForTest(t)
	rng := rand.New(rand.NewPCG(seed, 2))
	const now = 1200
	es := openEngines(t, now)
	ts := timestamps(rng, 3000)
	shared := history(rng, 300, 2000, ts)
	for _, e := range es {
		put(t, e, slices.Clone(shared)...)
		if err := e.Flush(); err != nil { // the lsm's rows in sstables, merged by compaction or not
			t.Fatal(err)
		}
	}
	v := repair.View{Salt: rng.Uint64(), Now: now, Grace: 2000}
	pairs := [][2]int{{0, 1}, {1, 2}, {2, 0}}
	for _, p := range pairs {
		resp := &repair.Responder{Store: engine.Scanner{Engine: es[p[1]]}}
		st, err := repair.Run(engine.Scanner{Engine: es[p[0]]}, loopback(resp, nil), 1, ring.MinToken, ring.MinToken, v)
		if err != nil || st.Depth != 0 || st.Messages != 1 || st.RowsSent+st.RowsReceived != 0 {
			t.Fatalf("%s with %s holding the same rows: %+v, %v", es[p[0]].Name(), es[p[1]].Name(), st, err)
		}
		if st.Rows == 0 || st.Rows != st.PeerRows {
			t.Fatalf("%s with %s: %d and %d rows hashed", es[p[0]].Name(), es[p[1]].Name(), st.Rows, st.PeerRows)
		}
	}
	// Each engine misses different writes; after the three pairs, and the first again
	// (which carries the third's rows back to the second), all three hold the same.
	for _, e := range es {
		put(t, e, history(rng, 300, 200, ts)...)
	}
	for _, p := range append(pairs, pairs[0]) {
		resp := &repair.Responder{Store: engine.Scanner{Engine: es[p[1]]}}
		if _, err := repair.Run(engine.Scanner{Engine: es[p[0]]}, loopback(resp, nil), 2, ring.MinToken, ring.MinToken, v); err != nil {
			t.Fatal(err)
		}
	}
	want := dump(t, es[0])
	for _, e := range es[1:] {
		if got := dump(t, e); got != want {
			t.Fatalf("%s differs from %s after repair:\n%s\nwant\n%s", e.Name(), es[0].Name(), got, want)
		}
	}
	for _, p := range pairs {
		resp := &repair.Responder{Store: engine.Scanner{Engine: es[p[1]]}}
		st, err := repair.Run(engine.Scanner{Engine: es[p[0]]}, loopback(resp, nil), 3, ring.MinToken, ring.MinToken, v)
		if err != nil || st.Depth != 0 {
			t.Fatalf("%s with %s after repair: %+v, %v", es[p[0]].Name(), es[p[1]].Name(), st, err)
		}
	}
}

// frameHeader is the internode transport's frame header (transport.HeaderSize), which
// every request and response pays on the wire.
const frameHeader = 44

// ycsbRow is a YCSB row: 10 fields of 100 bytes (1 KB), written at ts.
func ycsbRow(rng *rand.Rand, ts int64) row.Row {
	r := row.Row{Cells: make([]row.Cell, 10)}
	for i := range r.Cells {
		v := make([]byte, 100)
		for j := 0; j < len(v); j += 8 {
			x := rng.Uint64()
			for b := j; b < min(j+8, len(v)); b++ {
				v[b] = byte('!' + (x&0xff)%94)
				x >>= 8
			}
		}
		r.Cells[i] = row.Cell{Name: []byte(fmt.Sprintf("field%d", i)), Value: v, Timestamp: ts}
	}
	return r
}

// A session sends little more than the rows that differ: all its bytes on the wire, both
// ways, frame headers included, at most 1.2 times the encoded size of the newer version
// of each differing row, for 1 KB rows at 0.1%, 1% and 10% of the rows differing; two
// identical replicas cost at most 1% of the data. KURA_REPAIR_ROWS sets the rows
// (default 50,000; docs/benchmarks.md gives the command for 1,000,000).
func TestRepairSendsLittleMoreThanTheRowsThatDiffer(t *testing.T) {
	rows := 50_000
	if s := os.Getenv("KURA_REPAIR_ROWS"); s != "" {
		var err error
		if rows, err = strconv.Atoi(s); err != nil {
			t.Fatalf("KURA_REPAIR_ROWS: %v", err)
		}
	}
	seed := repair.SeedForTest(t)
	for _, share := range []float64{0, 0.001, 0.01, 0.1} {
		rng := rand.New(rand.NewPCG(seed, 3))
		a, b := openMemory(t, 1e9), openMemory(t, 1e9)
		var dataBytes int64
		batchA, batchB := make([]row.Mutation, 0, 1024), make([]row.Mutation, 0, 1024)
		flush := func() {
			put(t, a, batchA...)
			put(t, b, batchB...)
			batchA, batchB = batchA[:0], batchB[:0]
		}
		differing := 0
		for i := range rows {
			k := []byte(fmt.Sprintf("user%019d", rng.Uint64()))
			r := ycsbRow(rng, 100)
			dataBytes += int64(len(row.AppendEncode(nil, &r)))
			batchA = append(batchA, row.Mutation{Key: k, Row: r})
			// Every 1/share-th row differs: half missing at b, half an older version.
			if share > 0 && float64(differing) < share*float64(i+1) {
				differing++
				if differing%2 == 0 {
					old := ycsbRow(rng, 50)
					batchB = append(batchB, row.Mutation{Key: slices.Clone(k), Row: old})
				}
			} else {
				batchB = append(batchB, row.Mutation{Key: slices.Clone(k), Row: r})
			}
			if len(batchA) == cap(batchA) {
				flush()
			}
		}
		flush()
		resp := &repair.Responder{Store: engine.Scanner{Engine: b}}
		start := time.Now()
		st, err := repair.Run(engine.Scanner{Engine: a}, loopback(resp, nil), 1, ring.MinToken, ring.MinToken,
			repair.View{Salt: rng.Uint64(), Now: 1e9, Grace: 1e9})
		if err != nil {
			t.Fatal(err)
		}
		took := time.Since(start)
		wireBytes := st.BytesSent + st.BytesReceived + 2*st.Messages*frameHeader
		if st.RowsDiffering != int64(differing) {
			t.Errorf("%.1f%%: %d rows differed, the session found %d", 100*share, differing, st.RowsDiffering)
		}
		if share == 0 {
			t.Logf("identical, %d rows (%d B): %d B on the wire in %d messages (%.5f%% of the data), %v",
				rows, dataBytes, wireBytes, st.Messages, 100*float64(wireBytes)/float64(dataBytes), took)
			if float64(wireBytes) > 0.01*float64(dataBytes) {
				t.Errorf("identical replicas: %d B on the wire for %d B of data", wireBytes, dataBytes)
			}
			continue
		}
		ratio := float64(wireBytes) / float64(st.BytesDiffering)
		t.Logf("%.1f%% of %d rows differing: %d rows, %d B differing; %d B on the wire (%d out, %d in, %d messages), ratio %.4f; depth %d, %d leaves differing; %v",
			100*share, rows, st.RowsDiffering, st.BytesDiffering, wireBytes, st.BytesSent, st.BytesReceived, st.Messages, ratio, st.Depth, st.LeavesDiffering, took)
		if ratio > 1.2 {
			t.Errorf("%.1f%%: %d B on the wire for %d B differing (%.3f, limit 1.2)", 100*share, wireBytes, st.BytesDiffering, ratio)
		}
		again, err := repair.Run(engine.Scanner{Engine: a}, loopback(resp, nil), 2, ring.MinToken, ring.MinToken,
			repair.View{Salt: rng.Uint64(), Now: 1e9, Grace: 1e9})
		if err != nil || again.Depth != 0 {
			t.Errorf("%.1f%%: the replicas still differ after repair: %+v, %v", 100*share, again, err)
		}
	}
}
