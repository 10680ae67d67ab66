package movesim

import (
	"strings"

	"github.com/kuradb/kura/internal/ring"
)

// RatePoint is the average rate over an interval of the timeline, at its midpoint.
type RatePoint struct {
	Seconds        float64
	BytesPerSecond float64
}

// Throughput returns, from a simulation that recorded its timeline (Options.Timeline),
// the summed rate of the links whose names keep, averaged over buckets equal intervals of
// [0, Seconds]: the bytes each interval carried over its length, so that no transfer's
// bytes are lost between samples. Nil without a timeline.
func (r *Result) Throughput(buckets int, keep func(link string) bool) []RatePoint {
	if r.Sim == nil || buckets < 1 || !(r.Seconds > 0) {
		return nil
	}
	samples := r.Sim.Timeline()
	if len(samples) == 0 {
		return nil
	}
	width := r.Seconds / float64(buckets)
	bytes := make([]float64, buckets)
	// add spreads rate bps over [from, to) into the buckets it covers.
	add := func(from, to, bps float64) {
		for from < to && bps != 0 {
			k := min(int(from/width), buckets-1)
			if k < buckets-1 && float64(k+1)*width <= from { // from/width rounded down
				k++
			}
			end := min(to, float64(k+1)*width)
			if k == buckets-1 {
				end = to
			}
			bytes[k] += bps * (end - from)
			from = end
		}
	}
	current := map[int32]float64{}
	var total, last float64
	for _, s := range samples {
		if !keep(r.Links[s.Link]) {
			continue
		}
		add(last, s.TimeSeconds, total)
		last = s.TimeSeconds
		total += s.RateBytesPerSecond - current[int32(s.Link)]
		current[int32(s.Link)] = s.RateBytesPerSecond
	}
	add(last, r.Seconds, total)
	out := make([]RatePoint, buckets)
	for k, b := range bytes {
		out[k] = RatePoint{Seconds: (float64(k) + 0.5) * width, BytesPerSecond: max(b/width, 0)}
	}
	return out
}

// Link selectors for Throughput: every node's disk writes (the cluster's copied bytes
// landing), and one node's disk reads (what it sends) or writes (what it receives).
func AllWrites(link string) bool { return strings.HasSuffix(link, ".disk.write") }

// NodeReads selects node id's disk reads.
func NodeReads(id ring.NodeID) func(string) bool {
	return func(link string) bool { return link == string(id)+".disk.read" }
}

// NodeWrites selects node id's disk writes.
func NodeWrites(id ring.NodeID) func(string) bool {
	return func(link string) bool { return link == string(id)+".disk.write" }
}
