package engine

import (
	"bytes"
	"fmt"

	"github.com/kuradb/kura/internal/row"
)

// deleteAllBatch is how many row tombstones DeleteAll applies in one batch.
const deleteAllBatch = 1024

// DeleteAll deletes every row e stores as a delete at timestamp ts would: it writes a row
// tombstone at ts on each row of a snapshot taken when it starts (leaving alone rows
// already deleted at ts or later), in batches. Writes with later timestamps, made while it
// runs or after, survive their tombstone; rows first written after the snapshot are not
// seen. The space returns as a delete's does, once the engine purges the tombstones after
// its grace period. It returns the rows it tombstoned. Each batch is atomic and as durable
// as Apply makes it, the whole is not: an error or a crash leaves some rows deleted, and
// running it again with the same or a later ts completes it. It is what FLUSHALL does to a
// node's engine (every engine offers what it needs: NewIterator and Apply).
func DeleteAll(e Engine, ts int64) (int, error) {
	it, err := e.NewIterator(nil, nil)
	if err != nil {
		return 0, fmt.Errorf("engine: delete all: %w", err)
	}
	defer it.Close()
	var batch []row.Mutation
	n := 0
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if err := e.Apply(batch); err != nil {
			return fmt.Errorf("engine: delete all: %w", err)
		}
		n += len(batch)
		batch = batch[:0]
		return nil
	}
	for it.Next() {
		if it.Row().Deleted >= ts {
			continue
		}
		// The iterator's key is valid until Next: the batch keeps a copy.
		batch = append(batch, row.Mutation{Key: bytes.Clone(it.Key()), Row: row.Row{Deleted: ts}})
		if len(batch) == deleteAllBatch {
			if err := flush(); err != nil {
				return n, err
			}
		}
	}
	if err := it.Err(); err != nil {
		return n, fmt.Errorf("engine: delete all: %w", err)
	}
	return n, flush()
}
