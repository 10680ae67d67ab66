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

// keySize is one row of a replica: its token and the bytes it takes in a stream page
// (wire.AppendWriteRequest's encoding of one mutation: the key's and the encoded row's
// lengths as uvarints, the key, the row).
type keySize struct {
	token ring.Token
	bytes int64
}

// rowSizesCmd writes the size of every row of a stopped lsm store (a copy: opening it
// replays its log) to -out, in token order: 12 bytes a row, the token (int64) and the bytes
// (uint32), little-endian. It prints the rows and their total.
func rowSizesCmd(args []string) error {
	fs := flag.NewFlagSet("rowsizes", flag.ExitOnError)
	store := fs.String("store", "", "the lsm directory of a node's data directory (a copy)")
	out := fs.String("out", "", "file to write")
	_ = fs.Parse(args)
	if *store == "" || *out == "" {
		return fmt.Errorf("usage: bench-join rowsizes -store DIR -out FILE")
	}
	db, err := lsm.Open(*store, lsm.Options{RowCacheBytes: -1, CollapseOperands: -1, CacheSizeBytes: 32 << 20})
	if err != nil {
		return err
	}
	defer db.Close()
	it, err := db.NewIterator(nil, nil)
	if err != nil {
		return err
	}
	defer it.Close()
	f, err := os.Create(*out)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	var rows, total int64
	var enc, rec []byte
	for it.Next() {
		t, key, err := ring.SplitEngineKey(it.Key())
		if err != nil {
			return err
		}
		r := it.Row()
		enc = row.AppendEncode(enc[:0], &r)
		n := uvarintLen(len(key)) + len(key) + uvarintLen(len(enc)) + len(enc)
		rec = binary.LittleEndian.AppendUint64(rec[:0], uint64(t))
		rec = binary.LittleEndian.AppendUint32(rec, uint32(n))
		if _, err := w.Write(rec); err != nil {
			return err
		}
		rows++
		total += int64(n)
	}
	if err := it.Err(); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Printf("%d rows, %d bytes\n", rows, total)
	return nil
}

func uvarintLen(n int) int {
	return len(binary.AppendUvarint(nil, uint64(n)))
}

// readRowSizes reads what rowSizesCmd wrote.
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
