package hint

import (
	"errors"
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
	"github.com/kuradb/kura/internal/engine/space"
	"github.com/kuradb/kura/internal/ring"
	"github.com/kuradb/kura/internal/row"
)

// TestRepairMarkTranscripts drives a store through testdata/marks.txt:
//
//	open [window=<duration>] [max-bytes=N] [disk=full]   (re)open the store in its directory
//	add target=<id> at=<time> keys=(<k>,...)             add a hint per key, created at
//	replay target=<id> at=<time> [max=N]                 one replay, every send succeeding
//	marks                                                every target's marked spans
//	clear target=<id> before=<time> [spans=(<b>-<b>,...)] [shrink]
//
// Times are since t0. A span is given by its first and last bucket (it wraps when the
// first is the larger); shrink ends each span a token short, so that its last bucket is
// not covered whole. Marked spans print as their buckets, then as tokens.
func TestRepairMarkTranscripts(t *testing.T) {
	dir := t.TempDir()
	var s *Store
	defer func() {
		if s != nil {
			s.Close()
		}
	}()
	datadriven.RunTest(t, "testdata/marks.txt", func(t *testing.T, td *datadriven.TestData) string {
		vals := func(key string) []string {
			for _, a := range td.CmdArgs {
				if a.Key == key {
					return a.Vals
				}
			}
			return nil
		}
		arg := func(key string) string {
			if v := vals(key); len(v) > 0 {
				return v[0]
			}
			return ""
		}
		at := func(key string) time.Time {
			d, err := time.ParseDuration(arg(key))
			if err != nil {
				td.Fatalf(t, "%s: %v", key, err)
			}
			return t0.Add(d)
		}
		num := func(s string) int {
			n, err := strconv.Atoi(s)
			if err != nil {
				td.Fatalf(t, "%q: %v", s, err)
			}
			return n
		}
		switch td.Cmd {
		case "open":
			if s != nil {
				if err := s.Close(); err != nil {
					td.Fatalf(t, "close: %v", err)
				}
			}
			opts := Options{}
			if w := arg("window"); w != "" {
				opts.Window, _ = time.ParseDuration(w)
			}
			if b := arg("max-bytes"); b != "" {
				opts.MaxBytes = int64(num(b))
			}
			var err error
			if s, err = Open(dir, opts); err != nil {
				td.Fatalf(t, "open: %v", err)
			}
			if arg("disk") == "full" { // 1 MiB free of 1 TiB: under any reserve
				s.space = space.New(dir, space.Options{ReserveBytes: 1 << 30, Stat: func(string) (space.Usage, error) {
					return space.Usage{AvailBytes: 1 << 20, TotalBytes: 1 << 40}, nil
				}})
			}
			return "ok\n"
		case "add":
			var b strings.Builder
			for _, k := range vals("keys") {
				outcome := "stored"
				switch err := s.Add(arg("target"), row.Mutation{Key: []byte(k)}, at("at")); {
				case errors.Is(err, engine.ErrNoSpace) && errors.Is(err, ErrFull):
					outcome = "dropped: full (disk space)"
				case errors.Is(err, ErrFull):
					outcome = "dropped: full (max bytes)"
				case errors.Is(err, ErrExpired):
					outcome = "dropped: expired"
				case err != nil:
					td.Fatalf(t, "add: %v", err)
				}
				fmt.Fprintf(&b, "%s (bucket %d): %s\n", k, markBucket(ring.TokenOf([]byte(k))), outcome)
			}
			return b.String()
		case "replay":
			var sent []string
			max := 100
			if m := arg("max"); m != "" {
				max = num(m)
			}
			n, err := s.Replay(arg("target"), at("at"), max, func(ms []row.Mutation) error {
				for _, m := range ms {
					sent = append(sent, string(m.Key))
				}
				return nil
			})
			if err != nil {
				td.Fatalf(t, "replay: %v", err)
			}
			return fmt.Sprintf("sent %d %v; dropped so far %d\n", n, sent, s.Stats()[arg("target")].Dropped)
		case "marks":
			return printMarks(s)
		case "clear":
			var spans []TokenSpan
			for _, v := range vals("spans") {
				from, to, _ := strings.Cut(v, "-")
				sp := TokenSpan{Start: bucketSpan(num(from)).Start, End: bucketSpan(num(to)).End}
				if td.HasArg("shrink") {
					sp.End--
				}
				spans = append(spans, sp)
			}
			n, err := s.ClearMarks(arg("target"), at("before"), spans...)
			if err != nil {
				td.Fatalf(t, "clear: %v", err)
			}
			return fmt.Sprintf("cleared %d\n", n)
		}
		td.Fatalf(t, "unknown command %s", td.Cmd)
		return ""
	})
}

// printMarks writes every marked target's spans, as bucket ranges and as tokens.
func printMarks(s *Store) string {
	targets := s.MarkedTargets()
	if len(targets) == 0 {
		return "no marks\n"
	}
	var b strings.Builder
	for _, target := range targets {
		spans := s.Marked(target)
		fmt.Fprintf(&b, "%s: %d spans, %.4f%% of the ring\n", target, len(spans), 100*RingShare(spans))
		for _, sp := range spans {
			first := 0
			if sp.Start != ring.MinToken {
				first = markBucket(sp.Start + 1)
			}
			fmt.Fprintf(&b, "  buckets %d-%d %s\n", first, markBucket(sp.End), sp)
		}
	}
	return b.String()
}

func testRNG(t *testing.T) *rand.Rand {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("KURA_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("KURA_SEED: %v", err)
		}
	}
	t.Logf("seed %d (KURA_SEED=%d to repeat)", seed, seed)
	return rand.New(rand.NewPCG(seed, 0))
}

// Random hints for a few targets, dropped by the size bound, by the window on Add and
// by the window on Replay, are checked against a model that knows which hints were
// dropped and when their writes were made: the marked spans cover the token of every
// dropped key and no bucket without one, before and after a reopen; then random clears
// clear exactly the buckets inside their spans whose newest lost write (rounded up to the
// second) is older than their time.
func TestRepairMarksMatchTheDroppedKeys(t *testing.T) {
	rng := testRNG(t)
	dir := t.TempDir()
	const window = time.Minute
	s, err := Open(dir, Options{Window: window, MaxBytes: 8 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close() }()
	type held struct {
		key     string
		created time.Time
	}
	targets := []string{"n1", "n2", "n3"}
	pending := map[string][]held{}           // the model's hints, oldest first
	lost := map[string]map[int]time.Time{}   // target -> bucket -> newest lost write
	drops := map[string]int64{}              // target -> hints dropped
	causes := map[string]int{}               // full, expired (on Add), replay
	var lostKeys = map[string][]ring.Token{} // target -> tokens of dropped keys
	drop := func(target string, key string, at time.Time) {
		if lost[target] == nil {
			lost[target] = map[int]time.Time{}
		}
		tok := ring.TokenOf([]byte(key))
		if b := markBucket(tok); at.After(lost[target][b]) {
			lost[target][b] = at
		}
		lostKeys[target] = append(lostKeys[target], tok)
		drops[target]++
	}
	now := t0
	for i := range 3000 {
		now = now.Add(time.Duration(rng.IntN(200)) * time.Millisecond)
		target := targets[rng.IntN(len(targets))]
		if rng.IntN(10) == 0 { // a replay, sent or failing
			// n3 stays down: its hints age past the window whatever the seed, so that
			// every way of dropping a hint happens in every run.
			fail := target == "n3" || rng.IntN(3) == 0
			// Every hint past the window is dropped; then up to max of the others sent.
			var keep []held
			for _, h := range pending[target] {
				if now.Sub(h.created) > window {
					drop(target, h.key, h.created)
					causes["replay"]++
				} else {
					keep = append(keep, h)
				}
			}
			max := 1 + rng.IntN(20)
			sent, err := s.Replay(target, now, max, func([]row.Mutation) error {
				if fail {
					return errors.New("down")
				}
				return nil
			})
			fail = fail && len(keep) > 0 // nothing to send: send is not called
			if fail != (err != nil) || (!fail && sent != min(max, len(keep))) {
				t.Fatalf("step %d: replay to %s of %d hints sent %d, %v", i, target, len(keep), sent, err)
			}
			if !fail {
				keep = keep[sent:]
			}
			pending[target] = keep
			continue
		}
		key := fmt.Sprintf("key%d", rng.IntN(100_000))
		switch err := s.Add(target, row.Mutation{Key: []byte(key)}, now); {
		case err == nil:
			pending[target] = append(pending[target], held{key, now})
		case errors.Is(err, ErrFull):
			drop(target, key, now)
			causes["full"]++
		case errors.Is(err, ErrExpired):
			drop(target, key, now)
			causes["expired"]++
		default:
			t.Fatal(err)
		}
	}
	st := s.Stats()
	for _, target := range targets {
		if st[target].Dropped != drops[target] || st[target].Hints != int64(len(pending[target])) {
			t.Fatalf("%s: store says %+v, model %d dropped and %d held", target, st[target], drops[target], len(pending[target]))
		}
	}
	t.Logf("dropped %v (%v), marked buckets n1 %d n2 %d n3 %d", drops, causes, len(lost["n1"]), len(lost["n2"]), len(lost["n3"]))
	if causes["full"] < 10 || causes["expired"] < 10 || causes["replay"] < 10 {
		t.Fatalf("dropped %v: the test does not exercise every way of dropping a hint", causes)
	}
	check := func(when string) {
		t.Helper()
		var want []string
		for _, target := range targets {
			if len(lost[target]) > 0 {
				want = append(want, target)
			}
		}
		if got := s.MarkedTargets(); !slices.Equal(got, want) {
			t.Fatalf("%s: MarkedTargets %v, want %v", when, got, want)
		}
		for _, target := range targets {
			spans := s.Marked(target)
			for _, tok := range lostKeys[target] {
				if _, ok := lost[target][markBucket(tok)]; !ok {
					continue // its bucket was cleared
				}
				if !slices.ContainsFunc(spans, func(sp TokenSpan) bool { return sp.Start < tok && tok <= sp.End }) {
					t.Fatalf("%s: %s's lost token %d is in no marked span", when, target, tok)
				}
			}
			for b := range MarkBuckets {
				mid := bucketSpan(b).End - 1<<50
				in := slices.ContainsFunc(spans, func(sp TokenSpan) bool { return sp.Start < mid && mid <= sp.End })
				if _, want := lost[target][b]; in != want {
					t.Fatalf("%s: %s's bucket %d marked %v, want %v", when, target, b, in, want)
				}
			}
			for i := 1; i < len(spans); i++ {
				if spans[i-1].End >= spans[i].Start {
					t.Fatalf("%s: %s's spans %v and %v are out of order or not merged", when, target, spans[i-1], spans[i])
				}
			}
		}
	}
	check("after the drops")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(dir, Options{Window: window, MaxBytes: 8 << 10}); err != nil {
		t.Fatal(err)
	}
	check("after a reopen")
	for i := range 20 {
		target := targets[rng.IntN(len(targets))]
		before := t0.Add(time.Duration(rng.IntN(int(now.Sub(t0)/time.Second)+2)) * time.Second)
		var spans []TokenSpan
		for range rng.IntN(3) {
			spans = append(spans, TokenSpan{Start: ring.Token(rng.Uint64()), End: ring.Token(rng.Uint64())})
		}
		want := 0
		for b, at := range lost[target] {
			inside := len(spans) == 0 || slices.ContainsFunc(spans, func(sp TokenSpan) bool { return sp.Contains(bucketSpan(b)) })
			if inside && !at.After(before.Add(-time.Second)) { // rounded up to the second, older than before
				delete(lost[target], b)
				want++
			}
		}
		if len(lost[target]) == 0 {
			delete(lost, target)
		}
		if n, err := s.ClearMarks(target, before, spans...); n != want || err != nil {
			t.Fatalf("clear %d: %s before %v in %v cleared %d (%v), want %d", i, target, before.Sub(t0), spans, n, err, want)
		}
		check(fmt.Sprintf("after clear %d", i))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(dir, Options{Window: window, MaxBytes: 8 << 10}); err != nil {
		t.Fatal(err)
	}
	check("after the clears and a reopen")
}

// A span contains a bucket only whole, wrapping or not.
func TestTokenSpanContains(t *testing.T) {
	last := MarkBuckets - 1
	for _, c := range []struct {
		span   TokenSpan
		bucket int
		want   bool
	}{
		{TokenSpan{ring.MinToken, ring.MaxToken}, 0, true},
		{TokenSpan{ring.MinToken, ring.MaxToken}, last, true},
		{TokenSpan{5, 5}, 7, true}, // the whole ring
		{bucketSpan(7), 7, true},
		{bucketSpan(7), 8, false},
		{TokenSpan{bucketSpan(7).Start + 1, bucketSpan(7).End}, 7, false},
		{TokenSpan{bucketSpan(7).Start, bucketSpan(7).End - 1}, 7, false},
		{TokenSpan{bucketSpan(last).Start, bucketSpan(1).End}, last, true}, // wraps
		{TokenSpan{bucketSpan(last).Start, bucketSpan(1).End}, 0, true},
		{TokenSpan{bucketSpan(last).Start, bucketSpan(1).End}, 1, true},
		{TokenSpan{bucketSpan(last).Start, bucketSpan(1).End}, 2, false},
		{TokenSpan{ring.MaxToken, bucketSpan(0).End}, 0, true}, // (MaxToken, x] wraps to MinToken
	} {
		if got := c.span.Contains(bucketSpan(c.bucket)); got != c.want {
			t.Errorf("%v contains bucket %d %v: %v, want %v", c.span, c.bucket, bucketSpan(c.bucket), got, c.want)
		}
	}
	if got := RingShare([]TokenSpan{{ring.MinToken, ring.MaxToken}}); got < 0.999999 || got > 1 {
		t.Errorf("the whole ring's share is %v", got)
	}
	if got := RingShare([]TokenSpan{bucketSpan(3), bucketSpan(9)}); got != 2.0/MarkBuckets {
		t.Errorf("two buckets' share is %v, want %v", got, 2.0/MarkBuckets)
	}
}
