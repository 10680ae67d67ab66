package btree

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"testing"

	"go.etcd.io/bbolt"

	"github.com/kuradb/kura/internal/row"
)

// damageRows and damageTrials size TestDamagedFileNeverReturnsWrongRows;
// KURA_DAMAGE_TRIALS overrides the number of trials.
const (
	damageRows   = 2000
	damageTrials = 25
)

// TestDamagedFileNeverReturnsWrongRows flips bytes within the used part of the file (unlike
// enginetest's RunCorruption, which flips anywhere in a file bbolt preallocates in 16 MiB
// steps) and requires that no Get and no scan ever returns a row that was not written, and
// that a scan that ends without error returned every row. Keys that Get reports missing are
// counted and logged: a damaged page header or branch page can hide keys from a lookup (see
// the package comment), which no per-value checksum can catch.
func TestDamagedFileNeverReturnsWrongRows(t *testing.T) {
	trials := damageTrials
	if s := os.Getenv("KURA_DAMAGE_TRIALS"); s != "" {
		trials, _ = strconv.Atoi(s)
	}
	seed := uint64(7)
	t.Logf("seed %d, %d trials", seed, trials)
	rng := rand.New(rand.NewPCG(seed, seed))
	clean, used, want := writeDamageFile(t, rng)
	outcomes := map[string]int{}
	for trial := range trials {
		data := append([]byte{}, clean...)
		var offsets []int64
		for range 1 + rng.IntN(8) {
			off := rng.Int64N(used)
			offsets = append(offsets, off)
			data[off] ^= byte(1 + rng.IntN(255))
		}
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, FileName), data, 0o644); err != nil {
			t.Fatal(err)
		}
		res := readDamagedFile(dir, want)
		outcomes[res.outcome()]++
		if res.wrong > 0 || res.panicked != "" || (res.scanErr == nil && res.scanned != len(want)) {
			t.Errorf("trial %d, flips at %v: %+v", trial, offsets, res)
		}
		if res.missing > 0 {
			t.Logf("trial %d, flips at %v: %d keys unreachable by Get; scan error: %v", trial, offsets, res.missing, res.scanErr)
		}
	}
	t.Logf("outcomes: %v", outcomes)
}

// writeDamageFile writes damageRows rows and returns the closed file's bytes, the size of
// its used part and the values written.
func writeDamageFile(t *testing.T, rng *rand.Rand) ([]byte, int64, map[string]string) {
	dir := t.TempDir()
	d := openTest(t, dir, testOptions())
	want := make(map[string]string)
	var batch []row.Mutation
	for i := range damageRows {
		k := fmt.Sprintf("row%05d", i)
		v := make([]byte, 200+rng.IntN(100))
		for j := range v {
			v[j] = byte('a' + rng.IntN(26))
		}
		want[k] = string(v)
		if batch = append(batch, put(k, "c", string(v), 1)); len(batch) == 100 {
			if err := d.Apply(batch); err != nil {
				t.Fatal(err)
			}
			batch = nil
		}
	}
	var used int64
	if err := d.bolt.View(func(tx *bbolt.Tx) error { used = tx.Size(); return nil }); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	return data, used, want
}

type damageResult struct {
	openErr                     error
	panicked                    string
	exact, errs, missing, wrong int
	scanned                     int
	scanErr                     error
}

func (r damageResult) outcome() string {
	switch {
	case r.openErr != nil:
		return "open-error"
	case r.wrong > 0 || r.panicked != "":
		return "WRONG"
	case r.missing > 0:
		return "missing"
	case r.errs > 0 || r.scanErr != nil:
		return "detected"
	}
	return "unaffected"
}

func readDamagedFile(dir string, want map[string]string) (res damageResult) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if p := recover(); p != nil {
			res.panicked = fmt.Sprint(p)
		}
	}()
	d, err := Open(dir, testOptions())
	if err != nil {
		res.openErr = err
		return res
	}
	defer d.Close()
	for k, v := range want {
		r, found, err := d.Get([]byte(k))
		switch {
		case err != nil:
			res.errs++
		case !found:
			res.missing++
		case len(r.Cells) != 1 || string(r.Cells[0].Value) != v:
			res.wrong++
		default:
			res.exact++
		}
	}
	it, err := d.NewIterator(nil, nil)
	if err != nil {
		res.scanErr = err
		return res
	}
	defer it.Close()
	for it.Next() {
		res.scanned++
		if r := it.Row(); len(r.Cells) != 1 || want[string(it.Key())] != string(r.Cells[0].Value) {
			res.wrong++
		}
	}
	res.scanErr = it.Err()
	return res
}
