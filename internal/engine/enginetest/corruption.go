package enginetest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"testing"

	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/row"
)

// corruptionRows is how many rows RunCorruption writes (about 600 KB), enough that the
// largest file holds many blocks or pages.
const corruptionRows = 2000

// corruptionFlips is how many bytes each flip variant changes.
const corruptionFlips = 8

// maxDamagedGetErrors thins out the Gets of a damaged dir: past this many failed reads only
// every tenth key is read, since engines may take milliseconds per failed read and the
// errors cluster around the damage anyway.
const maxDamagedGetErrors = 20

// RunCorruption writes known rows, flushes and closes, then damages a fresh copy of the
// data dir per sub-test: the largest file truncated to half, bytes flipped at seeded random
// offsets of it, and the same two aimed at where written values sit in the file. Opening
// the damaged copy must either fail, or every Get and the full scan must return the exact
// written row or an error: never a different row, never silently nothing, never a panic
// or memory fault. Each outcome is logged. The seed is logged and taken from KURA_SEED
// like RunMetamorphic's. Skipped unless f.Persistent.
func RunCorruption(t *testing.T, f Factory) {
	if !f.Persistent {
		t.Skipf("%s is not persistent: nothing on disk to corrupt", f.Name)
	}
	seed := metamorphicSeeds(t)[0]
	t.Logf("corruption seed %d (rerun with KURA_SEED=%d)", seed, seed)
	c := prepareCorruption(t, f)
	for _, v := range corruptionVariants(seed) {
		t.Run(v.name, func(t *testing.T) { c.run(t, f, v) })
	}
}

// corruptionCase is a clean, closed data dir, its largest file and the rows written.
type corruptionCase struct {
	clean   string
	largest string // relative to clean
	size    int64
	want    []kv
}

// corruptionVariant damages the contents of the largest file (given the rows written) and
// returns the damaged contents and a description of the damage.
type corruptionVariant struct {
	name    string
	corrupt func(data []byte, want []kv) ([]byte, string)
}

// corruptionVariants: the blind ones (truncate to half, flip random bytes) follow the
// brief; the targeted ones find written values in the file and damage them, because an
// engine may preallocate a file far larger than its data (bbolt does), where blind damage
// mostly lands in unused space. Targeted damage needs values stored verbatim; where none
// is found it falls back to random offsets.
func corruptionVariants(seed uint64) []corruptionVariant {
	vs := []corruptionVariant{{"damage=truncate-half", func(data []byte, _ []kv) ([]byte, string) {
		return data[:len(data)/2], fmt.Sprintf("truncated from %d to %d bytes", len(data), len(data)/2)
	}}}
	for trial := range 4 {
		rng := rand.New(rand.NewPCG(seed, uint64(trial)))
		vs = append(vs, corruptionVariant{fmt.Sprintf("damage=flip-bytes/trial=%d", trial),
			func(data []byte, _ []kv) ([]byte, string) { return flipBytes(data, randomOffsets(rng, len(data))) }})
	}
	rng := rand.New(rand.NewPCG(seed, 100))
	vs = append(vs, corruptionVariant{"damage=truncate-in-data", func(data []byte, want []kv) ([]byte, string) {
		offs := valueOffsets(rng, data, want, 1)
		if len(offs) == 0 {
			return data, "no written value found verbatim: file left whole"
		}
		return data[:offs[0]], fmt.Sprintf("truncated from %d to %d bytes, inside a written value", len(data), offs[0])
	}})
	for trial := range 2 {
		rng := rand.New(rand.NewPCG(seed, uint64(200+trial)))
		vs = append(vs, corruptionVariant{fmt.Sprintf("damage=flip-value-bytes/trial=%d", trial),
			func(data []byte, want []kv) ([]byte, string) {
				offs := valueOffsets(rng, data, want, corruptionFlips)
				if len(offs) == 0 {
					offs = randomOffsets(rng, len(data))
				}
				return flipBytes(data, offs)
			}})
	}
	return vs
}

// prepareCorruption writes the rows, flushes and closes the engine.
func prepareCorruption(t testing.TB, f Factory) *corruptionCase {
	c := &corruptionCase{clean: t.TempDir()}
	clk := NewManualClock(StartMicros)
	e, err := f.Open(c.clean, periodicOptions(clk))
	if err != nil {
		t.Fatalf("%s: open: %v", f.Name, err)
	}
	rng := rand.New(rand.NewPCG(11, 12))
	batch := make([]row.Mutation, 0, 100)
	for i := range corruptionRows {
		r := RandomRow(rng, 4, 64, StartMicros+int64(i))
		if i%10 == 0 {
			r.Cells[1] = tomb(string(r.Cells[1].Name), StartMicros+int64(i))
		}
		kv := kv{key: fmt.Appendf(nil, "row%05d", i), row: r}
		c.want = append(c.want, kv)
		batch = append(batch, row.Mutation{Key: kv.key, Row: kv.row})
		if len(batch) == cap(batch) {
			if err := e.Apply(batch); err != nil {
				t.Fatalf("%s: apply: %v", f.Name, err)
			}
			batch = batch[:0]
		}
	}
	if err := e.Flush(); err != nil {
		t.Fatalf("%s: flush: %v", f.Name, err)
	}
	if err := e.Close(); err != nil {
		t.Fatalf("%s: close: %v", f.Name, err)
	}
	c.largest, c.size = largestFile(t, c.clean)
	return c
}

// run damages a fresh copy of the clean dir with v and checks what the engine reads.
func (c *corruptionCase) run(t testing.TB, f Factory, v corruptionVariant) {
	dir := copyDir(t, c.clean)
	path := filepath.Join(dir, c.largest)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("corruption: %v", err)
	}
	data, what := v.corrupt(data, c.want)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatalf("corruption: %v", err)
	}
	t.Logf("%s: %s: %s", f.Name, c.largest, what)
	res := readDamaged(f, dir, c.want)
	t.Logf("%s: %s", f.Name, res)
	if res.panicked != "" || res.wrong > 0 || res.missing > 0 {
		t.Errorf("%s: after damage (%s) the engine returned wrong data: %s", f.Name, what, res)
	}
}

// damageResult counts what reads of a damaged dir returned.
type damageResult struct {
	openErr                     error
	panicked                    string
	exact, errs, missing, wrong int
	skipped                     int // keys not read, see maxDamagedGetErrors
	scanExact, scanWrong        int
	scanErr                     error
	firstWrong                  string
}

func (r damageResult) String() string {
	switch {
	case r.panicked != "":
		return "panicked: " + r.panicked
	case r.openErr != nil:
		return fmt.Sprintf("open failed (ErrCorrupt: %t): %v", errors.Is(r.openErr, engine.ErrCorrupt), r.openErr)
	}
	s := fmt.Sprintf("open ok; gets: %d exact, %d errors, %d missing, %d wrong", r.exact, r.errs, r.missing, r.wrong)
	if r.skipped > 0 {
		s += fmt.Sprintf(", %d not read (sampling after %d errors)", r.skipped, maxDamagedGetErrors)
	}
	s += fmt.Sprintf("; scan: %d exact, %d wrong, error %v", r.scanExact, r.scanWrong, r.scanErr)
	if r.firstWrong != "" {
		s += "; first bad read: " + r.firstWrong
	}
	return s
}

func (r *damageResult) bad(format string, args ...any) {
	if r.firstWrong == "" {
		r.firstWrong = fmt.Sprintf(format, args...)
	}
}

// readDamaged opens dir and reads every row. A memory fault (an engine reading a mapped
// file past its truncated end) or panic is recorded rather than crashing the test binary.
func readDamaged(f Factory, dir string, want []kv) (res damageResult) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if p := recover(); p != nil {
			res.panicked = fmt.Sprint(p)
		}
	}()
	e, err := f.Open(dir, periodicOptions(NewManualClock(StartMicros+corruptionRows)))
	if err != nil {
		res.openErr = err
		return res
	}
	for i, w := range want {
		if res.errs >= maxDamagedGetErrors && i%10 != 0 {
			res.skipped++
			continue
		}
		r, found, err := e.Get(w.key)
		switch {
		case err != nil:
			res.errs++
		case !found:
			res.missing++
			res.bad("get %q: not found", w.key)
		case !RowsEqual(r, w.row):
			res.wrong++
			res.bad("get %q: %s, wrote %s", w.key, FormatRow(r), FormatRow(w.row))
		default:
			res.exact++
		}
	}
	res.checkScan(e, want)
	e.Close()
	return res
}

// checkScan: every scanned row must be a written one; a scan that ends without an error
// must have returned all of them.
func (res *damageResult) checkScan(e engine.Engine, want []kv) {
	got, err := scan(e, nil, nil)
	res.scanErr = err
	i := 0
	for _, g := range got {
		for i < len(want) && string(want[i].key) < string(g.key) {
			i++
		}
		if i == len(want) || string(want[i].key) != string(g.key) || !RowsEqual(g.row, want[i].row) {
			res.scanWrong++
			res.bad("scan: %q %s", g.key, FormatRow(g.row))
			continue
		}
		res.scanExact++
	}
	if err == nil && res.scanExact != len(want) {
		res.missing += len(want) - res.scanExact
		res.bad("scan ended without error after %d of %d rows", res.scanExact, len(want))
	}
	res.wrong += res.scanWrong
}

// randomOffsets picks corruptionFlips distinct offsets below size.
func randomOffsets(rng *rand.Rand, size int) []int {
	var offs []int
	for len(offs) < min(corruptionFlips, size) {
		if off := rng.IntN(size); !slices.Contains(offs, off) {
			offs = append(offs, off)
		}
	}
	return offs
}

// valueOffsets finds up to n written values stored verbatim in data and returns an offset
// inside each.
func valueOffsets(rng *rand.Rand, data []byte, want []kv, n int) []int {
	var offs, starts []int
	for tries := 0; len(offs) < n && tries < 4*n; tries++ {
		r := want[rng.IntN(len(want))].row
		v := r.Cells[rng.IntN(len(r.Cells))].Value
		if len(v) == 0 {
			continue
		}
		if i := bytes.Index(data, v); i >= 0 && !slices.Contains(starts, i) {
			starts = append(starts, i)
			offs = append(offs, i+rng.IntN(len(v)))
		}
	}
	return offs
}

// flipBytes XORs data at each offset with a non-zero byte derived from the offset.
func flipBytes(data []byte, offs []int) ([]byte, string) {
	slices.Sort(offs)
	for _, off := range offs {
		data[off] ^= byte(1 + off%255)
	}
	return data, fmt.Sprintf("flipped bytes at offsets %v of %d", offs, len(data))
}

// largestFile returns the path (relative to dir) and size of the largest regular file.
func largestFile(t testing.TB, dir string) (string, int64) {
	var best string
	var size int64 = -1
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		info, err := d.Info()
		if err == nil && info.Size() > size {
			best, size = path, info.Size()
		}
		return err
	})
	if err != nil || size <= 0 {
		t.Fatalf("corruption: no data file in %s (%v)", dir, err)
	}
	rel, _ := filepath.Rel(dir, best)
	return rel, size
}

// copyDir copies the regular files and directories under src into a new temp dir.
func copyDir(t testing.TB, src string) string {
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case d.Type().IsRegular():
			return copyFile(path, target)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("corruption: copy %s: %v", src, err)
	}
	return dst
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
