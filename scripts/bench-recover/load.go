package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/kuradb/kura/internal/bench"
)

// The foreground load is written here rather than run with `kura bench run --rate`, which
// has the open loop but neither logs the writes it had acknowledged (the read-back at ALL
// needs every one, with its value) nor splits its latencies at the failure and the end of
// the recovery.
//
// It is YCSB A's mix on the loaded records (half reads of a whole record, HGETALL; half
// updates of one field, HSET), keys uniform, at a fixed rate in an open loop: operation i
// is due at start + i/rate and its latency runs from then, so that a slow server delays
// the operations behind it and they count it (no coordinated omission). Each key belongs
// to one worker (key mod workers), which runs its operations one at a time: writes to a
// key are never concurrent, so the acknowledged write with the highest sequence number is
// the key's newest, and what a read-back at ALL must find (or a later write that failed
// and may have been applied).

// loadField is the field the updates write; valueLen is YCSB's field length.
const (
	loadField = "field0"
	valueLen  = 100
)

// valueFor returns the value of write seq: "s<seq>-" padded with letters fixed by seq.
func valueFor(seq int64) string {
	const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	b := make([]byte, 0, valueLen)
	b = append(b, 's')
	b = strconv.AppendInt(b, seq, 10)
	b = append(b, '-')
	x := uint64(seq)*0x9E3779B97F4A7C15 + 1
	for len(b) < valueLen {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b = append(b, letters[x%uint64(len(letters))])
	}
	return string(b)
}

// seqOf returns the sequence number a value written by valueFor carries, or -1.
func seqOf(v string) int64 {
	rest, ok := strings.CutPrefix(v, "s")
	if !ok {
		return -1
	}
	i := strings.IndexByte(rest, '-')
	if i <= 0 {
		return -1
	}
	seq, err := strconv.ParseInt(rest[:i], 10, 64)
	if err != nil || valueFor(seq) != v {
		return -1
	}
	return seq
}

// keyNames returns the loaded records' keys, as kura bench load named them.
func keyNames(records int64) ([]string, error) {
	w := bench.NewWorkload()
	w.RecordCount = records
	g, err := bench.NewGenerator(w, 0)
	if err != nil {
		return nil, err
	}
	out := make([]string, records)
	for i := range out {
		out[i] = g.KeyName(int64(i))
	}
	return out, nil
}

// op is one operation of the load.
type op struct {
	due   time.Time
	write bool
	key   int64
	seq   int64 // writes: the value's sequence number
	node  int   // index of the coordinator in targets
}

// opResult is one line of the ops log: "DUE_UNIX_NS R|W LATENCY_US ok|nf|err KEY SEQ NODE
// SERVICE_US": the latency from the operation's due time, and its service time from when
// the client sent it (the difference is waiting in the client: behind the worker's
// earlier operations, or for the CPU on a busy machine).
type opResult struct {
	op
	latency time.Duration
	service time.Duration
	result  string
	err     error
}

// newClients returns a client per address whose connections use level.
func newClients(addrs []string, level string, pool int, timeout time.Duration) []*redis.Client {
	var out []*redis.Client
	for _, a := range addrs {
		out = append(out, redis.NewClient(&redis.Options{Addr: a, PoolSize: pool, MaxRetries: -1, DisableIdentity: true,
			Protocol: 2, ReadTimeout: timeout, WriteTimeout: timeout, DialTimeout: 2 * time.Second,
			OnConnect: func(ctx context.Context, cn *redis.Conn) error {
				return cn.Do(ctx, "KURA.CONSISTENCY", level).Err()
			}}))
	}
	return out
}

func loadCmd(args []string) error {
	fs := flag.NewFlagSet("load", flag.ExitOnError)
	targets := fs.String("targets", "", "comma-separated RESP addresses of the coordinators (round robin)")
	records := fs.Int64("records", 0, "records loaded (keys user<hash of 0..N-1>)")
	rate := fs.Float64("rate", 100, "operations per second")
	readFraction := fs.Float64("read-fraction", 0.5, "share of reads (YCSB A: 0.5)")
	workers := fs.Int("workers", 256, "workers; key k is run by worker k mod workers (more: less waiting behind a slow operation of another key)")
	level := fs.String("consistency", "QUORUM", "consistency level of every operation")
	timeout := fs.Duration("timeout", 15*time.Second, "client timeout of an operation")
	seed := fs.Uint64("seed", 1, "random seed of the keys and the mix")
	out := fs.String("out", "", "ops log to write")
	_ = fs.Parse(args)
	if *targets == "" || *records <= 0 || *rate <= 0 || *out == "" {
		return fmt.Errorf("usage: bench-recover load -targets A,B -records N -rate R -out FILE")
	}
	keys, err := keyNames(*records)
	if err != nil {
		return err
	}
	addrs := strings.Split(*targets, ",")
	clients := newClients(addrs, *level, *workers, *timeout)
	f, err := os.Create(*out)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	results := make(chan opResult, 4096)
	var logged sync.WaitGroup
	logged.Add(1)
	var counts [2][3]int64 // read/write × ok/nf/err
	errs := map[string]int{}
	go func() {
		defer logged.Done()
		for r := range results {
			kind, i := "R", 0
			if r.write {
				kind, i = "W", 1
			}
			counts[i][map[string]int{"ok": 0, "nf": 1, "err": 2}[r.result]]++
			if r.err != nil {
				msg := r.err.Error()
				if _, ok := errs[msg]; ok || len(errs) < 20 {
					errs[msg]++
				}
			}
			fmt.Fprintf(w, "%d %s %d %s %d %d %d %d\n", r.due.UnixNano(), kind, r.latency.Microseconds(), r.result, r.key, r.seq, r.node,
				r.service.Microseconds())
		}
	}()

	queues := make([]chan op, *workers)
	var running sync.WaitGroup
	for i := range queues {
		queues[i] = make(chan op, 4096)
		running.Add(1)
		go func(q chan op) {
			defer running.Done()
			for o := range q {
				results <- runOp(clients[o.node], keys[o.key], o)
			}
		}(queues[i])
	}

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	rng := rand.New(rand.NewPCG(*seed, 7))
	start := time.Now()
	interval := time.Duration(float64(time.Second) / *rate)
	var seq atomic.Int64
	fmt.Printf("load: %.1f ops/s over %d records through %s at %s, %d workers\n", *rate, *records, *targets, *level, *workers)
dispatch:
	for i := int64(0); ; i++ {
		due := start.Add(time.Duration(i) * interval)
		if d := time.Until(due); d > 0 {
			select {
			case <-stop:
				break dispatch
			case <-time.After(d):
			}
		}
		o := op{due: due, key: rng.Int64N(*records), write: rng.Float64() >= *readFraction, node: int(i % int64(len(addrs)))}
		if o.write {
			o.seq = seq.Add(1)
		}
		queues[o.key%int64(len(queues))] <- o
	}
	for _, q := range queues {
		close(q)
	}
	running.Wait()
	close(results)
	logged.Wait()
	for _, c := range clients {
		_ = c.Close()
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Printf("load: %.0f s; reads ok %d, not found %d, failed %d; writes ok %d, failed %d\n", time.Since(start).Seconds(),
		counts[0][0], counts[0][1], counts[0][2], counts[1][0], counts[1][2])
	for msg, n := range errs {
		fmt.Printf("load: %d× %s\n", n, msg)
	}
	return nil
}

// runOp runs o on c and times it from its due time.
func runOp(c *redis.Client, key string, o op) opResult {
	ctx := context.Background()
	r := opResult{op: o, result: "ok"}
	start := time.Now()
	if o.write {
		r.err = c.HSet(ctx, key, loadField, valueFor(o.seq)).Err()
	} else {
		var m map[string]string
		m, r.err = c.HGetAll(ctx, key).Result()
		if r.err == nil && len(m) == 0 {
			r.result = "nf"
		}
	}
	r.latency, r.service = time.Since(o.due), time.Since(start)
	if r.err != nil && !errors.Is(r.err, redis.Nil) {
		r.result = "err"
	}
	return r
}
