package resp

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/kuradb/kura/internal/engine/memory"
)

// The read-modify-write commands' guarantee on one node (doc.go, "Read-modify-write
// commands"): the leader commands on one key (APPEND, SETRANGE, SETNX...) are serialized,
// and MSETNX holds the same locks for all its keys, so that none of them is lost to
// another's read-then-write. Each test runs on the reference store and on the memory
// engine.

// rmwStores returns the stores the tests run on, by name.
func rmwStores(t *testing.T) map[string]Store {
	eng, err := memory.Open(t.TempDir(), memory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	return map[string]Store{"memstore": newMemStore(), "memory": eng}
}

// doAll runs f(worker, i) for i < each on workers goroutines, each with its own session,
// and fails the test on any error reply.
func doAll(t *testing.T, h *Handler, workers, each int, f func(w, i int) []string) [][]string {
	replies := make([][]string, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			s := h.NewSession()
			for i := range each {
				out := h.Do(nil, toArgs(f(w, i)), s)
				r, _, err := parseReply(out)
				if err != nil || strings.HasPrefix(string(out), "-") {
					t.Errorf("%q: %q %v", f(w, i), out, err)
					return
				}
				replies[w] = append(replies[w], render(r))
			}
		})
	}
	wg.Wait()
	return replies
}

func toArgs(words []string) [][]byte {
	out := make([][]byte, len(words))
	for i, w := range words {
		out[i] = []byte(w)
	}
	return out
}

func newTestHandler(t *testing.T, store Store) *Handler {
	h, err := NewHandler(Config{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// Concurrent APPENDs to one key all land: the final length is their number, and each saw a
// different length (the one its append made).
func TestConcurrentAppendsOnOneNodeAllLand(t *testing.T) {
	for name, store := range rmwStores(t) {
		t.Run(name, func(t *testing.T) {
			h := newTestHandler(t, store)
			const workers, each = 8, 100
			replies := doAll(t, h, workers, each, func(w, i int) []string { return []string{"APPEND", "k", "x"} })
			var lens []string
			for _, r := range replies {
				lens = append(lens, r...)
			}
			slices.Sort(lens)
			lens = slices.Compact(lens)
			if len(lens) != workers*each {
				t.Errorf("%d distinct lengths among %d APPENDs: two saw the same value", len(lens), workers*each)
			}
			out := string(h.Do(nil, toArgs([]string{"STRLEN", "k"}), h.NewSession()))
			if want := fmt.Sprintf(":%d\r\n", workers*each); out != want {
				t.Errorf("STRLEN %q, want %q: appends were lost", out, want)
			}
		})
	}
}

// Concurrent SETRANGEs of disjoint parts of one string all land: each part ends with the
// last patch its writer wrote (a SETRANGE rewrites the whole value, so an interleaved
// one would put back another's stale part).
func TestConcurrentSetRangesOnOneNodeAllLand(t *testing.T) {
	for name, store := range rmwStores(t) {
		t.Run(name, func(t *testing.T) {
			h := newTestHandler(t, store)
			const workers, each, width = 8, 100, 6
			patch := func(w, i int) string { return fmt.Sprintf("%c%05d", 'a'+w, i) }
			doAll(t, h, workers, each, func(w, i int) []string {
				return []string{"SETRANGE", "k", fmt.Sprint(w * width), patch(w, i)}
			})
			r, _, _ := parseReply(h.Do(nil, toArgs([]string{"GET", "k"}), h.NewSession()))
			got := []byte(r.str)
			var want bytes.Buffer
			for w := range workers {
				want.WriteString(patch(w, each-1))
			}
			if string(got) != want.String() {
				t.Errorf("GET k = %q, want %q: a SETRANGE was lost", got, want.String())
			}
		})
	}
}

// Of concurrent SETNXs of one key (and SET NXs, which are the same), exactly one sets it,
// and the key holds its value.
func TestConcurrentSetNXOnOneNodeOneWins(t *testing.T) {
	for name, store := range rmwStores(t) {
		t.Run(name, func(t *testing.T) {
			h := newTestHandler(t, store)
			const workers, rounds = 8, 50
			for round := range rounds {
				key := fmt.Sprint("k", round)
				replies := doAll(t, h, workers, 1, func(w, _ int) []string {
					if w%2 == 1 {
						return []string{"SET", key, fmt.Sprint(w), "NX"}
					}
					return []string{"SETNX", key, fmt.Sprint(w)}
				})
				winner := -1
				for w, r := range replies {
					if r[0] == "(integer) 1" || r[0] == "OK" {
						if winner >= 0 {
							t.Fatalf("round %d: workers %d and %d both set %s", round, winner, w, key)
						}
						winner = w
					}
				}
				got := string(h.Do(nil, toArgs([]string{"GET", key}), h.NewSession()))
				if winner < 0 || got != fmt.Sprintf("$1\r\n%d\r\n", winner) {
					t.Fatalf("round %d: winner %d, GET %q", round, winner, got)
				}
			}
		})
	}
}

// Of concurrent MSETNXs whose keys overlap, at most one sets its keys, and they all hold
// its values: never a mixture of two MSETNXs.
func TestConcurrentMSetNXOnOneNodeAllOrNothing(t *testing.T) {
	for name, store := range rmwStores(t) {
		t.Run(name, func(t *testing.T) {
			h := newTestHandler(t, store)
			const workers, rounds = 6, 50
			for round := range rounds {
				// Worker w sets keys w, w+1 and w+2 (mod workers): each overlaps four others.
				key := func(i int) string { return fmt.Sprintf("r%d:%d", round, i%workers) }
				replies := doAll(t, h, workers, 1, func(w, _ int) []string {
					v := fmt.Sprint(w)
					return []string{"MSETNX", key(w), v, key(w + 1), v, key(w + 2), v}
				})
				var winners []int
				for w, r := range replies {
					if r[0] == "(integer) 1" {
						winners = append(winners, w)
					}
				}
				for _, w := range winners {
					for _, k := range []string{key(w), key(w + 1), key(w + 2)} {
						got := string(h.Do(nil, toArgs([]string{"GET", k}), h.NewSession()))
						if got != fmt.Sprintf("$1\r\n%d\r\n", w) {
							t.Fatalf("round %d: worker %d's MSETNX replied 1, but %s = %q", round, w, k, got)
						}
					}
				}
				if len(winners) == 0 {
					t.Fatalf("round %d: no MSETNX set its keys", round)
				}
			}
		})
	}
}
