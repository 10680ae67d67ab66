//go:build linux

package lsm

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/kuradb/kura/internal/row"
)

// residentBytes is how much of the store's sstables sits in the page cache, by mincore
// over a mapping of each file (mapping does not fault pages in).
func residentBytes(t *testing.T, dir string) (resident, total int64) {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.sst"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no sstables in %s (%v)", dir, err)
	}
	page := int64(os.Getpagesize())
	for _, name := range names {
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		st, err := f.Stat()
		if err != nil || st.Size() == 0 {
			f.Close()
			continue
		}
		m, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
		f.Close()
		if err != nil {
			t.Fatalf("mmap %s: %v", name, err)
		}
		vec := make([]byte, (st.Size()+page-1)/page)
		if err := mincore(m, vec); err != nil {
			t.Fatalf("mincore %s: %v", name, err)
		}
		for _, v := range vec {
			if v&1 != 0 {
				resident += page
			}
		}
		total += st.Size()
		_ = unix.Munmap(m)
	}
	return resident, total
}

// A store that drops its page cache leaves its sstables out of memory after it has
// written them (flush) and after reads of every row, where the same store without the
// option keeps them cached: the memory is left to the other tier's files.
func TestDropPageCacheLeavesTheStoresFilesOutOfThePageCache(t *testing.T) {
	const rows = 4000
	rng := rand.New(rand.NewPCG(1, 2)) // incompressible values, so the files are the rows' size
	resident := map[bool]int64{}
	var total int64
	for _, drop := range []bool{false, true} {
		dir := t.TempDir()
		db := openTest(t, dir, newTestClock(), func(o *Options) {
			o.DropPageCache = drop
			o.RowCacheBytes = -1           // reads go to pebble,
			o.CacheSizeBytes = 1 << 20     // and past its small block cache to the files
			o.MemTableSizeBytes = 64 << 20 // one flush writes every row
		})
		for i := range rows {
			value := make([]byte, 1000)
			for j := range value {
				value[j] = byte(rng.Uint32())
			}
			mustApply(t, db, row.Mutation{Key: []byte(fmt.Sprintf("key%06d", i)), Row: row.Row{Cells: []row.Cell{live("v", string(value), 1)}}})
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
		for i := range rows {
			if _, found, err := db.Get([]byte(fmt.Sprintf("key%06d", i))); err != nil || !found {
				t.Fatalf("drop=%v: get key%06d: found %v, %v", drop, i, found, err)
			}
		}
		resident[drop], total = residentBytes(t, dir)
		t.Logf("drop=%v: %d of %d sstable bytes in the page cache", drop, resident[drop], total)
	}
	if resident[false] < total/2 {
		t.Skipf("this file system keeps little in the page cache even without the option (%d of %d bytes): nothing to compare", resident[false], total)
	}
	if resident[true] > total/20 {
		t.Errorf("with DropPageCache %d of %d sstable bytes stayed in the page cache (without it %d)", resident[true], total, resident[false])
	}
}

// mincore fills vec with the residency of m's pages (x/sys/unix has no wrapper on linux).
func mincore(m, vec []byte) error {
	_, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0])))
	if errno != 0 {
		return errno
	}
	return nil
}
