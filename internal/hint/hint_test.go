package hint

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/row"
)

func mutation(i int) row.Mutation {
	v := fmt.Appendf(nil, "v%d", i)
	return row.Mutation{Key: fmt.Appendf(nil, "k%d", i),
		Row: row.Row{Cells: []row.Cell{{Name: []byte("c"), Value: v, Timestamp: int64(i + 1)}}}}
}

var t0 = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

func TestHintsSurviveRestartAndReplayOldestFirst(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := s.Add("n2", mutation(i), t0.Add(time.Duration(i)*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Add("n3", mutation(9), t0); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if st := s.Stats()["n2"]; st.Hints != 3 || !st.Oldest.Equal(t0) || st.Bytes == 0 {
		t.Fatalf("after restart n2 has %+v, want 3 hints from %v", st, t0)
	}
	if !s.Holds("n2") || !s.Holds("n3") || s.Holds("n4") {
		t.Fatalf("Holds n2 %v n3 %v n4 %v; want true true false", s.Holds("n2"), s.Holds("n3"), s.Holds("n4"))
	}
	if got := fmt.Sprint(s.Holding()); got != "[n2 n3]" {
		t.Fatalf("Holding %s, want [n2 n3]", got)
	}
	var sent []string
	send := func(ms []row.Mutation) error {
		for _, m := range ms {
			sent = append(sent, string(m.Key))
		}
		return nil
	}
	now := t0.Add(time.Minute)
	if n, err := s.Replay("n2", now, 2, send); n != 2 || err != nil {
		t.Fatalf("first replay: %d, %v", n, err)
	}
	if n, err := s.Replay("n2", now, 2, send); n != 1 || err != nil {
		t.Fatalf("second replay: %d, %v", n, err)
	}
	if n, _ := s.Replay("n2", now, 2, send); n != 0 {
		t.Fatalf("third replay sent %d", n)
	}
	if fmt.Sprint(sent) != "[k0 k1 k2]" {
		t.Errorf("replayed %v, want oldest first [k0 k1 k2]", sent)
	}
	if st := s.Stats(); st["n2"].Hints != 0 || st["n2"].Bytes != 0 || st["n3"].Hints != 1 {
		t.Errorf("stats after replay: %+v", st)
	}
	if s.Holds("n2") || !s.Holds("n3") {
		t.Errorf("after n2's replay Holds n2 %v n3 %v; want false true", s.Holds("n2"), s.Holds("n3"))
	}
	if got := fmt.Sprint(s.Holding()); got != "[n3]" {
		t.Errorf("after n2's replay Holding %s, want [n3]", got)
	}
}

func TestFailedReplayKeepsHints(t *testing.T) {
	s, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_ = s.Add("n2", mutation(1), t0)
	boom := errors.New("replica gone again")
	if _, err := s.Replay("n2", t0, 10, func([]row.Mutation) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("replay error: %v", err)
	}
	if st := s.Stats()["n2"]; st.Hints != 1 {
		t.Errorf("a failed replay lost hints: %+v", st)
	}
}

func TestWindowAndSizeBoundHints(t *testing.T) {
	s, err := Open(t.TempDir(), Options{Window: time.Hour, MaxBytes: 200})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Add("n2", mutation(1), t0); err != nil {
		t.Fatal(err)
	}
	// n2 has been unreachable for longer than the window: no new hints.
	if err := s.Add("n2", mutation(2), t0.Add(2*time.Hour)); !errors.Is(err, ErrExpired) {
		t.Fatalf("hint past the window: %v", err)
	}
	// The store holds at most 200 bytes.
	var err2 error
	for i := range 10 {
		if err2 = s.Add("n3", mutation(i), t0); err2 != nil {
			break
		}
	}
	if !errors.Is(err2, ErrFull) {
		t.Fatalf("hints past MaxBytes: %v", err2)
	}
	// Replaying after the window deletes the expired hint unsent.
	sent := 0
	n, err := s.Replay("n2", t0.Add(2*time.Hour), 10, func(ms []row.Mutation) error { sent += len(ms); return nil })
	if n != 0 || err != nil || sent != 0 {
		t.Fatalf("expired replay sent %d (%d, %v)", sent, n, err)
	}
	if st := s.Stats()["n2"]; st.Hints != 0 || st.Dropped != 2 {
		t.Errorf("n2 after expiry: %+v, want no hints and 2 dropped", st)
	}
	if err := s.Add("bad\x00id", mutation(1), t0); err == nil {
		t.Error("target with a NUL byte accepted")
	}
}

// A replica rebuilt from its peers has every write acknowledged before the rebuild
// started: its hints from before then are discarded unsent, the later ones kept, in
// chunks, with the counters kept right; other replicas' hints are untouched.
func TestDiscardDeletesHintsCreatedBeforeARebuild(t *testing.T) {
	s, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	t0 := time.Unix(1_700_000_000, 0)
	n := 2*discardChunk + 10 // more than one chunk
	for i := range n {
		if err := s.Add("n2", row.Mutation{Key: fmt.Appendf(nil, "k%d", i), Row: row.Row{}}, t0.Add(time.Duration(i)*time.Millisecond)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Add("n3", row.Mutation{Key: []byte("other")}, t0); err != nil {
		t.Fatal(err)
	}
	keep := 5
	before := t0.Add(time.Duration(n-keep) * time.Millisecond)
	got, err := s.Discard("n2", before)
	if err != nil || got != n-keep {
		t.Fatalf("Discard: %d, %v; want %d", got, err, n-keep)
	}
	st := s.Stats()
	if st["n2"].Hints != int64(keep) || !st["n2"].Oldest.Equal(before) || st["n2"].Dropped != 0 || st["n3"].Hints != 1 {
		t.Fatalf("stats after discard: %+v", st)
	}
	var sent []string
	if _, err := s.Replay("n2", before, 100, func(ms []row.Mutation) error {
		for _, m := range ms {
			sent = append(sent, string(m.Key))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("[k%d k%d k%d k%d k%d]", n-5, n-4, n-3, n-2, n-1); fmt.Sprint(sent) != want {
		t.Errorf("replayed %v, want %s", sent, want)
	}
	if got, err := s.Discard("n2", before.Add(time.Hour)); got != 0 || err != nil || s.Holds("n2") {
		t.Errorf("discard with nothing left: %d, %v, holds %v", got, err, s.Holds("n2"))
	}
	if !s.Holds("n3") {
		t.Error("n3's hint went with n2's")
	}
}

// Replaying a backlog a batch at a time steps over each hint about once, not over the
// tombstones of every batch replayed before it: the iterators' key count stays linear in
// the backlog (without the floor it was about backlog²/batch, a tombstone and the value it
// deletes per hint replayed before: 520,103 here, against 5,101), while
// hints added during the replay, and those of another target, are still replayed, in
// order. After a restart the floor is gone and the first replay starts over, correctly.
func TestReplayOfABacklogIsLinear(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	const backlog, batch = 5000, 50
	for i := range backlog {
		if err := s.Add("n2", mutation(i), t0); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Add("n3", mutation(backlog), t0); err != nil {
		t.Fatal(err)
	}
	var sent []string
	send := func(ms []row.Mutation) error {
		for _, m := range ms {
			sent = append(sent, string(m.Key))
		}
		return nil
	}
	added := backlog + 1
	for round := 0; ; round++ {
		n, err := s.Replay("n2", t0.Add(time.Minute), batch, send)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		if round == 40 { // a write deferred mid-replay lands after the backlog
			if err := s.Add("n2", mutation(added), t0.Add(time.Second)); err != nil {
				t.Fatal(err)
			}
			added++
		}
	}
	if len(sent) != backlog+1 || sent[0] != "k0" || sent[backlog-1] != fmt.Sprintf("k%d", backlog-1) || sent[backlog] != fmt.Sprintf("k%d", backlog+1) {
		t.Fatalf("replayed %d hints (first %v, last %v), want the %d of the backlog in order, then the one added during it", len(sent), sent[0], sent[len(sent)-1], backlog+1)
	}
	scanned := s.scanned.Load()
	t.Logf("replaying %d hints %d at a time stepped over %d keys", backlog+1, batch, scanned)
	if scanned > 3*backlog {
		t.Fatalf("replaying %d hints %d at a time stepped over %d keys, want about %d", backlog+1, batch, scanned, backlog)
	}
	if st := s.Stats()["n2"]; st.Hints != 0 || s.Holds("n2") {
		t.Fatalf("after the replay n2 still has %+v", st)
	}
	if err := s.Add("n2", mutation(added), t0.Add(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(dir, Options{}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sent = nil
	if n, err := s.Replay("n2", t0.Add(time.Minute), batch, send); n != 1 || err != nil || sent[0] != fmt.Sprintf("k%d", added) {
		t.Fatalf("after a restart: replayed %d (%v), %v", n, sent, err)
	}
	sent = nil
	if n, err := s.Replay("n3", t0.Add(time.Minute), batch, send); n != 1 || err != nil || sent[0] != fmt.Sprintf("k%d", backlog) {
		t.Fatalf("n3: replayed %d (%v), %v", n, sent, err)
	}
}
