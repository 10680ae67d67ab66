// Package scan decides how a scan of the keyspace in token order proceeds: what a SCAN
// cursor means, how the ring from a cursor on is cut into spans that one replica set
// serves, which replicas a page is read from at a consistency level, how their pages
// merge and where the merged page may end, and, for a node whose engine is not in token
// order, which keys one pass over it keeps. It is pure: the driver (package node) sends
// the requests, feeds the answers in and carries out what it is told.
//
// # The cursor
//
// A cursor is a position on the ring, the token a scan resumes at: every key whose token
// is below it was returned by an earlier page. Cursor(t) is t's rank among tokens, the
// token as an unsigned 64-bit integer with its sign bit flipped, so that cursors grow in
// ring order and a client can print and parse one as a decimal uint64. MinToken is never
// a key's token (it is the empty key's, which kura refuses), so its cursor 0 is both the
// start of a scan and, returned, its end. A cursor names no node, range or replica, so
// it survives restarts and ring changes: the next page cuts the ring as it is then.
//
// # Pages and the safe cut
//
// A page reads the first span from its cursor (Spans: a ring range, or adjacent ranges
// with one replica set) from a quorum of the span's replicas (Ask). Each replica answers
// up to a bounded number of rows in token order and where it would go on (Page.Next). A
// replica that stopped at its row bound may have stopped between two keys of one token,
// and the replicas stop at different places; Merge keeps only the tokens that every
// page covers whole (the safe cut, Result.Through) and merges each key's rows from all
// pages with row.Merge, so that a key one replica lacks is still seen and a delete one
// replica has is honoured. The next cursor is After(Through). A token is never split
// between pages. When more keys share one token than a page holds (Murmur3 collisions:
// never seen in practice, but possible), no token is whole and Merge names the pages to
// complete through that token first (Result.Short).
//
// # The guarantee
//
// A key acknowledged at QUORUM before a scan began and not deleted during it is on a
// quorum of its replicas for the whole scan, so every page read at QUORUM that covers
// its token meets at least one replica that has it: the scan returns it at least once
// (Redis's guarantee). Keys written or deleted during the scan may or may not be
// returned, and a key is returned again only if a client repeats a cursor. At ONE (a
// connection's KURA.CONSISTENCY) a page may miss a key that a lagging replica lacks.
//
// # A single node
//
// A node outside a cluster stores keys in key order, not token order, so each page is one
// pass over its engine: Selector keeps the keys of the lowest tokens from the cursor on
// with the same rule (no token split), and the cursor means the same.
package scan
