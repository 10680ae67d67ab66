// Package repair makes two replicas of a token range agree: anti-entropy repair, the
// same on every engine. It is the deterministic core; the node runs it over the
// internode transport (wire.MethodRepair) and schedules it. docs/design/repair.md says
// why it is built this way and what it costs.
//
// # The tree
//
// Each side hashes every row it holds of the range (Builder): the key and the row as
// both sides view it at one time the session chooses (View), salted by the session. A
// Tree cuts the range into 2^Depth leaves of equal token width; a leaf's hash is the XOR
// of its rows' hashes, an inner node's the XOR of its children's. Engines keep keys
// token-prefixed (ring.EngineKey), so a range is one scan on every engine, and the hashes
// depend only on the rows: an lsm, a btree and a memory replica holding the same data
// have the same root.
//
// # A session (Run at the initiator, Responder at the other replica)
//
//  1. Open: the initiator sends the range, the view, and its root (the XOR of its rows'
//     hashes, whatever the depth); the responder scans and answers whether the roots
//     differ and how many rows it holds. Equal roots end the session, at both ends: one
//     round trip and a few dozen bytes for two replicas that agree. Otherwise the
//     responder holds the session until a Close (or until MaxSessions newer ones evict
//     it).
//  2. Descend, level by level: for every node found differing, the initiator sends its
//     left child's hash; the responder derives the right child's (parent XOR left) and
//     answers two bits a node. One hash a differing node, where a Merkle tree of
//     independent children sends two. The depth puts about LeafRows rows in a leaf, from
//     the larger side's row count.
//  3. Leaves: for each differing leaf, the initiator lists its rows (key hash, row hash,
//     newest timestamp); the responder matches them with its own and answers one bit a
//     row, "send me yours", set when it lacks the key or holds an older row, and gives
//     its own rows where the initiator lacks the key or holds an older one or one as
//     new. Only rows that differ cross, one way: the newer version (row-level, as
//     ScyllaDB's repair).
//  4. Rows: the initiator sends the rows asked for. A side that receives a row merges it
//     (row.Merge: repair can never make a replica older) and, where its merge differs
//     from what it received (it held newer cells of the row than the sender; the two
//     diverged both ways), sends the merge back.
//
// Afterwards both hold, for every key, the merge of what both held when their trees were
// built. Hashes are 64 bits; a collision can hide a difference for one session, and the
// next session's salt makes it another draw.
package repair
