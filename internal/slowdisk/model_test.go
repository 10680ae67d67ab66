package slowdisk

import (
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)

func TestARandomReadCostsAnAccessAndItsTransfer(t *testing.T) {
	d := New(Config{})
	done := d.Submit(t0, 1<<30, 4096, false)
	want := DefaultAccess + seconds(4096/DefaultReadBytesPerSecond)
	if got := done.Sub(t0); got != want {
		t.Fatalf("a lone random read took %v, want %v", got, want)
	}
}

func TestSequentialRequestsDoNotSeek(t *testing.T) {
	d := New(Config{})
	const base = 1 << 30 // away from the idle head's offset 0: the first request seeks
	at := d.Submit(t0, base, 1<<20, false)
	for i := int64(1); i < 100; i++ {
		at = d.Submit(at, base+i<<20, 1<<20, false)
	}
	// 100 MiB at 140 MB/s plus one access for the first request.
	want := DefaultAccess + seconds(100*(1<<20)/DefaultReadBytesPerSecond)
	if got := at.Sub(t0); got < want-time.Microsecond || got > want { // each request rounds down a nanosecond
		t.Fatalf("100 sequential MiB took %v, want %v", got, want)
	}
	if s := d.Stats(); s.Accesses != 1 || s.Reads != 100 || s.ReadBytes != 100<<20 {
		t.Fatalf("stats %+v", s)
	}
}

func TestASmallForwardGapCostsItsPassingNotASeek(t *testing.T) {
	d := New(Config{SequentialGapBytes: 64 << 10})
	at := d.Submit(t0, 0, 4096, false)
	next := d.Submit(at, 4096+32<<10, 4096, false)
	if got, want := next.Sub(at), seconds((32<<10+4096)/DefaultReadBytesPerSecond); got != want {
		t.Fatalf("a 32 KiB skip cost %v, want %v", got, want)
	}
	// Past the gap, or backwards, the head seeks.
	far := d.Submit(next, 1<<30, 4096, false)
	back := d.Submit(far, 0, 4096, false)
	if far.Sub(next) < DefaultAccess || back.Sub(far) < DefaultAccess {
		t.Fatalf("a far and a backward request cost %v and %v, under an access", far.Sub(next), back.Sub(far))
	}
}

func TestWritesUseTheWriteRate(t *testing.T) {
	d := New(Config{Access: time.Millisecond, WriteBytesPerSecond: 1e6})
	done := d.Submit(t0, 1<<20, 1e6, true)
	if got := done.Sub(t0); got != time.Second+time.Millisecond {
		t.Fatalf("1 MB written at 1 MB/s took %v", got)
	}
	if s := d.Stats(); s.Writes != 1 || s.WriteBytes != 1e6 || s.Reads != 0 {
		t.Fatalf("stats %+v", s)
	}
}

// One head: requests arriving together finish one after another, and their waits add up
// to what the head was busy with before each.
func TestRequestsQueueBehindTheHead(t *testing.T) {
	d := New(Config{Access: 5 * time.Millisecond, ReadBytesPerSecond: 1e12, WriteBytesPerSecond: 1e12})
	var last time.Time
	for i := range 10 {
		last = d.Submit(t0, int64(i+1)<<30, 1, i%2 == 0) // reads and writes share the head
	}
	if got := last.Sub(t0); got != 50*time.Millisecond {
		t.Fatalf("ten random requests at once done after %v, want 50ms", got)
	}
	if q := d.Stats().Queued; q != 225*time.Millisecond { // 0+5+10+...+45 ms
		t.Fatalf("queued %v, want 225ms", q)
	}
	// An idle head does not bank time: a request long after the last starts at arrival.
	later := t0.Add(time.Hour)
	if got := d.Submit(later, 0, 1, false).Sub(later); got != 5*time.Millisecond {
		t.Fatalf("a request after an idle hour took %v", got)
	}
}

// Random requests at queue depth one come out at 1/Access a second, whatever their order,
// and the head is never busy longer than the time that passed.
func TestRandomRequestsRunAtTheAccessRate(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("KURA_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (KURA_SEED to repeat)", seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	d := New(Config{})
	at := t0
	const n = 2000
	for range n {
		at = d.Submit(at, rng.Int64N(1<<40)&^4095, 4096, rng.IntN(2) == 0)
	}
	perSecond := n / at.Sub(t0).Seconds()
	if perSecond < 190 || perSecond > 200 {
		t.Fatalf("%.1f random 4 KiB requests a second, want just under 200", perSecond)
	}
	if s := d.Stats(); s.Busy != at.Sub(t0) || s.Accesses < n-5 {
		t.Fatalf("busy %v over %v; %d accesses of %d", s.Busy, at.Sub(t0), s.Accesses, n)
	}
}

func TestConfigValidation(t *testing.T) {
	for _, c := range []Config{
		{Access: -time.Millisecond},
		{ReadBytesPerSecond: -1},
		{WriteBytesPerSecond: -5},
		{SequentialGapBytes: -1},
	} {
		if err := c.WithDefaults().Validate(); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
	if err := (Config{}).WithDefaults().Validate(); err != nil {
		t.Fatal(err)
	}
}
