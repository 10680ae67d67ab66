package transport

import (
	"sync"
	"time"
)

// Clock is the node's clock as the transport uses it; *hlc.Clock is one. Every version 2
// frame a connection writes carries Last, read as the frame goes to the socket, and
// Physical, read once per batch of frames written together; every frame read that carries
// a clock stamp is handed to Observe before its request is handled or its response
// delivered. Physical also times the wall stamps received, for Client.ClockOffset. All
// three must be safe for concurrent use and fast: they run once per frame on the
// connections' reader and writer goroutines.
type Clock interface {
	// Last returns a timestamp at least as large as every one the node has issued, or 0
	// to send none (a node that knows its clock is wrong keeps it to itself).
	Last() int64
	// Physical returns the node's wall clock in microseconds since the Unix epoch.
	Physical() int64
	// Observe takes a peer's clock stamp, so that the node's later timestamps exceed it.
	Observe(ts int64)
}

// The hello that opens a client's connection (package doc, "Versions"): a version 1
// request with method 0 and request ID 0, which no call uses (a client numbers its calls
// from 1), and a one-byte payload, the newest version the client reads. A server that
// reads version 2 answers it itself, in the version both read, with a one-byte payload,
// its own newest version. An older server hands it to its handler like any request and
// answers in version 1, whatever the handler says: the answer's version is the
// negotiation.
const (
	helloMethod uint16 = 0
	helloID     uint64 = 0
)

// isHello reports whether f, a request, is a client's hello.
func isHello(f *Frame) bool {
	return f.Method == helloMethod && f.ID == helloID && len(f.Payload) == 1 && f.Payload[0] >= Version1
}

// Offset is an estimate of a peer's physical clock against this node's: Offset is the
// peer's minus this node's (negative: the peer is behind), At when it was last measured
// (by this node's physical clock).
//
// Each response the peer stamps gives a sample, its wall stamp minus this node's physical
// clock when the frame was read: the true offset less the frame's time in transit
// (queues, the network, scheduling). A delay only ever lowers a sample, so the estimate is
// the largest sample of the last one to two seconds (offsetWindow): off by the quickest
// frame's transit time, microseconds to a millisecond on a LAN, far below any maximum
// offset worth enforcing. It follows a peer's clock step within two windows.
type Offset struct {
	Offset time.Duration
	At     time.Time
}

// offsetWindow is how long the samples of one window of an offset estimate are kept.
const offsetWindow = time.Second

// offsetEstimate keeps the largest sample of the current window and of the one before.
// Samples come from the connection's reader; the node reads the estimate from elsewhere.
type offsetEstimate struct {
	mu      sync.Mutex
	start   int64 // local µs when the current window began; 0: no sample yet
	cur     int64 // the current window's largest sample, µs
	prev    int64 // the previous window's
	hasPrev bool
	last    int64 // local µs of the latest sample
}

// sample records a sample: the peer's wall stamp minus now, both in µs.
func (e *offsetEstimate) sample(s, now int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	window := offsetWindow.Microseconds()
	switch {
	case e.start == 0:
		e.start, e.cur = now, s
	case now-e.start >= window:
		// The window that ended is the previous one only if it ended within a window of
		// now; older samples say nothing of the peer's clock today.
		e.prev, e.hasPrev = e.cur, now-e.start < 2*window
		e.start, e.cur = now, s
	default:
		e.cur = max(e.cur, s)
	}
	e.last = now
}

// get returns the estimate; false before the first sample.
func (e *offsetEstimate) get() (Offset, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.start == 0 {
		return Offset{}, false
	}
	o := e.cur
	if e.hasPrev {
		o = max(o, e.prev)
	}
	return Offset{Offset: time.Duration(o) * time.Microsecond, At: time.UnixMicro(e.last)}, true
}

// receiver is what a connection's reader does with the stamps of the frames it reads: the
// clock stamp is observed unless the wall stamp proves the sender's clock further than
// maxAhead ahead of this one's (see ClientConfig.MaxClockAhead), and the wall stamp, when
// est is not nil (a client's, timing its peer), becomes an offset sample. Zero stamps (a
// version 1 frame, or a peer with nothing to say) are neither. The frames a peer writes
// together share one wall stamp, so the receipt time is read, and the sample taken, once
// per such batch: the clock is not read for every frame. The epoch stamp goes to
// receivedEpoch (epoch.go).
type receiver struct {
	clock        Clock // nil: clock and wall stamps are ignored
	maxAhead     time.Duration
	est          *offsetEstimate // nil on a server, which does not know who its peer is
	wall, now    int64           // the latest batch's wall stamp, and when its first frame was read
	epoch        func() uint64   // the node's epoch (nil: 0)
	observeEpoch func(uint64)    // nil: epochs are not observed
}

// received takes f's stamps. It returns the node's epoch, or 0 if f carries none (see
// receivedEpoch).
func (r *receiver) received(f *Frame) uint64 {
	epoch := r.receivedEpoch(f)
	if r.clock != nil {
		r.receivedClock(f)
	}
	return epoch
}

func (r *receiver) receivedClock(f *Frame) {
	if f.Wall > 0 && f.Wall != r.wall && (r.est != nil || r.maxAhead > 0) {
		r.wall, r.now = f.Wall, r.clock.Physical()
		if r.est != nil {
			r.est.sample(f.Wall-r.now, r.now)
		}
	}
	// Transit only lowers wall - now, so above maxAhead it proves the sender's clock (or
	// the receiver's, the other way) is that far off.
	if f.Clock > 0 && (r.maxAhead <= 0 || f.Wall <= 0 || f.Wall-r.now <= r.maxAhead.Microseconds()) {
		r.clock.Observe(f.Clock)
	}
}

// versionOf returns the newest version a peer configured with maxVersion reads.
func versionOf(maxVersion int) byte {
	if maxVersion == Version1 {
		return Version1
	}
	return Version
}
