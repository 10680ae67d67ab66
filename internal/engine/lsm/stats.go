package lsm

import "github.com/kuradb/kura/internal/engine"

// fallbackEntryBytes is the guess of bytes per entry used before anything is known.
const fallbackEntryBytes = 128

// Stats returns pebble's disk usage, the memory of its memtables and block cache in use,
// its block cache's hits and misses, the bytes its compactions read, its compaction debt
// and read amplification, and an estimate of the number of rows. The row count is an
// estimate in two ways: a key counts once per merge operand until compactions merge its
// operands (so it overcounts rows written many times), and it is derived from table
// statistics pebble loads in the background and from the WAL's size. Stats does no I/O. A
// closed DB reports zeros.
func (db *DB) Stats() engine.Stats {
	if db.enter("stats") != nil {
		return engine.Stats{}
	}
	defer db.mu.RUnlock()
	m := db.pdb.Metrics()
	var rowCacheBytes, hits, misses int64
	if db.rows != nil {
		_, rowCacheBytes = db.rows.Size()
		hits, misses = db.rows.Hits(), db.rows.Misses()
	}
	var compactionRead int64
	for i := range m.Levels {
		compactionRead += int64(m.Levels[i].TableBytesRead)
	}
	s := engine.Stats{
		RowCacheHits:        hits,
		RowCacheMisses:      misses,
		BlockCacheHits:      m.BlockCache.Hits,
		BlockCacheMisses:    m.BlockCache.Misses,
		CompactionReadBytes: compactionRead,
		CompactionDebtBytes: int64(m.Compact.EstimatedDebt),
		ReadAmp:             int64(m.ReadAmp()),
		DiskBytes:           int64(m.DiskSpaceUsage()),
		MemoryBytes:         int64(m.MemTable.Size) + m.BlockCache.Size + rowCacheBytes,
		RowsEstimate:        db.sstableEntries() + db.memtableEntries(int64(m.WAL.Size)),
	}
	for _, g := range db.guards {
		s.AddDisk(g.Stats().Engine())
	}
	return s
}

// sstableEntries sums the entries of every sstable. Tables whose statistics pebble has not
// loaded yet (just flushed or compacted) are estimated from their size at the average
// bytes per entry of the others.
func (db *DB) sstableEntries() int64 {
	levels, err := db.pdb.SSTables() // without properties: reads no file
	if err != nil {
		return 0
	}
	var entries, knownBytes, unknownBytes int64
	for _, level := range levels {
		for i := range level {
			t := &level[i]
			if t.TableStats.NumEntries > 0 {
				entries += int64(t.TableStats.NumEntries)
				knownBytes += int64(t.Size)
			} else {
				unknownBytes += int64(t.Size)
			}
		}
	}
	if unknownBytes > 0 {
		perEntry := int64(fallbackEntryBytes)
		if entries > 0 && knownBytes > 0 {
			perEntry = max(1, knownBytes/entries)
		}
		entries += unknownBytes / perEntry
	}
	return entries
}

// memtableEntries estimates the entries not yet flushed from the live WAL bytes: every
// unflushed entry is in the WAL, at about the average batch bytes per entry Apply wrote.
func (db *DB) memtableEntries(walBytes int64) int64 {
	ops, size := db.appliedOps.Load(), db.appliedBytes.Load()
	perEntry := int64(fallbackEntryBytes)
	if ops > 0 && size > 0 {
		perEntry = max(1, size/ops)
	}
	return walBytes / perEntry
}

// Report is pebble's own account of the store (engine.Reporter): per level its files,
// size, bytes in, read and written, and write amplification; compactions by kind
// (default, move, read-triggered, tombstone-density, delete-only...), flushes, caches and
// the WAL. A closed DB reports that it is closed.
func (db *DB) Report() string {
	if err := db.enter("report"); err != nil {
		return err.Error() + "\n"
	}
	defer db.mu.RUnlock()
	return db.pdb.Metrics().String()
}
