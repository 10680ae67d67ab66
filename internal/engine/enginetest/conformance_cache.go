package enginetest

import (
	"bytes"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/row"
)

// Checks of what a cache in front of an engine's store (a row cache) must never break.
// They hold for every engine; an engine without a cache passes them trivially.

// readRaceDuration is how long checkReadsNeverGoBack races readers against writers.
const readRaceDuration = 300 * time.Millisecond

// checkReadsNeverGoBack races readers against writers of a few keys: a Get that starts
// after a write was acknowledged must return that write or a later one. A cache that
// keeps a row read before a write, or that inserts a row read before a write after the
// write's invalidation, fails it.
func checkReadsNeverGoBack(t testing.TB, f Factory) {
	fx := newFixture(t, f, func(o *engine.Options) { o.Durability = engine.Periodic })
	const keys = 4
	var acked [keys]atomic.Int64 // the newest acknowledged timestamp of each key
	key := func(k int) []byte { return []byte{'r', byte('a' + k)} }
	stop := make(chan struct{})
	errs := make(chan error, keys+3)
	var wg sync.WaitGroup
	for k := range keys {
		wg.Go(func() {
			for i := int64(1); ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				ts := StartMicros + i
				c := row.Cell{Name: []byte("c"), Value: []byte(strconv.FormatInt(i, 10)), Timestamp: ts}
				if err := fx.e.Apply([]row.Mutation{{Key: key(k), Row: row.Row{Cells: []row.Cell{c}}}}); err != nil {
					errs <- fmt.Errorf("apply: %w", err)
					return
				}
				acked[k].Store(ts)
			}
		})
	}
	var stale, reads atomic.Int64
	var first atomic.Value // the first stale read, for the message
	for range 3 {
		wg.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				k := n % keys
				floor := acked[k].Load()
				r, found, err := fx.e.Get(key(k))
				if err != nil {
					errs <- fmt.Errorf("get: %w", err)
					return
				}
				reads.Add(1)
				if floor != 0 && (!found || len(r.Cells) == 0 || r.Cells[0].Timestamp < floor) {
					if stale.Add(1) == 1 {
						first.Store(fmt.Sprintf("key %q: read %s after timestamp %d was acknowledged", key(k), FormatRow(r), floor))
					}
				}
			}
		})
	}
	time.Sleep(readRaceDuration)
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("%s: %v", f.Name, err)
	}
	if n := stale.Load(); n > 0 {
		t.Fatalf("%s: %d of %d reads returned a row older than a write acknowledged before they started; first: %v",
			f.Name, n, reads.Load(), first.Load())
	}
}

// checkViewMatchesGet holds engines that implement engine.Viewer to showing exactly what
// Get returns, for rows the read-time purge leaves alone and for rows it changes
// (tombstones, expired and expiring cells), read twice (from the store, then from any
// cache the first read filled) and in every state. Other engines pass.
func checkViewMatchesGet(t testing.TB, f Factory) {
	fx := newFixture(t, f)
	if _, ok := fx.e.(engine.Viewer); !ok {
		return
	}
	now := fx.clk.Now()
	c := func(name, value string, ts int64) row.Cell {
		return row.Cell{Name: []byte(name), Value: []byte(value), Timestamp: ts}
	}
	expiring := func(cl row.Cell, at int64) row.Cell { cl.ExpiresAt = at; return cl }
	rows := map[string]row.Row{
		"plain":    {Cells: []row.Cell{c("c", "v", now-10)}},
		"tomb":     {Cells: []row.Cell{{Name: []byte("a"), Timestamp: now - 10, Tombstone: true}, c("b", "x", now-10)}},
		"expired":  {Cells: []row.Cell{expiring(c("a", "x", now-10), now-1)}},
		"expiring": {Cells: []row.Cell{expiring(c("a", "x", now-10), now+1e9)}},
		"deleted":  {Deleted: now - 5, Cells: []row.Cell{c("a", "x", now-1), c("b", "y", now-10)}},
	}
	for _, k := range []string{"plain", "tomb", "expired", "expiring", "deleted"} {
		fx.apply(row.Mutation{Key: []byte(k), Row: rows[k]})
	}
	fx.inEveryState(func() {
		for _, pass := range []string{"first read", "second read"} {
			for _, k := range []string{"plain", "tomb", "expired", "expiring", "deleted", "absent"} {
				var viewed []byte
				var viewedFound bool
				err := fx.e.(engine.Viewer).View([]byte(k), func(enc []byte, found bool) {
					viewed, viewedFound = bytes.Clone(enc), found
				})
				if err != nil {
					t.Fatalf("%s: view %q (%s): %v", f.Name, k, fx.state, err)
				}
				got, found, err := fx.e.Get([]byte(k))
				if err != nil {
					t.Fatalf("%s: get %q (%s): %v", f.Name, k, fx.state, err)
				}
				if found != viewedFound || (found && !bytes.Equal(viewed, row.Encode(&got))) || (!found && viewed != nil) {
					t.Errorf("%s: %s (%s, %s): View gave found=%v %x, Get found=%v %s",
						f.Name, k, pass, fx.state, viewedFound, viewed, found, FormatRow(got))
				}
			}
		}
	})
}
