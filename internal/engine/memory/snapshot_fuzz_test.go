package memory

import (
	"bufio"
	"bytes"
	"fmt"
	"testing"

	"github.com/kuradb/kura/internal/row"
)

func encodeForFuzz(t testing.TB, rows int) []byte {
	tree := newTree()
	for i := 0; i < rows; i++ {
		key := []byte(fmt.Sprintf("k%03d", i))
		r := row.Row{Cells: []row.Cell{{Name: []byte("c"), Value: []byte("v"), Timestamp: int64(i + 1)}}}
		tree.Set(item{kv: row.AppendEncode(bytes.Clone(key), &r), klen: len(key)})
	}
	var buf bytes.Buffer
	w := bufio.NewWriter(&buf)
	if err := encodeSnapshot(w, tree); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// FuzzSnapshotLoad feeds arbitrary bytes to the snapshot loader: it must never panic, and
// whatever it accepts must be exactly a snapshot it would itself write (so no damaged or
// partial file is ever taken as data).
func FuzzSnapshotLoad(f *testing.F) {
	for _, n := range []int{0, 1, 3} {
		f.Add(encodeForFuzz(f, n))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		l := loader{r: bufio.NewReader(bytes.NewReader(data)), remaining: int64(len(data)), tree: newTree()}
		if err := l.load(); err != nil {
			return
		}
		var buf bytes.Buffer
		w := bufio.NewWriter(&buf)
		if err := encodeSnapshot(w, l.tree); err != nil {
			t.Fatal(err)
		}
		w.Flush()
		if !bytes.Equal(buf.Bytes(), data) {
			t.Fatalf("accepted %d bytes that re-encode to %d different bytes", len(data), buf.Len())
		}
	})
}
