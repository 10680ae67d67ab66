package flowsim

import (
	"cmp"
	"encoding/csv"
	"io"
	"math"
	"slices"
	"strconv"
)

// Sample says that from TimeSeconds on, until the link's next sample, the flows crossing Link
// carried RateBytesPerSecond together. A link's rate before its first sample is 0.
type Sample struct {
	TimeSeconds        float64
	Link               LinkID
	RateBytesPerSecond float64
}

// sampleTolerance: a link's rate that moved by less than this fraction of its capacity (the
// rounding of a sum recomputed) is not a new sample.
const sampleTolerance = 1e-12

// sample records the link's load if it changed; two solves at one instant leave one sample.
func (s *Sim) sample(l LinkID) {
	ls := &s.links[l]
	i := s.lastIndex[l]
	if i < 0 {
		if ls.load == 0 {
			return
		}
	} else {
		last := &s.timeline[i]
		if math.Abs(last.RateBytesPerSecond-ls.load) <= sampleTolerance*ls.capacity {
			return
		}
		if last.TimeSeconds == s.now {
			last.RateBytesPerSecond = ls.load
			return
		}
	}
	s.timeline = append(s.timeline, Sample{TimeSeconds: s.now, Link: l, RateBytesPerSecond: ls.load})
	s.lastIndex[l] = int32(len(s.timeline) - 1)
}

// Timeline returns the samples recorded so far, by time and then link; nil unless
// Config.Timeline was set. Each link's rate is piecewise constant between its samples, and
// its last sample is 0 once no flow crosses it. The slice is the caller's.
func (s *Sim) Timeline() []Sample {
	s.solve()
	out := slices.Clone(s.timeline)
	slices.SortStableFunc(out, func(a, b Sample) int {
		return cmp.Or(cmp.Compare(a.TimeSeconds, b.TimeSeconds), cmp.Compare(a.Link, b.Link))
	})
	return out
}

// WriteTimelineCSV writes the timeline as CSV with the header time,link,rate: time in
// seconds, the link's name (its id when it has none), rate in bytes per second.
func (s *Sim) WriteTimelineCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"time", "link", "rate"})
	for _, p := range s.Timeline() {
		name := s.links[p.Link].name
		if name == "" {
			name = strconv.Itoa(int(p.Link))
		}
		cw.Write([]string{
			strconv.FormatFloat(p.TimeSeconds, 'g', -1, 64),
			name,
			strconv.FormatFloat(p.RateBytesPerSecond, 'g', -1, 64),
		})
	}
	cw.Flush()
	return cw.Error()
}
