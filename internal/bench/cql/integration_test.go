package cql

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/bench"
)

// integrationTarget connects to the Cassandra named by KURA_CASSANDRA (host:port) and
// gives the test a fresh table, dropped afterwards. scripts/cassandra.sh starts one.
func integrationTarget(t *testing.T) *Target {
	t.Helper()
	addr := os.Getenv("KURA_CASSANDRA")
	if addr == "" {
		t.Skip("needs a Cassandra: set KURA_CASSANDRA=host:port (scripts/cassandra.sh start runs one on 127.0.0.1:9042)")
	}
	table := fmt.Sprintf("it_%d", time.Now().UnixNano())
	t.Logf("table kura_it.%s on %s", table, addr)
	tg, err := New(Config{
		Hosts:            []string{addr},
		Keyspace:         "kura_it",
		Table:            table,
		FieldCount:       3,
		ReadConsistency:  "QUORUM",
		WriteConsistency: "QUORUM",
		// Schema changes take seconds on a small machine.
		RequestTimeout: 30 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		tg.mu.Lock()
		s := tg.session
		tg.mu.Unlock()
		if s != nil {
			if err := s.Query("DROP TABLE IF EXISTS kura_it." + table).Exec(); err != nil {
				t.Errorf("drop table: %v", err)
			}
		}
		tg.Close()
	})
	ctx := context.Background()
	for range 2 { // EnsureSchema is idempotent
		if err := tg.EnsureSchema(ctx); err != nil {
			t.Fatal(err)
		}
	}
	return tg
}

// cell returns column i of the last row c read.
func cell(c *client, i int) string { return string(*c.dest[i].(*[]byte)) }

func fields(kv ...string) []bench.Field {
	var fs []bench.Field
	for i := 0; i < len(kv); i += 2 {
		fs = append(fs, bench.Field{Name: kv[i], Value: []byte(kv[i+1])})
	}
	return fs
}

func TestIntegrationOperations(t *testing.T) {
	tg := integrationTarget(t)
	ctx := context.Background()
	bc, err := tg.Open(ctx, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer bc.Close()
	c := bc.(*client)

	keys := []string{"user1", "user2", "user3", "user4", "user5"}
	for _, k := range keys {
		if err := c.Insert(ctx, k, fields("field0", k+"-0", "field1", k+"-1", "field2", k+"-2")); err != nil {
			t.Fatal(err)
		}
	}

	// All fields: SELECT * returns the key, then the fields in name order.
	found, err := c.Read(ctx, "user3", nil)
	if err != nil || !found {
		t.Fatalf("Read(user3) = %v, %v; want found", found, err)
	}
	if got := []string{cell(c, 0), cell(c, 1), cell(c, 2), cell(c, 3)}; fmt.Sprint(got) != "[user3 user3-0 user3-1 user3-2]" {
		t.Fatalf("Read(user3) row = %q", got)
	}
	if found, err := c.Read(ctx, "nobody", nil); err != nil || found {
		t.Fatalf("Read(nobody) = %v, %v; want not found", found, err)
	}

	if err := c.Update(ctx, "user3", fields("field1", "new")); err != nil {
		t.Fatal(err)
	}
	if found, err := c.Read(ctx, "user3", []string{"field1", "field0"}); err != nil || !found {
		t.Fatalf("Read after update = %v, %v", found, err)
	}
	if cell(c, 0) != "new" || cell(c, 1) != "user3-0" {
		t.Fatalf("after updating field1: field1 = %q, field0 = %q; want new, user3-0", cell(c, 0), cell(c, 1))
	}

	// Scans walk the token ring, whose order the test does not know; but from each of
	// n keys a scan of count rows returns min(count, rank) of them, whatever the order.
	for _, tc := range []struct{ count, want int }{{100, 5 + 4 + 3 + 2 + 1}, {2, 2 + 2 + 2 + 2 + 1}} {
		total := 0
		for _, k := range keys {
			if err := c.Scan(ctx, k, tc.count, []string{"field2"}); err != nil {
				t.Fatal(err)
			}
			total += c.rows
		}
		if total != tc.want {
			t.Errorf("scans of %d from each key returned %d rows in all, want %d", tc.count, total, tc.want)
		}
	}

	if err := c.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	if c.rows != 1 {
		t.Errorf("ping read %d rows, want 1", c.rows)
	}
}

func TestIntegrationCancelledContextFailsTheRequest(t *testing.T) {
	tg := integrationTarget(t)
	c, err := tg.Open(context.Background(), 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Read(ctx, "user1", nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("Read with a cancelled context: error = %v, want context.Canceled", err)
	}
}

func TestIntegrationClientsShareTheSessionConcurrently(t *testing.T) {
	tg := integrationTarget(t)
	ctx := context.Background()
	const threads, perThread = 4, 50
	var wg sync.WaitGroup
	errs := make(chan error, threads)
	for th := range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- runThread(ctx, tg, th, threads, perThread)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	tg.mu.Lock()
	s := tg.session
	tg.mu.Unlock()
	var n int
	if err := s.Query(fmt.Sprintf("SELECT COUNT(*) FROM kura_it.%s", tg.cfg.Table)).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != threads*perThread {
		t.Fatalf("table holds %d records, want %d", n, threads*perThread)
	}
}

// runThread inserts then reads back perThread records as one benchmark thread would.
func runThread(ctx context.Context, tg *Target, th, threads, perThread int) error {
	c, err := tg.Open(ctx, th, threads)
	if err != nil {
		return err
	}
	defer c.Close()
	for i := range perThread {
		key := fmt.Sprintf("t%d-%d", th, i)
		if err := c.Insert(ctx, key, fields("field0", key)); err != nil {
			return err
		}
		found, err := c.Read(ctx, key, []string{"field0"})
		if err != nil {
			return err
		}
		if !found {
			return fmt.Errorf("%s not found after insert", key)
		}
	}
	return nil
}
