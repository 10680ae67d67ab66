package bench

import (
	"fmt"
	"math"
	"math/rand"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/pingcap/go-ycsb/pkg/generator"
	"github.com/pingcap/go-ycsb/pkg/util"
)

// OpKind is a type of benchmark operation.
type OpKind uint8

// The operation kinds, named as YCSB names them in its output.
const (
	OpRead OpKind = iota
	OpUpdate
	OpInsert
	OpScan
	OpReadModifyWrite
	OpPing
	numOpKinds
)

var opNames = [numOpKinds]string{"READ", "UPDATE", "INSERT", "SCAN", "READ-MODIFY-WRITE", "PING"}

func (k OpKind) String() string {
	if k < numOpKinds {
		return opNames[k]
	}
	return "OP(" + strconv.Itoa(int(k)) + ")"
}

// Op is one operation a Stream chose. Its slices belong to the Stream and are valid until
// the Stream's next call.
type Op struct {
	Kind       OpKind
	Key        string
	Fields     []string // fields to read; nil reads all of them
	Values     []Field  // fields to write (insert, update, read-modify-write)
	ScanLength int
	keyNum     int64
}

// itemCountScrambled is YCSB's item space for the scrambled zipfian: ranks are drawn
// from ten billion items and hashed onto the key range, so the hottest keys are spread
// over the key space instead of being the first ones loaded.
const itemCountScrambled = 10_000_000_000

// Generator is the state of one workload that all threads share: the load sequence, the
// sequence of keys inserted during the run, and the key distribution's parameters. It
// reuses go-ycsb's generators (pinned v1.0.1) and reproduces the choices of YCSB's
// CoreWorkload (Java) on top of them; go-ycsb's own CoreWorkload is not used because it
// seeds from the clock, hard-codes the zipfian constant, exits the process on bad
// settings, and does not say which operation it performed.
type Generator struct {
	w          *Workload
	fieldNames []string
	zetan      float64 // zeta(itemCountScrambled, zipfianconstant)

	loadNext atomic.Int64 // next key number to load
	loadEnd  int64        // first key number not to load

	keyLo, keyHi int64 // request key range, inclusive

	mu      sync.Mutex                     // guards inserts, latest and sequential
	inserts *generator.AcknowledgedCounter // run-phase insert key numbers
	latest  *generator.SkewedLatest        // shared: it wraps inserts
	seq     *generator.Sequential
}

// NewGenerator validates w and prepares its shared state. operations is the run phase's
// operation count (YCSB widens the zipfian key range by the inserts it expects).
func NewGenerator(w *Workload, operations int64) (*Generator, error) {
	if err := w.Validate(); err != nil {
		return nil, err
	}
	if w.RequestDistribution == "hotspot" && (w.HotspotDataFraction <= 0 || w.HotspotDataFraction >= 1) {
		return nil, fmt.Errorf("bench: hotspotdatafraction must be between 0 and 1 exclusive")
	}
	g := &Generator{w: w, loadEnd: w.InsertStart + w.insertCount()}
	g.loadNext.Store(w.InsertStart)
	for i := range w.FieldCount {
		g.fieldNames = append(g.fieldNames, "field"+strconv.FormatInt(i, 10))
	}
	g.keyLo, g.keyHi = w.InsertStart, w.InsertStart+w.insertCount()-1
	g.inserts = generator.NewAcknowledgedCounter(w.RecordCount)
	switch w.RequestDistribution {
	case "zipfian":
		// As YCSB: leave room for twice the keys the run is expected to insert; keys
		// not inserted yet are skipped when chosen (see Stream.nextKeyNum).
		g.keyHi = w.InsertStart + w.insertCount() + int64(float64(operations)*w.InsertProportion*2)
		g.zetan = Zeta(itemCountScrambled, w.ZipfianConstant)
	case "latest":
		g.latest = generator.NewSkewedLatest(g.inserts)
	case "sequential":
		g.seq = generator.NewSequential(g.keyLo, g.keyHi)
	}
	return g, nil
}

// Zeta returns the generalized harmonic number sum_{i=1..n} i^-theta. YCSB computes it
// term by term, which for its ten-billion-item scrambled zipfian takes minutes for any
// constant other than the precomputed 0.99; the Euler-Maclaurin formula below gives the
// same value to about 1e-12 relative in microseconds.
func Zeta(n int64, theta float64) float64 {
	const m = 1000
	if n <= 2*m {
		sum := 0.0
		for i := int64(1); i <= n; i++ {
			sum += math.Pow(float64(i), -theta)
		}
		return sum
	}
	sum := 0.0
	for i := 1; i < m; i++ {
		sum += math.Pow(float64(i), -theta)
	}
	a, b := float64(m), float64(n)
	f := func(x float64) float64 { return math.Pow(x, -theta) }
	d1 := func(x float64) float64 { return -theta * math.Pow(x, -theta-1) }
	d3 := func(x float64) float64 { return -theta * (theta + 1) * (theta + 2) * math.Pow(x, -theta-3) }
	integral := (math.Pow(b, 1-theta) - math.Pow(a, 1-theta)) / (1 - theta)
	return sum + integral + (f(a)+f(b))/2 + (d1(b)-d1(a))/12 - (d3(b)-d3(a))/720
}

// Stream is one thread's view of a Generator: its own random source and the generators
// that keep per-call state. A Stream is not safe for concurrent use.
type Stream struct {
	g        *Generator
	r        *rand.Rand
	ops      *generator.Discrete
	keys     interface{ Next(*rand.Rand) int64 } // nil for latest and sequential (shared)
	fieldLen interface{ Next(*rand.Rand) int64 }
	fieldIdx *generator.Uniform
	scanLen  interface{ Next(*rand.Rand) int64 }

	op     Op
	fields [1]string
	values []Field
	buf    []byte
}

// Stream returns a new thread stream whose choices are fixed by seed.
func (g *Generator) Stream(seed int64) *Stream {
	w := g.w
	s := &Stream{g: g, r: rand.New(rand.NewSource(seed)), ops: generator.NewDiscrete()}
	for _, p := range []struct {
		weight float64
		kind   OpKind
	}{{w.ReadProportion, OpRead}, {w.UpdateProportion, OpUpdate}, {w.InsertProportion, OpInsert},
		{w.ScanProportion, OpScan}, {w.ReadModifyWriteProportion, OpReadModifyWrite}, {w.PingProportion, OpPing}} {
		if p.weight > 0 {
			s.ops.Add(p.weight, int64(p.kind))
		}
	}
	switch w.RequestDistribution {
	case "uniform":
		s.keys = generator.NewUniform(g.keyLo, g.keyHi)
	case "zipfian":
		s.keys = &scrambledZipfian{gen: generator.NewZipfian(0, itemCountScrambled-1, w.ZipfianConstant, g.zetan),
			min: g.keyLo, items: g.keyHi - g.keyLo + 1}
	case "hotspot":
		s.keys = generator.NewHotspot(g.keyLo, g.keyHi, w.HotspotDataFraction, w.HotspotOpnFraction)
	}
	switch w.FieldLengthDistribution {
	case "constant":
		s.fieldLen = generator.NewConstant(w.FieldLength)
	case "uniform":
		s.fieldLen = generator.NewUniform(1, w.FieldLength)
	case "zipfian":
		s.fieldLen = generator.NewZipfianWithRange(1, w.FieldLength, DefaultZipfianConstant)
	}
	if w.ScanLengthDistribution == "zipfian" {
		s.scanLen = generator.NewZipfianWithRange(1, w.MaxScanLength, DefaultZipfianConstant)
	} else {
		s.scanLen = generator.NewUniform(1, w.MaxScanLength)
	}
	s.fieldIdx = generator.NewUniform(0, w.FieldCount-1)
	return s
}

// scrambledZipfian is go-ycsb's ScrambledZipfian with the zeta constant supplied, so
// that constants other than 0.99 cost nothing to set up (see Zeta).
type scrambledZipfian struct {
	gen        *generator.Zipfian
	min, items int64
}

func (z *scrambledZipfian) Next(r *rand.Rand) int64 {
	return z.min + util.Hash64(z.gen.Next(r))%z.items
}

// NextLoad returns the next record to insert in the load phase, or false when every
// record of insertstart..insertstart+insertcount has been handed out.
func (s *Stream) NextLoad() (*Op, bool) {
	n := s.g.loadNext.Add(1) - 1
	if n >= s.g.loadEnd {
		return nil, false
	}
	s.op = Op{Kind: OpInsert, Key: s.g.KeyName(n), keyNum: -1}
	s.op.Values = s.allValues()
	return &s.op, true
}

// Next returns the next run-phase operation. Done must be called once it completed.
func (s *Stream) Next() *Op {
	kind := OpKind(s.ops.Next(s.r))
	s.op = Op{Kind: kind, keyNum: -1}
	switch kind {
	case OpPing:
		return &s.op
	case OpInsert:
		s.g.mu.Lock()
		s.op.keyNum = s.g.inserts.Next(s.r)
		s.g.mu.Unlock()
		s.op.Key = s.g.KeyName(s.op.keyNum)
		s.op.Values = s.allValues()
		return &s.op
	}
	s.op.Key = s.g.KeyName(s.nextKeyNum())
	if kind == OpScan {
		s.op.ScanLength = int(s.scanLen.Next(s.r))
	}
	if kind == OpRead || kind == OpScan || kind == OpReadModifyWrite {
		s.op.Fields = s.readFields()
	}
	if kind == OpUpdate || kind == OpReadModifyWrite {
		if s.g.w.WriteAllFields {
			s.op.Values = s.allValues()
		} else {
			s.op.Values = s.oneValue()
		}
	}
	return &s.op
}

// Done acknowledges op: a run-phase insert's key becomes readable by later operations
// (YCSB's acknowledged counter), whether or not the insert succeeded, as in YCSB.
func (s *Stream) Done(op *Op) {
	if op.keyNum < 0 {
		return
	}
	s.g.mu.Lock()
	s.g.inserts.Acknowledge(op.keyNum)
	s.g.mu.Unlock()
}

// nextKeyNum chooses an existing record's number, as YCSB's CoreWorkload.nextKeynum: a
// key beyond the last acknowledged insert is drawn again. (YCSB's zipfian range ends one
// past the loaded keys plus room for the run's inserts, so this matters even without
// inserts.)
func (s *Stream) nextKeyNum() int64 {
	g := s.g
	switch {
	case g.latest != nil:
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.latest.Next(s.r)
	case g.seq != nil:
		return g.seq.Next(s.r)
	}
	for {
		// Last is an atomic load in go-ycsb's AcknowledgedCounter.
		if n := s.keys.Next(s.r); n <= g.inserts.Last() {
			return n
		}
	}
}

func (s *Stream) readFields() []string {
	if s.g.w.ReadAllFields {
		return nil
	}
	s.fields[0] = s.g.fieldNames[s.fieldIdx.Next(s.r)]
	return s.fields[:]
}

func (s *Stream) allValues() []Field {
	s.values = s.values[:0]
	s.buf = s.buf[:0]
	for _, name := range s.g.fieldNames {
		s.values = append(s.values, Field{Name: name, Value: s.value()})
	}
	return s.values
}

func (s *Stream) oneValue() []Field {
	s.buf = s.buf[:0]
	s.values = append(s.values[:0], Field{Name: s.g.fieldNames[s.fieldIdx.Next(s.r)], Value: s.value()})
	return s.values
}

// value appends a random printable value of the configured length to the stream's
// buffer and returns it. YCSB draws one random letter per byte; drawing ten per 64-bit
// number gives equally random letters at a fraction of the client's CPU.
func (s *Stream) value() []byte {
	n := int(s.fieldLen.Next(s.r))
	start := len(s.buf)
	if cap(s.buf)-start < n {
		// Values already handed out keep pointing into the old buffer.
		grown := make([]byte, start, 2*cap(s.buf)+n)
		copy(grown, s.buf)
		s.buf = grown
	}
	for len(s.buf)-start < n {
		x := s.r.Uint64()
		for j := 0; j < 10 && len(s.buf)-start < n; j++ {
			s.buf = append(s.buf, letters[x&63])
			x >>= 6
		}
	}
	return s.buf[start : start+n : start+n]
}

// letters are the 64 printable bytes values are made of.
const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_"

// KeyName returns record n's key as YCSB builds it: keyprefix followed by the number,
// hashed unless insertorder=ordered, zero-padded to zeropadding digits. The hash is
// go-ycsb's util.Hash64 (FNV-1a over the number's big-endian bytes), so keys match
// go-ycsb's; Java YCSB hashes the bytes little-endian and so names records differently.
func (g *Generator) KeyName(n int64) string {
	if g.w.InsertOrder == "hashed" {
		n = util.Hash64(n)
	}
	digits := strconv.FormatInt(n, 10)
	b := make([]byte, 0, len(g.w.KeyPrefix)+max(len(digits), int(g.w.ZeroPadding)))
	b = append(b, g.w.KeyPrefix...)
	for i := len(digits); i < int(g.w.ZeroPadding); i++ {
		b = append(b, '0')
	}
	return string(append(b, digits...))
}

// FieldNames returns field0..field(fieldcount-1).
func (g *Generator) FieldNames() []string { return g.fieldNames }
