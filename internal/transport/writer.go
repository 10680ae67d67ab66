package transport

import (
	"bufio"
	"io"
	"runtime"
	"sync"
	"sync/atomic"
)

// Write-path tuning; not configuration because no deployment needs other values.
const (
	// writeBufferBytes is the size of a connection's write buffer: the frames of one batch
	// are copied into it and go out in one syscall when they fit.
	writeBufferBytes = 64 << 10
	// maxBatchFrames bounds how many queued frames one batch takes before flushing, so the
	// first frame of a long queue is not held back for long.
	maxBatchFrames = 256
	// maxPooledPayloadBytes is the largest request copy kept in payloadPool; larger ones
	// are left to the garbage collector so a rare large request does not pin its memory.
	maxPooledPayloadBytes = 64 << 10
)

// Stats counts what a Client's or a Server's connections wrote, over their lifetime.
// Frames / Flushes is the write coalescing achieved: how many frames shared a syscall
// (a flush of more than the write buffer takes more than one).
type Stats struct {
	FramesWritten uint64
	Flushes       uint64
}

// writeCounters accumulate Stats for the writers of one Client or Server.
type writeCounters struct {
	frames, flushes atomic.Uint64
}

func (c *writeCounters) stats() Stats {
	return Stats{FramesWritten: c.frames.Load(), Flushes: c.flushes.Load()}
}

// outFrame is a frame waiting for the connection's writer.
type outFrame struct {
	hdr     [HeaderSize]byte
	payload []byte
	pooled  *[]byte // the payload's buffer, returned to payloadPool once written
	slot    bool    // holds one of the server connection's in-flight slots until written
}

// payloadPool recycles the copies a client makes of request payloads.
var payloadPool sync.Pool

// copyPayload copies p into a buffer from payloadPool (nil if p is too large to pool).
func copyPayload(p []byte) ([]byte, *[]byte) {
	if len(p) > maxPooledPayloadBytes {
		return append([]byte(nil), p...), nil
	}
	bp, _ := payloadPool.Get().(*[]byte)
	if bp == nil {
		bp = new([]byte)
	}
	*bp = append((*bp)[:0], p...)
	return *bp, bp
}

// frameWriter is a connection's single writer. Producers put frames on q; the writer
// goroutine takes whatever is queued, copies it into one buffered writer and flushes once
// per batch, so that small frames from concurrent callers share a syscall (write
// coalescing) without any caller waiting for a timer.
type frameWriter struct {
	bw      *bufio.Writer
	q       chan outFrame
	stop    chan struct{}   // closed by the owner: write what is queued, then exit
	abort   <-chan struct{} // closed when the connection is torn down: exit at once
	slots   chan struct{}   // server only: one token per in-flight request
	onError func(error)     // called once if a write fails; the writer then exits
	done    chan struct{}   // closed when run returns
	counts  *writeCounters
	clock   Clock         // stamps version 2 frames' clock and wall; nil: they carry none
	epoch   func() uint64 // stamps version 2 frames' epoch; nil: 0
	hdr     [HeaderSize]byte
}

func newFrameWriter(w io.Writer, depth int, abort <-chan struct{}, slots chan struct{}, counts *writeCounters, clock Clock, epoch func() uint64, onError func(error)) *frameWriter {
	return &frameWriter{
		counts:  counts,
		clock:   clock,
		epoch:   epoch,
		bw:      bufio.NewWriterSize(w, writeBufferBytes),
		q:       make(chan outFrame, depth),
		stop:    make(chan struct{}),
		abort:   abort,
		slots:   slots,
		onError: onError,
		done:    make(chan struct{}),
	}
}

func (w *frameWriter) run() {
	defer close(w.done)
	for {
		var f outFrame
		select {
		case f = <-w.q:
		case <-w.abort:
			return
		case <-w.stop:
			select {
			case f = <-w.q:
			default:
				return
			}
		}
		if err := w.writeBatch(f); err != nil {
			w.onError(err)
			return
		}
	}
}

// writeBatch writes first and whatever else is queued (up to maxBatchFrames), then
// flushes.
func (w *frameWriter) writeBatch(first outFrame) error {
	slots, frames := 0, 1
	var wall int64 // one reading for the batch: its frames go out within microseconds
	if w.clock != nil {
		wall = w.clock.Physical()
	}
	err := w.write(first, &slots, wall)
	if len(w.q) == 0 {
		// Yield once before draining. The writer was woken by the first enqueue and the
		// scheduler runs it next, before the callers that are about to enqueue their own
		// frames; without the yield almost every batch held one frame (1.2 frames per
		// flush and 114k calls/s with 16 callers in BenchmarkPing, against 11 frames per
		// flush and 390k calls/s with it). Alone on the connection, a caller pays one
		// Gosched with nothing else to run.
		runtime.Gosched()
	}
batch:
	for n := 1; err == nil && n < maxBatchFrames; n++ {
		select {
		case f := <-w.q:
			err = w.write(f, &slots, wall)
			frames++
		default:
			break batch
		}
	}
	// Counted before the flush, so that a peer's answer to a frame can never be seen
	// before the frame is counted.
	w.counts.frames.Add(uint64(frames))
	w.counts.flushes.Add(1)
	if err == nil {
		err = w.bw.Flush()
	}
	for range slots {
		<-w.slots
	}
	return err
}

// write copies f into the buffer; wall is the batch's reading of the physical clock.
func (w *frameWriter) write(f outFrame, slots *int, wall int64) error {
	// Through w.hdr rather than f.hdr: a slice of the parameter would make every frame
	// escape to the heap.
	w.hdr = f.hdr
	v := w.hdr[offVersion]
	if v != Version1 && (w.clock != nil || w.epoch != nil) {
		// Stamped now rather than when queued: the clock is then at least every
		// timestamp the payload holds, the wall stamp leaves out the time in the queue,
		// which an offset estimate would count as transit, and the epoch is the newest
		// the node has (a stale-epoch refusal's stamp is at least the epoch it refused
		// at).
		var clock int64
		var epoch uint64
		if w.clock != nil {
			clock = w.clock.Last()
		}
		if w.epoch != nil {
			epoch = w.epoch()
		}
		putStamps(w.hdr[:], clock, wall, epoch)
	}
	_, err := w.bw.Write(w.hdr[:headerSize(v)])
	if err == nil && len(f.payload) > 0 {
		_, err = w.bw.Write(f.payload)
	}
	if f.pooled != nil {
		payloadPool.Put(f.pooled)
	}
	if f.slot {
		*slots++
	}
	return err
}
