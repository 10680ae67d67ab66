package hint

import (
	"errors"
	"sync"
	"time"

	"github.com/kuradb/kura/internal/row"
)

// QueueSize is how many hints may wait for the writer before requests store their own. At
// a few hundred bytes each it bounds the queue to a few MiB.
const QueueSize = 8192

// ErrQueueClosed answers hints that arrive after the node began to stop.
var ErrQueueClosed = errors.New("hint: queue closed")

// Sink keeps hints: *Store does.
type Sink interface {
	Add(target string, m row.Mutation, now time.Time) error
}

// Queue stores hints off the request path. A coordinator that stored each hint
// itself waited whenever the hint store's pebble did: run K of the heterogeneous bench
// found 8 of 20 slow writes held up by it, behind a memtable flush on a slow disk, though
// every replica the write needed had answered. Now a request only queues the hint, and
// one goroutine stores queued hints in order.
//
// A full queue makes the request store its hint itself: back pressure, not loss. Hints
// still queued when the node stops are stored before the store closes. A crash loses the
// queued ones, as Cassandra loses its unflushed hint buffers: the write itself was
// acknowledged by the replicas it needed, and read repair or a rebuild brings the
// replica that missed it up to date.
type Queue struct {
	sink Sink
	// stored gets each hint's outcome (counted and, for errors, logged). It runs on the
	// writer's goroutine or, when the queue is full, the request's.
	stored func(target string, err error)
	ch     chan queuedHint
	done   chan struct{}

	mu     sync.RWMutex // held for reading while sending on ch, for writing to close it
	closed bool
}

type queuedHint struct {
	target string
	m      row.Mutation
	at     time.Time
	synced chan struct{} // non-nil: a marker that sync waits for, not a hint
}

// NewQueue returns a queue of size hints in front of sink; stored gets each hint's outcome.
func NewQueue(sink Sink, size int, stored func(string, error)) *Queue {
	q := &Queue{sink: sink, stored: stored, ch: make(chan queuedHint, size), done: make(chan struct{})}
	go q.run()
	return q
}

// Add queues a hint for target and returns at once, or stores it before returning when
// the queue is full. It reports only a hint refused outright (the queue closed); the
// store's own verdict goes to stored.
func (q *Queue) Add(target string, m row.Mutation, now time.Time) error {
	q.mu.RLock()
	defer q.mu.RUnlock()
	if q.closed {
		q.stored(target, ErrQueueClosed)
		return ErrQueueClosed
	}
	select {
	case q.ch <- queuedHint{target: target, m: m, at: now}:
	default:
		q.stored(target, q.sink.Add(target, m, now))
	}
	return nil
}

func (q *Queue) run() {
	defer close(q.done)
	for h := range q.ch {
		if h.synced != nil {
			close(h.synced)
			continue
		}
		q.stored(h.target, q.sink.Add(h.target, h.m, h.at))
	}
}

// Sync returns once every hint queued before it has been stored.
func (q *Queue) Sync() {
	q.mu.RLock()
	if q.closed {
		q.mu.RUnlock()
		return
	}
	synced := make(chan struct{})
	q.ch <- queuedHint{synced: synced}
	q.mu.RUnlock()
	<-synced
}

// Close stores the hints still queued and stops the writer; later hints are refused.
func (q *Queue) Close() {
	q.mu.Lock()
	if !q.closed {
		q.closed = true
		close(q.ch)
	}
	q.mu.Unlock()
	<-q.done
}
