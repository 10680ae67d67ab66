package space_test

import (
	"errors"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/engine/space"
)

// device is a fake device: its free space is set by the test, statfs calls are counted.
type device struct {
	avail, total uint64
	err          error
	stats        int
}

func (d *device) stat(string) (space.Usage, error) {
	d.stats++
	return space.Usage{AvailBytes: d.avail, TotalBytes: d.total}, d.err
}

// write admits n bytes and, if admitted, takes them from the device, as the write would.
func (d *device) write(g *space.Guard, n int64) error {
	err := g.Admit(n)
	if err == nil {
		d.avail -= uint64(n)
	}
	return err
}

// clock is a fake clock the test moves by hand.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

const mib = 1 << 20

func newGuard(t *testing.T, d *device, reserve int64) (*space.Guard, *clock) {
	t.Helper()
	c := &clock{t: time.Unix(1000, 0)}
	g := space.New("/data", space.Options{ReserveBytes: reserve, Stat: d.stat, Now: c.now, RefreshInterval: time.Second})
	return g, c
}

func TestGuardRefusesWritesThatWouldEatTheReserve(t *testing.T) {
	d := &device{avail: 100 * mib, total: 10_000 * mib}
	g, _ := newGuard(t, d, 64*mib)
	// 36 MiB may be written before the reserve; each write below refresh size (4 MiB).
	for i := range 12 {
		if err := d.write(g, 3*mib); err != nil {
			t.Fatalf("write %d of 3 MiB (%d MiB admitted): %v", i, 3*i, err)
		}
	}
	err := d.write(g, 1*mib) // 36 + 1 > 36
	if !errors.Is(err, engine.ErrNoSpace) {
		t.Fatalf("Admit past the reserve = %v, want engine.ErrNoSpace", err)
	}
	if s := g.Stats(); !s.Low || s.Refused != 1 || s.ReserveBytes != 64*mib || s.AvailBytes != 64*mib {
		t.Fatalf("Stats = %+v, want low, 1 refused, 64 MiB reserve and 64 MiB free", s)
	}
}

func TestGuardEstimatesBetweenStatfsCalls(t *testing.T) {
	d := &device{avail: 1000 * mib, total: 10_000 * mib}
	g, c := newGuard(t, d, 160*mib) // statfs again every 10 MiB admitted
	base := d.stats
	for range 9 {
		if err := g.Admit(mib); err != nil {
			t.Fatal(err)
		}
	}
	if d.stats != base {
		t.Fatalf("statfs called %d times for 9 MiB admitted, want 0 (refresh every 10 MiB)", d.stats-base)
	}
	if got := g.Stats().AvailBytes; got != 991*mib {
		t.Fatalf("estimate = %d MiB, want 991", got/mib)
	}
	// Another writer filled the device: the next refresh sees it.
	d.avail = 150 * mib
	if err := g.Admit(2 * mib); !errors.Is(err, engine.ErrNoSpace) {
		t.Fatalf("Admit once 11 MiB are admitted, with the device at 150 MiB free = %v, want refused", err)
	}
	if d.stats != base+1 {
		t.Fatalf("statfs called %d times, want 1", d.stats-base)
	}
	// So does the clock, without writes.
	d.avail = 500 * mib
	c.t = c.t.Add(99 * time.Millisecond)
	if err := g.Admit(mib); !errors.Is(err, engine.ErrNoSpace) {
		t.Fatalf("Admit 99 ms after a refusal = %v, want still refused (no statfs yet)", err)
	}
	c.t = c.t.Add(time.Millisecond)
	if err := g.Admit(mib); err != nil {
		t.Fatalf("Admit 100 ms after a refusal, with space freed = %v, want admitted", err)
	}
	if d.stats != base+2 {
		t.Fatalf("statfs called %d times, want 2", d.stats-base)
	}
	d.avail = 100 * mib
	c.t = c.t.Add(999 * time.Millisecond)
	if err := g.Admit(mib); err != nil {
		t.Fatalf("Admit within the refresh interval = %v, want admitted on the estimate", err)
	}
	c.t = c.t.Add(time.Millisecond)
	if err := g.Admit(mib); !errors.Is(err, engine.ErrNoSpace) {
		t.Fatalf("Admit after the refresh interval, the device at 100 MiB free = %v, want refused", err)
	}
}

func TestGuardCapsTheReserveOnASmallDevice(t *testing.T) {
	d := &device{avail: 30 * mib, total: 40 * mib}
	g, _ := newGuard(t, d, 0) // the default, 256 MiB, is more than the device
	if s := g.Stats(); s.ReserveBytes != 4*mib {
		t.Fatalf("reserve = %d bytes, want a tenth of the 40 MiB device", s.ReserveBytes)
	}
	for range 26 {
		if err := d.write(g, mib); err != nil {
			t.Fatalf("Admit leaving at least the reserve: %v", err)
		}
	}
	if err := d.write(g, 1); !errors.Is(err, engine.ErrNoSpace) {
		t.Fatalf("Admit past it = %v", err)
	}
}

func TestGuardAdmitsWhenItCannotTell(t *testing.T) {
	d := &device{err: errors.New("statfs: unsupported")}
	g, c := newGuard(t, d, 64*mib)
	if err := g.Admit(mib); err != nil {
		t.Fatalf("Admit with statfs failing = %v, want admitted", err)
	}
	if s := g.Stats(); s.Err == nil {
		t.Fatal("Stats hides the statfs error")
	}
	// Once statfs works again the guard guards.
	d.err, d.avail, d.total = nil, 10*mib, 10_000*mib
	c.t = c.t.Add(time.Second)
	if err := g.Admit(mib); !errors.Is(err, engine.ErrNoSpace) {
		t.Fatalf("Admit once statfs reports 10 MiB free = %v, want refused", err)
	}
}

func TestDisabledAndNilGuardsAdmitEverything(t *testing.T) {
	d := &device{avail: 0, total: 10_000 * mib}
	g, _ := newGuard(t, d, -1)
	if err := g.Admit(1 << 40); err != nil {
		t.Fatalf("disabled guard: %v", err)
	}
	if d.stats != 0 {
		t.Fatalf("a disabled guard called statfs %d times", d.stats)
	}
	var none *space.Guard
	if err := none.Admit(1 << 40); err != nil {
		t.Fatalf("nil guard: %v", err)
	}
	if s := none.Stats(); s != (space.Stats{}) {
		t.Fatalf("nil guard's Stats = %+v", s)
	}
}

func TestStatfsReadsARealDirectory(t *testing.T) {
	u, err := space.Statfs(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if u.TotalBytes == 0 || u.AvailBytes > u.TotalBytes {
		t.Fatalf("Statfs = %+v", u)
	}
	if _, err := space.Statfs("/no/such/directory"); err == nil {
		t.Fatal("Statfs of a missing directory succeeded")
	}
}

func TestGuardLetsFreeingWritesUseHalfTheReserve(t *testing.T) {
	d := &device{avail: 100 * mib, total: 10_000 * mib}
	g, _ := newGuard(t, d, 80*mib)
	if err := g.Admit(30 * mib); !errors.Is(err, engine.ErrNoSpace) {
		t.Fatalf("Admit into the reserve = %v, want refused", err)
	}
	if !g.Low(30*mib) || g.Low(mib) {
		t.Fatal("Low with 100 MiB free and an 80 MiB reserve: want true for 30 MiB and false for 1 MiB")
	}
	if err := g.AdmitFreeing(30 * mib); err != nil {
		t.Fatalf("AdmitFreeing leaving 70 MiB, over half the reserve: %v", err)
	}
	d.avail -= 30 * mib // the write lands
	if err := g.AdmitFreeing(40 * mib); !errors.Is(err, engine.ErrNoSpace) {
		t.Fatalf("AdmitFreeing into the second half of the reserve = %v, want refused", err)
	}
}

func TestGuardLowAdmitsNothing(t *testing.T) {
	d := &device{avail: 100 * mib, total: 10_000 * mib}
	g, _ := newGuard(t, d, 64*mib)
	if g.Low(mib) {
		t.Fatal("Low with 36 MiB above the reserve")
	}
	if !g.Low(40 * mib) {
		t.Fatal("not Low for a write of 40 MiB with 36 MiB above the reserve")
	}
	if s := g.Stats(); s.AvailBytes != 100*mib || s.Refused != 0 {
		t.Fatalf("Low changed the estimate or counted a refusal: %+v", s)
	}
}
