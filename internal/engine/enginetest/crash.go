package enginetest

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/row"
)

// The crash test runs the engine in a child process (the test binary itself, re-executed;
// Main recognises it by crashChildEnv), lets it acknowledge synced writes on stdout and
// kills it with SIGKILL mid-stream. Every acknowledged write must survive, byte for byte,
// and batches must survive whole or not at all. An engine.RangeDeleter also deletes
// ranges of writer 0's acknowledged batches meanwhile: a deletion that returned must
// survive too, its rows gone.
const (
	crashChildEnv  = "KURA_ENGINETEST_CRASH_CHILD"  // data dir of the child
	crashRoundEnv  = "KURA_ENGINETEST_CRASH_ROUND"  // round number, to keep keys distinct
	crashEngineEnv = "KURA_ENGINETEST_CRASH_ENGINE" // the Factory's name, among those given to Main
	crashWriters   = 4
	crashRounds    = 3
	// crashChildLifetime bounds a child that is never killed (the parent died).
	crashChildLifetime = 2 * time.Minute
	// crashAckTimeout bounds how long the parent waits for the acks it wants.
	crashAckTimeout = 90 * time.Second
	// crashDeleteSpan is how many of writer 0's batches one range deletion takes.
	crashDeleteSpan = 8
)

// crashLog is what the parent learned from the children's output over the rounds.
type crashLog struct {
	acked     map[string]bool // keys of acknowledged batches, not since deleted
	deleted   map[string]bool // keys of acknowledged deletions
	uncertain map[string]bool // keys of deletions under way at a kill: there or not
}

func newCrashLog() *crashLog {
	return &crashLog{acked: map[string]bool{}, deleted: map[string]bool{}, uncertain: map[string]bool{}}
}

// record takes one line of a child's output and returns how many keys it acknowledged.
func (l *crashLog) record(line string) int {
	if keys, ok := strings.CutPrefix(line, "ack "); ok {
		n := 0
		for _, k := range strings.Fields(keys) {
			l.acked[k] = true
			n++
		}
		return n
	}
	var what string
	var r, from, to int
	if n, err := fmt.Sscanf(line, "%s %d %d %d", &what, &r, &from, &to); n != 4 || err != nil {
		return 0
	}
	for b := from; b < to; b++ {
		for _, k := range crashBatchKeysOf(r, 0, b) {
			switch what {
			case "deleting":
				delete(l.acked, k)
				l.uncertain[k] = true
			case "deleted":
				delete(l.uncertain, k)
				l.deleted[k] = true
			}
		}
	}
	return 0
}

// RunCrash SIGKILLs a child process running sync writes from several goroutines, reopens
// the data dir and checks that every acknowledged write is there with its exact value and
// that no batch survived in part; a few rounds, each adding to the same dir. The engine
// package's TestMain must call Main. Skipped unless f.CrashSafe.
func RunCrash(t *testing.T, f Factory) { runCrash(t, f) }

func runCrash(t testing.TB, f Factory) {
	if !f.CrashSafe {
		t.Skipf("%s: Factory.CrashSafe is false: the engine does not claim that synced writes survive a crash", f.Name)
	}
	seed := metamorphicSeeds(t)[0]
	rng := rand.New(rand.NewPCG(seed, 0))
	t.Logf("crash seed %d (rerun with KURA_SEED=%d)", seed, seed)
	dir := t.TempDir()
	log := newCrashLog()
	for round := range crashRounds {
		target := 200 + rng.IntN(200)
		n := runCrashRound(t, f, dir, round, target, log)
		t.Logf("round %d: killed the child after %d acks (target %d); %d rows deleted, %d maybe", round, n, target,
			len(log.deleted), len(log.uncertain))
		verifyCrash(t, f, dir, log)
		if t.Failed() {
			return
		}
	}
}

// runCrashRound starts the child, kills it once target writes are acknowledged, collects
// every ack it printed before dying and returns how many there were.
func runCrashRound(t testing.TB, f Factory, dir string, round, target int, log *crashLog) int {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+dir, crashRoundEnv+"="+strconv.Itoa(round), crashEngineEnv+"="+f.Name)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatalf("crash: stdout pipe: %v", err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("crash: start child: %v", err)
	}
	lines := make(chan string)
	go readLines(stdout, lines)
	timeout := time.NewTimer(crashAckTimeout)
	defer timeout.Stop()
	n, killed := 0, false
	kill := func() {
		if !killed {
			killed = true
			cmd.Process.Signal(syscall.SIGKILL)
		}
	}
	for lines != nil {
		select {
		case line, ok := <-lines:
			if !ok {
				lines = nil
				continue
			}
			if n += log.record(line); n >= target {
				kill()
			}
		case <-timeout.C:
			t.Errorf("crash: only %d acks after %v", n, crashAckTimeout)
			kill()
		}
	}
	waitKilled(t, cmd, killed, n, &stderr)
	return n
}

// readLines sends each complete line of r (a line cut short by the kill is not an ack).
func readLines(r interface{ Read([]byte) (int, error) }, out chan<- string) {
	defer close(out)
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return
		}
		out <- strings.TrimSuffix(line, "\n")
	}
}

func waitKilled(t testing.TB, cmd *exec.Cmd, killed bool, n int, stderr *bytes.Buffer) {
	err := cmd.Wait()
	if !killed {
		t.Fatalf("crash: child exited by itself after %d acks (%v); does TestMain call enginetest.Main?\nstderr:\n%s", n, err, stderr)
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("crash: child: %v", err)
	}
	if ws, ok := exit.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("crash: child ended with %v, not SIGKILL\nstderr:\n%s", err, stderr)
	}
}

// verifyCrash reopens dir and checks the acknowledged writes and deletions, and batch
// atomicity.
func verifyCrash(t testing.TB, f Factory, dir string, log *crashLog) {
	e, err := f.Open(dir, engine.Options{Durability: engine.Sync})
	if err != nil {
		t.Fatalf("crash: %s: reopen after SIGKILL: %v", f.Name, err)
	}
	defer e.Close()
	acked := log.acked
	var lost []string
	for k := range acked {
		r, found, err := e.Get([]byte(k))
		switch {
		case err != nil:
			t.Errorf("crash: %s: get acknowledged %q: %v", f.Name, k, err)
		case !found:
			lost = append(lost, k)
		case !RowsEqual(r, crashRow(k)):
			t.Errorf("crash: %s: acknowledged %q reads %s, wrote %s", f.Name, k, FormatRow(r), FormatRow(crashRow(k)))
		}
	}
	if len(lost) > 0 {
		t.Errorf("crash: %s: %d of %d acknowledged writes lost, e.g. %q", f.Name, len(lost), len(acked), lost[:min(5, len(lost))])
	}
	present := verifyCrashScan(t, f, e)
	for k := range present {
		if log.deleted[k] {
			t.Errorf("crash: %s: %q is there, in a range whose deletion was acknowledged", f.Name, k)
		}
		for _, sib := range crashBatchKeys(k) {
			if !present[sib] && !log.uncertain[sib] {
				t.Errorf("crash: %s: batch survived in part: %q is there, %q is not", f.Name, k, sib)
			}
		}
	}
	t.Logf("crash: %s: %d acknowledged writes all present, %d acknowledged deletions of rows all done; %d rows in total",
		f.Name, len(acked), len(log.deleted), len(present))
}

// verifyCrashScan checks every stored row is one the child wrote, with its exact value,
// and returns the set of keys.
func verifyCrashScan(t testing.TB, f Factory, e engine.Engine) map[string]bool {
	rows, err := scan(e, nil, nil)
	if err != nil {
		t.Errorf("crash: %s: scan after SIGKILL: %v", f.Name, err)
	}
	present := make(map[string]bool, len(rows))
	for _, r := range rows {
		k := string(r.key)
		present[k] = true
		if crashBatchKeys(k) == nil {
			t.Errorf("crash: %s: unexpected key %q after SIGKILL", f.Name, k)
		} else if !RowsEqual(r.row, crashRow(k)) {
			t.Errorf("crash: %s: %q reads %s, wrote %s", f.Name, k, FormatRow(r.row), FormatRow(crashRow(k)))
		}
	}
	return present
}

// crashKey names mutation m of batch b of writer w in round r. Batches hold one to three
// mutations, a number fixed by (w, b), so that the parent can find a key's siblings.
func crashKey(r, w, b, m int) string { return fmt.Sprintf("crash/r%02d/w%d/b%08d/m%d", r, w, b, m) }

func crashBatchSize(w, b int) int { return 1 + (b*7+w)%3 }

// crashBatchKeys returns all keys of the batch key belongs to, or nil if key is not a
// crash key.
func crashBatchKeys(key string) []string {
	var r, w, b, m int
	if n, err := fmt.Sscanf(key, "crash/r%02d/w%d/b%08d/m%d", &r, &w, &b, &m); n != 4 || err != nil || key != crashKey(r, w, b, m) {
		return nil
	}
	keys := make([]string, crashBatchSize(w, b))
	for i := range keys {
		keys[i] = crashKey(r, w, b, i)
	}
	return keys
}

// crashRow is the row written under key: a value of 40 to 240 bytes derived from the key,
// so a torn or misplaced write cannot pass for the right one.
func crashRow(key string) row.Row {
	sum := sha256.Sum256([]byte(key))
	v := bytes.Repeat(sum[:], 8)[:40+int(sum[0])%200]
	return row.Row{Cells: []row.Cell{
		{Name: []byte("k"), Value: []byte(key), Timestamp: StartMicros},
		{Name: []byte("v"), Value: v, Timestamp: StartMicros + int64(sum[1])},
	}}
}

// runCrashChild is the child's main: writers apply synced batches and print their keys
// after Apply returns, until SIGKILL. It returns an exit code.
func runCrashChild(dir string, f Factory) int {
	round, _ := strconv.Atoi(os.Getenv(crashRoundEnv))
	e, err := f.Open(dir, engine.Options{Durability: engine.Sync})
	if err != nil {
		fmt.Fprintf(os.Stderr, "crash child: open %s: %v\n", dir, err)
		return 2
	}
	var out sync.Mutex
	var wg sync.WaitGroup
	deadline := time.Now().Add(crashChildLifetime)
	acked0 := make(chan int, 1) // writer 0's acknowledged batches, the latest count
	if d, ok := e.(engine.RangeDeleter); ok {
		wg.Go(func() { runCrashDeleter(d, round, acked0, &out, deadline) })
	}
	for w := range crashWriters {
		wg.Go(func() {
			for b := 0; time.Now().Before(deadline); b++ {
				keys := crashBatchKeysOf(round, w, b)
				batch := make([]row.Mutation, len(keys))
				for i, k := range keys {
					batch[i] = row.Mutation{Key: []byte(k), Row: crashRow(k)}
				}
				if err := e.Apply(batch); err != nil {
					fmt.Fprintf(os.Stderr, "crash child: apply: %v\n", err)
					os.Exit(1)
				}
				out.Lock()
				_, err := fmt.Fprintf(os.Stdout, "ack %s\n", strings.Join(keys, " "))
				out.Unlock()
				if err != nil {
					return // the parent is gone
				}
				if w == 0 {
					select { // replace the count the deleter has not taken yet
					case <-acked0:
					default:
					}
					acked0 <- b + 1
				}
			}
		})
	}
	wg.Wait()
	e.Close()
	fmt.Fprintln(os.Stderr, "crash child: never killed")
	return 3
}

func crashBatchKeysOf(r, w, b int) []string { return crashBatchKeys(crashKey(r, w, b, 0)) }

// runCrashDeleter deletes writer 0's acknowledged batches of this round, crashDeleteSpan
// at a time, and prints "deleting R FROM TO" before and "deleted R FROM TO" after each
// DeleteRange returns (batches FROM to TO-1 of round R).
func runCrashDeleter(d engine.RangeDeleter, round int, acked0 <-chan int, out *sync.Mutex, deadline time.Time) {
	timeout := time.NewTimer(time.Until(deadline))
	defer timeout.Stop()
	next, acked := 0, 0
	for {
		select {
		case acked = <-acked0:
		case <-timeout.C:
			return
		}
		for ; acked >= next+crashDeleteSpan; next += crashDeleteSpan {
			say := func(what string) bool {
				out.Lock()
				defer out.Unlock()
				_, err := fmt.Fprintf(os.Stdout, "%s %d %d %d\n", what, round, next, next+crashDeleteSpan)
				return err == nil
			}
			if !say("deleting") {
				return // the parent is gone
			}
			lo, hi := crashKey(round, 0, next, 0), crashKey(round, 0, next+crashDeleteSpan, 0)
			if err := d.DeleteRange([]byte(lo), []byte(hi)); err != nil {
				fmt.Fprintf(os.Stderr, "crash child: delete range: %v\n", err)
				os.Exit(1)
			}
			if !say("deleted") {
				return
			}
		}
	}
}
