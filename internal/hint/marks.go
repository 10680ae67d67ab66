package hint

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/kuradb/kura/internal/ring"
	"github.com/kuradb/kura/internal/wire"
)

// Repair marks record where a target lost writes: each hint dropped for it (refused by
// Add, or expired unsent in Replay) marks the token bucket of its key. Hinted handoff
// cannot bring those writes back, so the marked spans of the ring need a repair (today
// `kura admin rebuild` of the target; later anti-entropy repair, issue 36).
//
// The ring is cut into MarkBuckets equal buckets by the top bits of a token, so that a
// target's marks take a fixed 32 KiB in memory and at most MarkBuckets small keys on
// disk however many hints are dropped: a mark says "some write to this span was lost",
// not which. 4096 buckets keep the marked share of the ring close to the keys' share
// for a few drops (each marks 1/4096 of the ring), and a long outage, which drops a hint
// for most writes, marks the whole ring, as it should.
//
// A bucket keeps the time of the newest write it lost (the hint's creation time, rounded
// up to the second), not a bare bit, because a repair covers only the writes made before
// it started: ClearMarks clears a bucket only when every write it lost is older than
// that. The second's granularity also bounds the disk writes to one per bucket a second
// while hints are being dropped.
//
// Marks are stored in the hint store's pebble under keys that begin with 0x00, which no
// hint key does (a target is not empty and holds no 0x00), written without fsync like the
// hints: a machine crash may lose the newest marks as it may lose the newest hints, and
// the write is found by a read repair, or by the next rebuild, as the package doc says.
// The marks of a drop in Replay are written in the batch that deletes the expired hints,
// so that no hint is gone without its mark.

// MarkBuckets is how many equal token buckets a target's repair marks tell apart.
const MarkBuckets = 1 << markBucketBits

const markBucketBits = 12

// TokenSpan is the ring range (Start, End]: the tokens above Start up to End. As ring
// ranges do, a span with Start >= End wraps past ring.MaxToken, and Start == End is the
// whole ring. The spans Marked returns never wrap.
type TokenSpan struct{ Start, End ring.Token }

// Contains reports whether every token of o, a span that does not wrap, is in s.
func (s TokenSpan) Contains(o TokenSpan) bool {
	switch {
	case s.Start == s.End:
		return true
	case s.Start < s.End:
		return s.Start <= o.Start && o.End <= s.End
	default: // (Start, MaxToken] and [MinToken, End]
		return s.Start <= o.Start || o.End <= s.End
	}
}

// String writes the span as ring ranges are written: (start,end].
func (s TokenSpan) String() string { return fmt.Sprintf("(%d,%d]", s.Start, s.End) }

// RingShare returns the share of the ring's tokens that spans cover; spans must not wrap
// or overlap, as Marked's do.
func RingShare(spans []TokenSpan) float64 {
	n := 0.0
	for _, s := range spans {
		n += float64(uint64(s.End) - uint64(s.Start))
	}
	return n / math.Exp2(64)
}

// markBucket returns the bucket of token t: the top bits of its rank on the ring.
func markBucket(t ring.Token) int { return int((uint64(t) ^ 1<<63) >> (64 - markBucketBits)) }

// bucketSpan returns the tokens of bucket b as a span. Bucket 0 starts at MinToken,
// which no key has (it is the empty key's token), so that the span need not wrap.
func bucketSpan(b int) TokenSpan {
	first := ring.Token(uint64(b)<<(64-markBucketBits) ^ 1<<63)
	last := ring.Token((uint64(b+1)<<(64-markBucketBits) - 1) ^ 1<<63)
	if b == 0 {
		return TokenSpan{Start: ring.MinToken, End: last}
	}
	return TokenSpan{Start: first - 1, End: last}
}

// targetMarks are one target's repair marks: per bucket, the time of the newest write it
// lost in Unix microseconds, rounded up to the second; 0 when it lost none.
type targetMarks struct {
	lost   [MarkBuckets]int64
	marked int // buckets with a mark
}

// markLocked marks the buckets of tokens for target: writes made at at were lost. New or
// newer marks are written to w (the store's pebble or the batch that drops the hints).
// The caller holds mu, so that a mark of a newer write is never overwritten by an older.
func (s *Store) markLocked(w pebble.Writer, target string, at time.Time, tokens ...ring.Token) error {
	tm := s.marks[target]
	if tm == nil {
		tm = &targetMarks{}
		s.marks[target] = tm
	}
	lost := max(1, ceilSecond(at))
	for _, t := range tokens {
		b := markBucket(t)
		if tm.lost[b] >= lost {
			continue
		}
		if tm.lost[b] == 0 {
			tm.marked++
		}
		tm.lost[b] = lost
		if err := w.Set(markKey(target, b), binary.BigEndian.AppendUint64(nil, uint64(lost)), pebble.NoSync); err != nil {
			return fmt.Errorf("hint: repair mark: %w", err)
		}
	}
	return nil
}

// ceilSecond returns t in Unix microseconds, rounded up to a whole second.
func ceilSecond(t time.Time) int64 {
	us := t.UnixMicro()
	if r := us % 1e6; r > 0 {
		us += 1e6 - r
	} else if r < 0 {
		us -= r
	}
	return us
}

// tokensOf returns the tokens the ring places the writes of a hint at. Hints carry
// client keys (coord.StoreHint's mutation, as sent to replicas, which add the token
// prefix themselves: ring.EngineKey).
func tokensOf(req wire.WriteRequest) []ring.Token {
	out := make([]ring.Token, len(req.Mutations))
	for i, m := range req.Mutations {
		out[i] = ring.TokenOf(m.Key)
	}
	return out
}

// Marked returns the spans of the ring in which target lost writes that no hint will
// deliver: the marked buckets, adjacent ones merged, in ring order (the last bucket and
// the first are not merged, so no span wraps). Nil when there are none.
func (s *Store) Marked(target string) []TokenSpan {
	s.mu.Lock()
	defer s.mu.Unlock()
	tm := s.marks[target]
	if tm == nil {
		return nil
	}
	var out []TokenSpan
	for b, lost := range tm.lost {
		switch {
		case lost == 0:
		case len(out) > 0 && out[len(out)-1].End == bucketSpan(b).Start:
			out[len(out)-1].End = bucketSpan(b).End
		default:
			out = append(out, bucketSpan(b))
		}
	}
	return out
}

// MarkedTargets returns, sorted, the targets that have repair marks.
func (s *Store) MarkedTargets() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for t, tm := range s.marks {
		if tm.marked > 0 {
			out = append(out, t)
		}
	}
	slices.Sort(out)
	return out
}

// ClearMarks clears target's marks of the buckets that lie whole inside one of spans
// (every bucket when none is given) and lost no write at or after before, and returns
// how many buckets it cleared: a repair (or a rebuild, which repairs every span) that
// started at before covered them. A bucket that also lost a later write keeps its mark.
// The marks are deleted from disk before ClearMarks returns (without fsync).
func (s *Store) ClearMarks(target string, before time.Time, spans ...TokenSpan) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	tm := s.marks[target]
	if tm == nil {
		return 0, nil
	}
	covered := func(b int) bool {
		if len(spans) == 0 {
			return true
		}
		return slices.ContainsFunc(spans, func(sp TokenSpan) bool { return sp.Contains(bucketSpan(b)) })
	}
	limit := before.UnixMicro()
	var cleared []int
	batch := s.db.NewBatch()
	for b, lost := range tm.lost {
		if lost != 0 && lost < limit && covered(b) {
			_ = batch.Delete(markKey(target, b), nil)
			cleared = append(cleared, b)
		}
	}
	if len(cleared) == 0 {
		return 0, nil
	}
	if err := batch.Commit(pebble.NoSync); err != nil {
		return 0, fmt.Errorf("hint: clear repair marks: %w", err)
	}
	for _, b := range cleared {
		tm.lost[b] = 0
	}
	tm.marked -= len(cleared)
	if tm.marked == 0 {
		delete(s.marks, target)
	}
	return len(cleared), nil
}

// loadMarks reads the stored repair marks.
func (s *Store) loadMarks() error {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: markPrefix, UpperBound: markPrefixEnd})
	if err != nil {
		return fmt.Errorf("hint: %w", err)
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		target, b, err := parseMarkKey(it.Key())
		if err != nil {
			return err
		}
		if len(it.Value()) != 8 {
			return fmt.Errorf("hint: malformed repair mark of %q", target)
		}
		tm := s.marks[target]
		if tm == nil {
			tm = &targetMarks{}
			s.marks[target] = tm
		}
		if tm.lost[b] == 0 {
			tm.marked++
		}
		tm.lost[b] = int64(binary.BigEndian.Uint64(it.Value()))
	}
	return nil
}

// Mark keys are 0x00 'm', the target, 0x00, then the bucket as two bytes big-endian; the
// value is the time of the newest write lost (Unix microseconds, big-endian). Hint keys
// begin with their target, which is neither empty nor holds 0x00, so none begins 0x00.
var (
	markPrefix    = []byte("\x00m")
	markPrefixEnd = []byte("\x00n")
	// hintKeysStart is where hint keys begin: past every mark key.
	hintKeysStart = []byte{1}
)

func markKey(target string, b int) []byte {
	k := append(append(bytes.Clone(markPrefix), target...), 0)
	return binary.BigEndian.AppendUint16(k, uint16(b))
}

func parseMarkKey(k []byte) (string, int, error) {
	n := len(k)
	if n < len(markPrefix)+4 || !bytes.HasPrefix(k, markPrefix) || k[n-3] != 0 {
		return "", 0, fmt.Errorf("hint: malformed repair mark key %q", k)
	}
	b := int(binary.BigEndian.Uint16(k[n-2:]))
	if b >= MarkBuckets {
		return "", 0, fmt.Errorf("hint: repair mark key %q: bucket %d out of range", k, b)
	}
	return string(k[len(markPrefix) : n-3]), b, nil
}
