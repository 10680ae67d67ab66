package node

import (
	"errors"
	"sync"
	"time"

	"github.com/kuradb/kura/internal/row"
)

// hintQueueSize is how many hints may wait for the writer before requests store their
// own. At a few hundred bytes each it bounds the queue to a few MiB.
const hintQueueSize = 8192

// errHintQueueClosed answers hints that arrive after the node began to stop.
var errHintQueueClosed = errors.New("node: hint queue closed")

// hintQueue stores hints off the request path. A coordinator that stored each hint
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
type hintQueue struct {
	sink hintSink
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

func newHintQueue(sink hintSink, size int, stored func(string, error)) *hintQueue {
	q := &hintQueue{sink: sink, stored: stored, ch: make(chan queuedHint, size), done: make(chan struct{})}
	go q.run()
	return q
}

// Add queues a hint for target and returns at once, or stores it before returning when
// the queue is full. It reports only a hint refused outright (the queue closed); the
// store's own verdict goes to stored.
func (q *hintQueue) Add(target string, m row.Mutation, now time.Time) error {
	q.mu.RLock()
	defer q.mu.RUnlock()
	if q.closed {
		q.stored(target, errHintQueueClosed)
		return errHintQueueClosed
	}
	select {
	case q.ch <- queuedHint{target: target, m: m, at: now}:
	default:
		q.stored(target, q.sink.Add(target, m, now))
	}
	return nil
}

func (q *hintQueue) run() {
	defer close(q.done)
	for h := range q.ch {
		if h.synced != nil {
			close(h.synced)
			continue
		}
		q.stored(h.target, q.sink.Add(h.target, h.m, h.at))
	}
}

// sync returns once every hint queued before it has been stored.
func (q *hintQueue) sync() {
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

// close stores the hints still queued and stops the writer; later hints are refused.
func (q *hintQueue) close() {
	q.mu.Lock()
	if !q.closed {
		q.closed = true
		close(q.ch)
	}
	q.mu.Unlock()
	<-q.done
}
