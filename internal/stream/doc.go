// Package stream copies rows between replicas: it carries out the transfers that package
// move plans for a membership change (Streamer), and a refilling node's pulls (Puller),
// over the internode transport's scan request (wire.MethodScan). It is a driver: what to
// copy, from whom and in what order comes from the plan; this package pages, verifies,
// applies, records and retries, and the one decision it makes itself, whom to ask next
// and how long to wait after a failure, is plain code without a clock (retry.go).
//
// # A transfer
//
// A transfer (move.Transfer: a token range, a source, a destination) runs at its
// destination. Its token range is one or two engine key ranges (ring.EngineKeyRanges: a
// range that wraps is two); each is pulled page by page from the source's engine, in key
// order, from a snapshot per page. Each page is:
//
//  1. asked of the source as a stream's scan (wire.ScanRequest.Stream), which the source
//     holds until its send limit lets the page's bytes go (replica.Handler.StreamPacer);
//  2. verified against its checksum (CRC-32C of the page's bytes, computed by the
//     source's encoder; wire.ErrChecksum), and asked again if it does not match;
//  3. paced by the destination's receive limit (Config.Receive), shared by all its
//     transfers: the page's bytes are reserved when it is asked (the last page's size,
//     Limiter.Reserve) and settled when it arrives, so that its time under the receive
//     limit runs while the source paces it, as a byte on a link counts against both ends
//     at once;
//  4. written to the sink, which merges its rows (row.Merge) as it merges writes: a write
//     that reaches the destination during the stream, newer than the streamed row, wins
//     whatever order they arrive in, tombstones included;
//  5. made durable (Config.Sync, or the sink's Write itself), and only then recorded in
//     the transfer's progress file as the key to ask next.
//
// The transfer is complete when the last page of its last key range is recorded: a
// range half received is never reported done.
//
// # Progress
//
// Config.Dir holds a directory per change (change-<ID>) and in it a small JSON file per
// transfer (transfer-<index>.json), replaced atomically after every page: the next key to
// ask of each key range, whether it is done, and the bytes and rows applied. A restarted
// destination's Run resumes each transfer from its file, asking again at most the page
// in flight per key range; a transfer recorded done is not run again (Completed lists
// them, for the change's RangesMoved). Discard removes a finished or cancelled change's
// files. A file names the transfer it is of (range and destination); a file of another
// transfer under the same ID is ignored and the transfer starts over, which merging makes
// harmless.
//
// # Limits
//
// Limits are bytes per second of encoded pages, as a token bucket (Limiter) changeable
// at any time (SetLimit), 0 unlimited. The destination's receive limit paces its
// transfers' pages; the source's send limit paces the stream pages it serves, whoever
// asks. Waiting for one and then the other would halve the rate of a transfer limited at
// both ends (a transfer of 8.9 MB under 2 MiB/s at both ends ran at 0.56 of the limit);
// reserving ahead, it ran at 0.92. A refill's scans and clients' scans are not paced: a refill is a restarted
// in-memory node that serves no reads until it has every range back.
//
// # Failures
//
// A source that fails (unreachable, reset, timed out, refused) is asked again from the
// page it was on, after a wait that doubles from Config.RetryBase to Config.RetryMax,
// until Run's context ends; after Config.FailoverAfter failures in a row the next of
// the Job's Alternatives is asked, in a cycle. A page the sink refuses ends the transfer
// with the sink's error, ErrDiskFull when the disk is full (engine.ErrNoSpace), its
// progress kept.
//
// # Versions
//
// A source that predates scan version 2 (wire.ScanVersion) refuses a version 2 request;
// the destination then asks it in version 1, whose pages carry no checksum
// (PeerStats.UncheckedPages counts them) and which it does not pace. A destination that
// predates version 2 asks in version 1 and gets version 1 pages.
package stream
