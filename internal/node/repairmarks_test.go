package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/admin"
	"github.com/kuradb/kura/internal/hint"
	"github.com/kuradb/kura/internal/meta"
	"github.com/kuradb/kura/internal/ring"
	"github.com/kuradb/kura/internal/row"
)

// A coordinator that dropped hints for a replica holds repair marks for it, shown in its
// /cluster and /metrics. A rebuild of the replica clears the marks of the writes lost
// before it started, as it discards those hints, and keeps those of a write lost after;
// a FLUSHALL clears the marks of the writes it deleted.
func TestRebuildClearsTheRepairMarksItCovered(t *testing.T) {
	defer func(d time.Duration) { hintReplayInterval = d }(hintReplayInterval)
	hintReplayInterval = time.Hour // the test replays by hand
	ctx := context.Background()
	n1, n2, n3, _, _ := startHeteroTrio(t)
	defer n1.Shutdown(ctx)
	defer n2.Shutdown(ctx)
	defer n3.Shutdown(ctx)
	id2 := string(n2.ID())
	hints := n1.cluster.hints
	add := func(key string, at time.Time) error {
		return hints.Add(id2, row.Mutation{Key: []byte(key), Row: cell("v", at.UnixMicro())}, at)
	}
	// n2 has been away for longer than the hint window: a hint from then is held, and the
	// next is dropped.
	start := time.Now()
	if err := add("held", start.Add(-hint.DefaultWindow-time.Hour)); err != nil {
		t.Fatal(err)
	}
	const early, late = "k808", "k71" // in buckets 101 and 103 of the marks
	if err := add(early, start.Add(-time.Minute)); !errors.Is(err, hint.ErrExpired) {
		t.Fatalf("a hint for n2 past the window: %v", err)
	}
	if got := n1.cluster.status().Repairs; len(got) != 1 || got[0].Replica != id2 || len(got[0].Spans) != 1 {
		t.Fatalf("n1's repairs after one dropped hint: %+v", got)
	}
	if err := n2.cluster.rebuild(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "n1 sees n2 rebuilt", func() bool {
		m := n1.cluster.member(ring.NodeID(id2))
		return !m.Refilling && !m.Refilled.IsZero()
	})
	if err := add(late, time.Now()); !errors.Is(err, hint.ErrExpired) {
		t.Fatalf("a hint for n2 after the rebuild, its old hint not yet discarded: %v", err)
	}
	if got := len(hints.Marked(id2)); got != 2 {
		t.Fatalf("%d marked spans for n2 before the replay, want 2", got)
	}
	n1.cluster.replayHints()
	lateSpan := hint.TokenSpan{Start: ring.TokenOf([]byte(late)) - 1, End: ring.TokenOf([]byte(late))}
	spans := hints.Marked(id2)
	if len(spans) != 1 || !spans[0].Contains(lateSpan) {
		t.Fatalf("n2's marks after the rebuild: %v, want only the span of %s's token (%d)", spans, late, lateSpan.End)
	}
	var st admin.ClusterStatus
	if err := getJSON("http://"+n1.AdminAddr()+"/cluster", &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Repairs) != 1 || st.Repairs[0].Replica != id2 || len(st.Repairs[0].Spans) != 1 ||
		st.Repairs[0].Spans[0].End != int64(spans[0].End) || st.Repairs[0].Share != 1.0/hint.MarkBuckets {
		t.Errorf("/cluster's repairs %+v, want n2's one span %v", st.Repairs, spans[0])
	}
	if _, metrics := get(t, "http://"+n1.AdminAddr()+"/metrics"); !strings.Contains(metrics,
		fmt.Sprintf("kura_hints_repair_marked_spans{replica=%q} 1\n", id2)) {
		t.Errorf("/metrics lacks n2's one marked span:\n%s", grepLines(metrics, "kura_hints_repair"))
	}
	// A FLUSHALL deleted what n2 lost before it.
	n1.cluster.flushedHints(time.Now().Add(2 * time.Second).UnixMicro())
	if got := hints.MarkedTargets(); len(got) != 0 {
		t.Errorf("marks after a FLUSHALL: %v", got)
	}
	if _, metrics := get(t, "http://"+n1.AdminAddr()+"/metrics"); strings.Contains(metrics, "kura_hints_repair_marked_spans{") {
		t.Errorf("/metrics after the marks were cleared:\n%s", grepLines(metrics, "kura_hints_repair"))
	}
}

func getJSON(url string, v any) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return json.NewDecoder(resp.Body).Decode(v)
}

func grepLines(s, substr string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// The marks of a replica the metadata log removed or that left are cleared with the next
// replay round: the removal re-made its ranges from the replicas that stay, and a replica
// that left holds nothing to repair. A member still in the ring keeps them.
func TestMarksOfARemovedOrDecommissionedReplicaAreCleared(t *testing.T) {
	hints, err := hint.Open(t.TempDir(), hint.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer hints.Close()
	past := time.Now().Add(-hint.DefaultWindow - time.Hour)
	for _, target := range []string{"gone", "left"} {
		if err := hints.Add(target, row.Mutation{Key: []byte("held"), Row: cell("v", past.UnixMicro())}, past); err != nil {
			t.Fatal(err)
		}
		if err := hints.Add(target, row.Mutation{Key: []byte("k808"), Row: cell("v", time.Now().UnixMicro())}, time.Now()); !errors.Is(err, hint.ErrExpired) {
			t.Fatalf("a hint for %s past the window: %v", target, err)
		}
	}
	c := &clusterNode{hints: hints, rl: &ringLog{}, log: slog.New(slog.DiscardHandler)}
	c.rl.state.Store(&meta.State{Members: []meta.Member{{ID: "gone", State: meta.Removed}, {ID: "left", State: meta.Left}}})
	c.clearCoveredMarks()
	if got := hints.MarkedTargets(); len(got) != 0 {
		t.Fatalf("marks left for %v after their replicas were removed or left", got)
	}
}
