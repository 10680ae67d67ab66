// Package bench is kura's YCSB-compatible load generator: it draws operations the way
// YCSB's CoreWorkload does (with go-ycsb's generators), drives a Target from many threads
// in a closed loop or at a fixed rate, and measures latency with HDR histograms into a
// Result that can be saved, reloaded and compared.
//
// The pieces, in the order an operation meets them:
//
//   - Workload: YCSB's properties (recordcount, readproportion, requestdistribution,
//     zipfianconstant, ...) and the named workloads: the papers' write-only, write-heavy,
//     read-heavy and read-only, YCSB's a to f, and ping.
//   - Generator and Stream: the shared key sequences and each thread's random choices.
//     A Stream is deterministic for its seed.
//   - Run: phases (load; run with an unmeasured warm-up), closed or open loop, limits by
//     operation count or time, progress lines. In open loop latency is measured from
//     each operation's scheduled start, so a stalled server is charged for the operations
//     that queued behind the stall (no coordinated omission).
//   - recorder: per-operation HDR histograms for the whole phase and per second,
//     sharded so that recording does not serialize the threads.
//   - Result: JSON and CSV files; package report turns them into plots and Markdown.
//
// Differences from YCSB, each deliberate: the zipfian constant is a property
// (zipfianconstant; YCSB fixes 0.99) and costs nothing to change (see Zeta); values are
// random printable bytes drawn ten per random number instead of one; a read-modify-write
// is measured as one READ-MODIFY-WRITE operation (YCSB also reports its read and its update
// separately); keys are hashed as go-ycsb hashes them, which names records differently
// from Java YCSB; dataintegrity is not supported.
//
// Targets live in their own packages (redis for Redis-protocol servers, cql for
// Cassandra); NoopTarget measures the client alone.
package bench
