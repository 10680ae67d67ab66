package main

import (
	"bufio"
	"cmp"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/kuradb/kura/internal/engine/lsm"
	"github.com/kuradb/kura/internal/ring"
	"github.com/kuradb/kura/internal/row"
)

// keySize is one row: its token and the bytes it takes in a stream page
// (wire.AppendWriteRequest's encoding of one mutation: the key's and the encoded row's
// lengths as uvarints, the key, the row). Copied from scripts/bench-join.
type keySize struct {
	token ring.Token
	bytes int64
}

// rowSizesCmd writes the size of every row of the stopped lsm stores given (copies:
// opening one replays its log) to -out, in token order: 12 bytes a row, the token (int64)
// and the bytes (uint32), little-endian. With 6 nodes of RF 3 a store holds half the rows,
// so the stores are merged: a row is its token (64-bit hashes of distinct keys; a
// collision would merge two rows, too rare to matter at these sizes), and where replicas
// differ (a write one of them missed) the larger size is kept. It prints each store's rows
// and bytes ("store DIR ROWS BYTES"), then the merged ones ("all ROWS BYTES").
func rowSizesCmd(args []string) error {
	fs := flag.NewFlagSet("rowsizes", flag.ExitOnError)
	out := fs.String("out", "", "file to write")
	_ = fs.Parse(args)
	if *out == "" || fs.NArg() == 0 {
		return fmt.Errorf("usage: bench-recover rowsizes -out FILE STORE...")
	}
	all := map[ring.Token]int64{}
	for _, dir := range fs.Args() {
		rows, total, err := storeSizes(dir, all)
		if err != nil {
			return fmt.Errorf("%s: %w", dir, err)
		}
		fmt.Printf("store %s %d %d\n", dir, rows, total)
	}
	keys := make([]keySize, 0, len(all))
	var total int64
	for t, b := range all {
		keys = append(keys, keySize{token: t, bytes: b})
		total += b
	}
	slices.SortFunc(keys, func(a, b keySize) int { return cmp.Compare(a.token, b.token) })
	if err := writeRowSizes(*out, keys); err != nil {
		return err
	}
	fmt.Printf("all %d %d\n", len(keys), total)
	return nil
}

// storeSizes adds the rows of the lsm store in dir to into, keeping the larger size of a
// row seen twice; it returns the store's own rows and bytes.
func storeSizes(dir string, into map[ring.Token]int64) (int64, int64, error) {
	db, err := lsm.Open(dir, lsm.Options{RowCacheBytes: -1, CollapseOperands: -1, CacheSizeBytes: 32 << 20})
	if err != nil {
		return 0, 0, err
	}
	defer db.Close()
	it, err := db.NewIterator(nil, nil)
	if err != nil {
		return 0, 0, err
	}
	defer it.Close()
	var rows, total int64
	var enc []byte
	for it.Next() {
		t, key, err := ring.SplitEngineKey(it.Key())
		if err != nil {
			return 0, 0, err
		}
		r := it.Row()
		enc = row.AppendEncode(enc[:0], &r)
		n := int64(uvarintLen(len(key)) + len(key) + uvarintLen(len(enc)) + len(enc))
		into[t] = max(into[t], n)
		rows++
		total += n
	}
	return rows, total, it.Err()
}

func uvarintLen(n int) int {
	return len(binary.AppendUvarint(nil, uint64(n)))
}

func writeRowSizes(path string, keys []keySize) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	var rec []byte
	for _, k := range keys {
		rec = binary.LittleEndian.AppendUint64(rec[:0], uint64(k.token))
		rec = binary.LittleEndian.AppendUint32(rec, uint32(k.bytes))
		if _, err := w.Write(rec); err != nil {
			f.Close()
			return err
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// readRowSizes reads what rowSizesCmd wrote, in token order.
func readRowSizes(path string) ([]keySize, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(b)%12 != 0 {
		return nil, fmt.Errorf("%s: %w: %d bytes", path, io.ErrUnexpectedEOF, len(b))
	}
	out := make([]keySize, 0, len(b)/12)
	for i := 0; i < len(b); i += 12 {
		out = append(out, keySize{token: ring.Token(int64(binary.LittleEndian.Uint64(b[i:]))), bytes: int64(binary.LittleEndian.Uint32(b[i+8:]))})
	}
	slices.SortFunc(out, func(a, b keySize) int { return cmp.Compare(a.token, b.token) })
	return out, nil
}
