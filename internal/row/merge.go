package row

import "bytes"

// Compare orders two cells of the same column by which one wins a merge: it returns +1 if a
// wins, -1 if b wins and 0 if they are identical in everything that matters.
//
// The order is total so that every replica picks the same winner: larger timestamp, then
// tombstone over live cell, then the larger value, then the later expiry (0, "never",
// counting as latest).
func Compare(a, b *Cell) int {
	switch {
	case a.Timestamp != b.Timestamp:
		return sign(a.Timestamp > b.Timestamp)
	case a.Tombstone != b.Tombstone:
		return sign(a.Tombstone)
	}
	if c := bytes.Compare(a.Value, b.Value); c != 0 {
		return c
	}
	ea, eb := expiryRank(a.ExpiresAt), expiryRank(b.ExpiresAt)
	switch {
	case ea != eb:
		return sign(ea > eb)
	}
	return 0
}

func expiryRank(e int64) uint64 {
	if e == 0 {
		return ^uint64(0)
	}
	return uint64(e)
}

func sign(b bool) int {
	if b {
		return 1
	}
	return -1
}

// Merge returns the merge of a and b under the package's rules. The result may share
// Name and Value slices with a and b but never their Cells arrays, so it is safe to keep
// after a and b are modified structurally (appending, reslicing); not after their bytes are
// overwritten.
func Merge(a, b Row) Row {
	out := Row{Deleted: max(a.Deleted, b.Deleted)}
	if n := len(a.Cells) + len(b.Cells); n > 0 {
		out.Cells = make([]Cell, 0, n)
	}
	i, j := 0, 0
	for i < len(a.Cells) || j < len(b.Cells) {
		var c *Cell
		switch {
		case j == len(b.Cells):
			c = &a.Cells[i]
			i++
		case i == len(a.Cells):
			c = &b.Cells[j]
			j++
		default:
			switch bytes.Compare(a.Cells[i].Name, b.Cells[j].Name) {
			case -1:
				c = &a.Cells[i]
				i++
			case 1:
				c = &b.Cells[j]
				j++
			default:
				c = &a.Cells[i]
				if Compare(&b.Cells[j], c) > 0 {
					c = &b.Cells[j]
				}
				i++
				j++
			}
		}
		if c.Timestamp > out.Deleted {
			out.Cells = append(out.Cells, *c)
		}
	}
	return out
}

// Purge drops from r what no reader will ever need again, given that the caller's rewrite
// sees every older version of the row (the bottom of an LSM, or a B-tree's single copy):
// tombstones and expired cells older than nowMicros-graceMicros, and a row tombstone older
// than that. Cells shadowed by the row tombstone are already gone after Merge.
//
// The grace period exists because a replica that missed a delete must hear of it through
// repair before the tombstone disappears; purging earlier would let the deleted value come
// back. Purge modifies r in place and returns it.
func Purge(r *Row, nowMicros, graceMicros int64) *Row {
	horizon := nowMicros - graceMicros
	if r.Deleted != 0 && r.Deleted < horizon {
		r.Deleted = 0
	}
	kept := r.Cells[:0]
	for _, c := range r.Cells {
		if c.Tombstone && c.Timestamp < horizon {
			continue
		}
		if c.ExpiresAt != 0 && c.ExpiresAt < horizon {
			continue
		}
		kept = append(kept, c)
	}
	for i := len(kept); i < len(r.Cells); i++ {
		r.Cells[i] = Cell{}
	}
	r.Cells = kept
	if len(r.Cells) == 0 {
		r.Cells = nil
	}
	return r
}
