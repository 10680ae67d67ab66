package redis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/kuradb/kura/internal/bench"
	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/ring"
	"github.com/kuradb/kura/internal/row"
	"github.com/kuradb/kura/internal/scan"
)

// scanningStore is the memory engine with SCAN, as a single kura node serves it (one pass
// per page; package node's store, which this package may not import).
type scanningStore struct{ engine.Engine }

func (s scanningStore) Scan(_ string, cursor uint64, count int) ([]row.Mutation, uint64, error) {
	pass := func(sel *scan.Selector) error {
		it, err := s.NewIterator(nil, nil)
		if err != nil {
			return err
		}
		defer it.Close()
		for it.Next() {
			r := it.Row()
			sel.Add(ring.TokenOf(it.Key()), it.Key(), &r)
		}
		return it.Err()
	}
	sel := scan.NewSelector(scan.From(cursor), count)
	if err := pass(sel); err != nil {
		return nil, 0, err
	}
	rows, through, stuck := sel.Result()
	if stuck {
		sel = scan.Whole(scan.From(cursor))
		if err := pass(sel); err != nil {
			return nil, 0, err
		}
		rows, through, _ = sel.Result()
	}
	return rows, scan.After(through), nil
}

// A scan reads the count records whose tokens follow the start key's, in token order,
// as Cassandra's token(key) >= token(start) LIMIT count does, in both record layouts.
func TestScanReadsTheNextRecordsInTokenOrder(t *testing.T) {
	addr := startKura(t)
	ctx := context.Background()
	for _, record := range []string{RecordHash, RecordString} {
		target, err := ParseURL("resp://" + addr + "?record=" + record)
		if err != nil {
			t.Fatal(err)
		}
		cl, err := target.Open(ctx, 0, 1)
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		for i := range 200 {
			k := fmt.Sprintf("user%d", i)
			if err := cl.Insert(ctx, k, []bench.Field{{Name: "field0", Value: []byte("v")}}); err != nil {
				t.Fatal(err)
			}
			keys = append(keys, k)
		}
		slices.SortFunc(keys, func(a, b string) int {
			ta, tb := ring.TokenOf([]byte(a)), ring.TokenOf([]byte(b))
			switch {
			case ta < tb:
				return -1
			case ta > tb:
				return 1
			}
			return 0
		})
		c := cl.(*client)
		for _, tc := range []struct{ start, count, want int }{{0, 10, 10}, {50, 100, 100}, {195, 10, 5}, {199, 1, 1}} {
			if err := cl.Scan(ctx, keys[tc.start], tc.count, nil); err != nil {
				t.Fatalf("%s: scan: %v", record, err)
			}
			var got []string
			for _, k := range c.scan.keys {
				got = append(got, string(k))
			}
			if want := keys[tc.start : tc.start+tc.want]; !slices.Equal(got, want) {
				t.Errorf("%s: scan of %d from %s: %v, want %v", record, tc.count, keys[tc.start], got, want)
			}
		}
		if err := cl.Scan(ctx, keys[3], 5, []string{"field0"}); err != nil {
			t.Errorf("%s: scan of some fields: %v", record, err)
		}
		cl.Close()
	}
}

// Workload E runs against kura, and fails with ErrUnsupported against redis-server,
// whose SCAN has no key order.
func TestWorkloadERunsAgainstKuraOnly(t *testing.T) {
	ctx := context.Background()
	w, _ := bench.NamedWorkload("e")
	w.RecordCount = 200
	target, err := ParseURL("resp://" + startKura(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bench.Run(ctx, bench.Config{Workload: w, Phase: bench.PhaseLoad, Target: target, Threads: 2}); err != nil {
		t.Fatal(err)
	}
	res, err := bench.Run(ctx, bench.Config{Workload: w, Phase: bench.PhaseRun, Target: target, Threads: 2, Operations: 100})
	if err != nil {
		t.Fatal(err)
	}
	if sc, ok := res.Op("SCAN"); !ok || sc.Count == 0 || res.Errors != 0 {
		t.Errorf("workload e: %d scans, %d errors", sc.Count, res.Errors)
	}

	redisTarget, err := ParseURL("resp://" + startRedis(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bench.Run(ctx, bench.Config{Workload: w, Phase: bench.PhaseRun, Target: redisTarget, Threads: 1, Operations: 10}); !errors.Is(err, bench.ErrUnsupported) {
		t.Errorf("workload e against redis-server: %v, want ErrUnsupported", err)
	}
}
