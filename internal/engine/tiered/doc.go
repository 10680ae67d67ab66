// Package tiered is an engine over two stores on two devices, a small fast one and a large
// slow one, that keeps each row in one of them and moves rows between them (issue 6, from
// ../shared/seeds/001: rows read often live on the fast device). Which rows move, and
// when, is decided elsewhere (see Migrator); this package makes moving safe.
//
// # Where a row lives
//
// Every key has a home tier. The keys at home on the fast tier are held in memory (their
// number is bounded by the fast tier's budget); every other key is at home on the slow
// tier. A write goes to its keys' home; a read reads the home alone, one lookup, unless
// the key is being moved.
//
// # Moving a row
//
// A move of key k from tier src to tier dst, one at a time (see DB.Move):
//
//  1. under k's stripe lock, k's home becomes dst and k is marked "in both": from now on
//     writes go to dst and reads merge src and dst;
//  2. k's stored row (tombstones and expired cells included) is read from src, applied
//     to dst (a merge by cell timestamps: it commutes with the writes landing on dst
//     meanwhile) and dst is synced;
//  3. k is removed physically from src (no tombstone, which would shadow the moved cells);
//  4. under the stripe lock, the mark is cleared.
//
// A read of a key in both reads src before dst. Whatever it missed in src was copied to
// dst before src lost it, so it finds every cell. Every step preserves the row's content
// (the union of both tiers' cells): a crash anywhere leaves k in one tier or in both. A key
// in both after a crash is found when the engine opens again (each fast key is looked up
// in the slow tier, unless the last Close was clean) and its two parts are merged into
// the fast tier.
//
// # Batches
//
// A batch whose keys all live on one tier is applied there, atomically. A batch that
// spans both tiers is applied whole to the fast tier, in one atomic pebble batch, and its
// slow keys are marked in both, to be moved home right away: atomic after a crash too,
// because the fast tier then holds all of it and the open-time check finds the keys.
//
// # Iterators
//
// NewIterator takes a snapshot of each tier while no write is in flight on either (it
// excludes them for that moment), so the pair is one consistent cut, and merges the two
// in key order; a key found in both is merged as a read would.
//
// # Range deletion
//
// DeleteRange (engine.RangeDeleter) holds off moves, marks the range's fast keys in both
// tiers with the slow tier as their home (they leave the fast placement), deletes the
// range from the fast tier and then the slow one while no iterator takes its snapshots,
// spoils the rows captured for promotion and clears the marks; see DB.DeleteRange.
package tiered
