package tiered

import (
	"fmt"
	"testing"
	"time"
)

// keysOnStripe returns n distinct keys whose stripe is stripe.
func keysOnStripe(stripe, n int) [][]byte {
	var out [][]byte
	for i := 0; len(out) < n; i++ {
		if k := []byte(fmt.Sprint("key-", i)); stripeOf(k) == stripe {
			out = append(out, k)
		}
	}
	return out
}

// A move does not queue behind a read in flight on one of its stripes (a slow-device read
// holds its stripe shared for hundreds of milliseconds): it moves the keys of the free
// stripes meanwhile, and new reads of the busy stripe are not held up behind it.
func TestMoveWorksAroundAStripeBusyWithARead(t *testing.T) {
	db, _, _ := openCapturing(t)
	busy := keysOnStripe(7, 2) // busy[0] is moved; busy[1] is read while the move waits
	free := keysOnStripe(8, 1)[0]
	for _, k := range [][]byte{busy[0], busy[1], free} {
		put(t, db, string(k), "a", 1)
	}
	s := &db.stripes[7]
	s.mu.RLock() // a read of the stripe in flight
	held := true
	defer func() {
		if held {
			s.mu.RUnlock()
		}
	}()
	moved := make(chan error, 1)
	go func() { moved <- db.Move([][]byte{busy[0], free}, Fast) }()

	deadline := time.Now().Add(lockPatience / 2)
	for db.HomeOf(free) != Fast {
		if time.Now().After(deadline) {
			t.Fatal("the key on a free stripe was not marked while another key's stripe was busy with a read")
		}
		time.Sleep(time.Millisecond)
	}
	read := make(chan int, 1)
	go func() {
		r, _, err := db.Get(busy[1])
		if err != nil {
			read <- -1
		}
		read <- len(r.Cells)
	}()
	select {
	case n := <-read:
		if n != 1 {
			t.Fatalf("read %d cells of %s, want 1", n, busy[1])
		}
	case <-time.After(lockPatience / 2):
		t.Fatal("a new read of the busy stripe waited behind the move")
	}
	select {
	case err := <-moved:
		t.Fatalf("the move finished (%v) while a read still held one of its stripes", err)
	default:
	}
	s.mu.RUnlock()
	held = false
	if err := <-moved; err != nil {
		t.Fatal(err)
	}
	for _, k := range [][]byte{busy[0], free} {
		if db.HomeOf(k) != Fast || cellsOf(t, db, string(k)) != 1 {
			t.Errorf("%s: home %s after the move, want fast with its cell", k, db.HomeOf(k))
		}
	}
	if n := db.InBoth(); n != 0 {
		t.Errorf("%d keys still in both tiers after the move", n)
	}
}
