package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Verify is the read-back of every acknowledged write at ALL, after the recovery.
type Verify struct {
	// AckedWrites are the writes the load had acknowledged; Keys the keys they wrote
	// (checked: one read each, of the key's newest acknowledged value).
	AckedWrites int64 `json:"acked_writes"`
	FailedWrite int64 `json:"failed_writes"`
	Keys        int   `json:"keys"`
	OK          int   `json:"ok"`
	// Later counts keys holding a write newer than the last acknowledged one, which failed
	// at the client (a timeout may have been applied): not a loss.
	Later int `json:"later_unacknowledged"`
	// Missing: the key or its field not found; Stale: an older value than the newest
	// acknowledged write (an older write of the load's, or the loaded one).
	Missing int `json:"missing"`
	Stale   int `json:"stale"`
	// ReadErrors are keys no read at ALL answered after every retry.
	ReadErrors int      `json:"read_errors"`
	Examples   []string `json:"examples,omitempty"`
	Seconds    float64  `json:"seconds"`
}

// expect is what a key's read-back may find: its newest acknowledged write, or a later
// write that failed at the client.
type expect struct {
	acked int64   // highest acknowledged seq, 0 if none
	later []int64 // failed writes after it
}

func verifyCmd(args []string) error {
	fs := flag.NewFlagSet("verify", flag.ExitOnError)
	targets := fs.String("targets", "", "comma-separated RESP addresses of live nodes")
	records := fs.Int64("records", 0, "records loaded")
	opsPath := fs.String("ops", "", "the load's ops log")
	out := fs.String("out", "", "verify.json to write")
	_ = fs.Parse(args)
	if *targets == "" || *records <= 0 || *opsPath == "" || *out == "" {
		return fmt.Errorf("usage: bench-recover verify -targets A,B -records N -ops FILE -out FILE")
	}
	keys, err := keyNames(*records)
	if err != nil {
		return err
	}
	v := Verify{}
	exp, err := readWrites(*opsPath, &v)
	if err != nil {
		return err
	}
	t0 := time.Now()
	clients := newClients(strings.Split(*targets, ","), "ALL", 4, 30*time.Second)
	defer func() {
		for _, c := range clients {
			_ = c.Close()
		}
	}()
	var todo []int64
	for k, e := range exp {
		if e.acked > 0 {
			todo = append(todo, k)
		}
	}
	slices.Sort(todo)
	v.Keys = len(todo)
	for try := 0; len(todo) > 0 && try < 5; try++ {
		if try > 0 {
			time.Sleep(time.Second)
		}
		var failed []int64
		for i := 0; i < len(todo); i += 200 {
			batch := todo[i:min(i+200, len(todo))]
			got, errs := readBatch(clients[(i/200+try)%len(clients)], keys, batch)
			for j, k := range batch {
				if errs[j] != nil {
					failed = append(failed, k)
					continue
				}
				classify(&v, keys[k], exp[k], got[j])
			}
		}
		todo = failed
	}
	v.ReadErrors = len(todo)
	v.Seconds = time.Since(t0).Seconds()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	fmt.Printf("verify: %d acknowledged writes to %d keys read back at ALL: %d ok (%d hold a later unacknowledged write), %d missing, %d stale, %d unread\n",
		v.AckedWrites, v.Keys, v.OK, v.Later, v.Missing, v.Stale, v.ReadErrors)
	return os.WriteFile(*out, append(b, '\n'), 0o644)
}

// readWrites reads the ops log's writes: per key, its newest acknowledged write and the
// failed ones after it.
func readWrites(path string, v *Verify) (map[int64]*expect, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	exp := map[int64]*expect{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fl := strings.Fields(sc.Text())
		if len(fl) < 6 || fl[1] != "W" {
			continue
		}
		key, err1 := strconv.ParseInt(fl[4], 10, 64)
		seq, err2 := strconv.ParseInt(fl[5], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("%s: bad line %q", path, sc.Text())
		}
		e := exp[key]
		if e == nil {
			e = &expect{}
			exp[key] = e
		}
		// A key's writes run one at a time in seq order (one worker), so the log lists
		// them in that order; an acknowledged write supersedes every earlier one.
		if fl[3] == "ok" {
			v.AckedWrites++
			e.acked, e.later = seq, e.later[:0]
		} else {
			v.FailedWrite++
			e.later = append(e.later, seq)
		}
	}
	return exp, sc.Err()
}

// readBatch reads field0 of keys[batch] through c, pipelined; a missing key or field
// gives "" with a nil error.
func readBatch(c *redis.Client, keys []string, batch []int64) ([]*string, []error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmds := make([]*redis.StringCmd, len(batch))
	_, _ = c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range batch {
			cmds[i] = p.HGet(ctx, keys[k], loadField)
		}
		return nil
	})
	got, errs := make([]*string, len(batch)), make([]error, len(batch))
	for i, cmd := range cmds {
		s, err := cmd.Result()
		switch {
		case errors.Is(err, redis.Nil):
		case err != nil:
			errs[i] = err
		default:
			got[i] = &s
		}
	}
	return got, errs
}

// classify counts one key's read-back.
func classify(v *Verify, key string, e *expect, got *string) {
	example := func(what string) {
		if len(v.Examples) < 10 {
			v.Examples = append(v.Examples, fmt.Sprintf("%s: %s (acknowledged s%d)", key, what, e.acked))
		}
	}
	if got == nil {
		v.Missing++
		example("missing")
		return
	}
	seq := seqOf(*got)
	switch {
	case seq == e.acked:
		v.OK++
	case slices.Contains(e.later, seq):
		v.OK++
		v.Later++
	case seq < 0:
		v.Stale++
		example("the loaded value")
	default:
		v.Stale++
		example("s" + strconv.FormatInt(seq, 10))
	}
}
