package hint

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/row"
)

// gatedSink is a hint store whose writes wait for its gate, as a pebble held up by a
// memtable flush would.
type gatedSink struct {
	gate chan struct{}
	mu   sync.Mutex
	keys []string
}

func (g *gatedSink) Add(target string, m row.Mutation, _ time.Time) error {
	<-g.gate
	g.mu.Lock()
	defer g.mu.Unlock()
	g.keys = append(g.keys, target+"/"+string(m.Key))
	return nil
}

func (g *gatedSink) stored() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.keys)
}

// A request hands its hint over without waiting for a stalled store; the writer stores
// the hints in order once the store moves; close stores what is still queued.
func TestHintQueueKeepsTheStoresStallsOffTheRequest(t *testing.T) {
	sink := &gatedSink{gate: make(chan struct{})}
	var mu sync.Mutex
	outcomes := map[error]int{}
	q := NewQueue(sink, 16, func(_ string, err error) { mu.Lock(); outcomes[err]++; mu.Unlock() })
	var want []string
	for i := range 10 {
		added := make(chan error, 1)
		go func() { added <- q.Add("n2", row.Mutation{Key: fmt.Appendf(nil, "k%d", i)}, time.Now()) }()
		select {
		case err := <-added:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("hint %d waited for the stalled store", i)
		}
		want = append(want, fmt.Sprintf("n2/k%d", i))
	}
	if got := sink.stored(); len(got) != 0 {
		t.Fatalf("stored while the store was stalled: %v", got)
	}
	close(sink.gate)
	q.Sync()
	if got := sink.stored(); !slices.Equal(got, want) {
		t.Fatalf("stored %v, want %v in order", got, want)
	}
	if err := q.Add("n3", row.Mutation{Key: []byte("last")}, time.Now()); err != nil {
		t.Fatal(err)
	}
	q.Close()
	if got := sink.stored(); got[len(got)-1] != "n3/last" {
		t.Fatalf("close did not store the queued hint: %v", got)
	}
	if err := q.Add("n3", row.Mutation{Key: []byte("late")}, time.Now()); !errors.Is(err, ErrQueueClosed) {
		t.Fatalf("a hint after close: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if outcomes[nil] != 11 || outcomes[ErrQueueClosed] != 1 {
		t.Fatalf("outcomes %v, want 11 stored and 1 refused", outcomes)
	}
}

// A full queue makes the request store its own hint: nothing is dropped for want of room.
func TestAFullHintQueueStoresInTheRequest(t *testing.T) {
	sink := &gatedSink{gate: make(chan struct{})}
	q := NewQueue(sink, 1, func(string, error) {})
	defer q.Close()
	// The writer takes the first hint and waits in the store; the second fills the queue.
	add := func(key string) {
		if err := q.Add("n2", row.Mutation{Key: []byte(key)}, time.Now()); err != nil {
			t.Error(err)
		}
	}
	add("k0")
	for deadline := time.Now().Add(5 * time.Second); len(q.ch) > 0; {
		if time.Now().After(deadline) {
			t.Fatal("the writer never took the first hint")
		}
		time.Sleep(time.Millisecond)
	}
	add("k1")
	third := make(chan struct{})
	go func() {
		add("k2")
		close(third)
	}()
	select {
	case <-third:
		t.Fatal("a hint beyond a full queue returned before the store took it")
	case <-time.After(50 * time.Millisecond):
	}
	close(sink.gate)
	<-third
	q.Sync()
	if got := sink.stored(); len(got) != 3 || !slices.Contains(got, "n2/k2") {
		t.Fatalf("stored %v, want all three hints", got)
	}
}
