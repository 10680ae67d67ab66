// Package enginetest is the shared test suite every storage engine passes: one definition
// of the engine.Engine contract, run against lsm, btree and memory alike, and a reference
// engine (Model) to compare them with.
//
// # Adopting the suite
//
// An engine package adds an external test file with a Factory and one line per part:
//
//	package lsm_test
//
//	func factory() enginetest.Factory {
//		return enginetest.Factory{Name: "lsm", Persistent: true, CrashSafe: true,
//			Open: func(dir string, o engine.Options) (engine.Engine, error) {
//				return lsm.Open(dir, lsm.Options{Options: o})
//			}}
//	}
//
//	func TestMain(m *testing.M)        { enginetest.Main(m, factory()) }
//	func TestConformance(t *testing.T) { enginetest.RunConformance(t, factory()) }
//	func TestMetamorphic(t *testing.T) { enginetest.RunMetamorphic(t, factory()) }
//	func TestCrash(t *testing.T)       { enginetest.RunCrash(t, factory()) }
//	func TestCorruption(t *testing.T)  { enginetest.RunCorruption(t, factory()) }
//	func BenchmarkEngine(b *testing.B) { enginetest.RunBenchmarks(b, factory()) }
//
// Factory.Open receives the suite's engine.Options (a ManualClock, the grace period,
// durability) and adds the engine's own settings. Persistent says data survives Close and
// Open of one dir; CrashSafe says writes acknowledged in engine.Sync survive SIGKILL.
// Parts that need either are skipped, with a message, when the factory does not claim it.
//
// # The parts
//
//   - RunConformance: one sub-test per behaviour of the contract (merge rules and
//     tie-breaks, tombstones, TTL via the injected clock, purging, iteration bounds and
//     snapshots, memory ownership, invalid input, atomic batches, concurrency under -race,
//     Stats, Close, persistence, the directory lock), and engine.RangeDeleter's for an
//     engine that has it (exact bounds, later writes unshadowed, snapshots kept, each row
//     deleted at an instant under concurrent writes; RunDeleteRange alone). Behaviours
//     that depend on the data's form are checked fresh, after Flush and, for persistent
//     engines, after Close+Open.
//   - RunMetamorphic: one seeded sequence of operations on every given engine and on the
//     Model; the first differing result fails with the op index and the history of the keys
//     involved. KURA_SEED (or -enginetest.seed) picks the seed, KURA_OPS the length.
//   - RunCrash: re-executes the test binary as a child (Main detects it by an environment
//     variable) that applies synced batches from several goroutines and prints each batch's
//     keys after Apply returns; the parent SIGKILLs it, reopens the dir and requires every
//     acknowledged row, byte for byte, and no partly applied batch.
//   - RunCorruption: truncates or flips bytes of the largest file of a closed engine's dir,
//     blindly and aimed at stored values; the engine must fail to open or return errors,
//     never a wrong or silently missing row.
//   - RunBenchmarks: put, get and parallel put of 1 KB rows in both durability modes.
//
// # What the suite assumes beyond engine.go's text
//
//   - An empty row and no row are the same: Get may report either for a key that only
//     received empty mutations, and iterators may skip or return such rows.
//   - Close makes every applied write durable in both durability modes: a clean shutdown
//     loses nothing (metamorphic close+open runs in Periodic mode).
//   - An iterator's rows may judge expiry at NewIterator or at Next; the suite never moves
//     the clock while an iterator is open.
//   - Keys and rows returned by Iterator are copied by the suite before Next; engines may
//     reuse their memory after that. Rows returned by Get must be the caller's to modify.
//   - A second Close returns nil or ErrClosed; every other call after Close returns an error
//     wrapping engine.ErrClosed.
//
// All randomness is seeded and the seed is logged; time comes from ManualClock, so a run
// never depends on the wall clock (except the benchmarks and the crash child).
package enginetest
