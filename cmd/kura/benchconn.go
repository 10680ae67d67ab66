package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/kuradb/kura/internal/bench/redis"
)

// newBenchConnectCmd is `kura bench connect`: new connections per second, each dialed,
// set up (TLS handshake, AUTH, KURA.CONSISTENCY as the target asks), pinged once and
// closed; what a client that does not pool its connections pays, and with resps:// the
// cost of TLS handshakes.
func newBenchConnectCmd() *cobra.Command {
	var target string
	var threads int
	var duration time.Duration
	var resume bool
	cmd := &cobra.Command{
		Use:   "connect",
		Short: "New connections per second (dial, TLS handshake, AUTH, one PING, close)",
		Example: `  kura bench connect --target resp://127.0.0.1:6380 --duration 10s
  kura bench connect --target 'resps://127.0.0.1:6390?cacert=certs/ca.crt&user=bench&password=pw'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			t, err := redis.ParseURL(target)
			if err != nil {
				return err
			}
			if t.TLS != nil && !resume {
				t.TLS.ClientSessionCache = nil // every connection a full handshake
			}
			return benchConnect(cmd.Context(), cmd.OutOrStdout(), t, threads, duration)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&target, "target", "resp://127.0.0.1:6380", "Redis-protocol target (resp://, resps:// with TLS; see kura bench run --help)")
	fl.IntVar(&threads, "threads", 4, "concurrent connecting clients")
	fl.DurationVar(&duration, "duration", 10*time.Second, "how long to connect")
	fl.BoolVar(&resume, "tls-resume", true, "with TLS, resume sessions (an abbreviated handshake, as a client with a session cache reconnects); false makes every connection a full handshake")
	return cmd
}

// benchConnect runs threads loops of connect, PING, close for d and prints the rate and
// latency percentiles of the whole cycle.
func benchConnect(ctx context.Context, w io.Writer, t *redis.Target, threads int, d time.Duration) error {
	if threads < 1 || d <= 0 {
		return fmt.Errorf("bench connect: --threads must be at least 1 and --duration positive")
	}
	// The end is a time, not ctx's deadline: an operation cut by the deadline would look
	// like a failure.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu    sync.Mutex
		lat   []time.Duration
		first error
		wg    sync.WaitGroup
	)
	start := time.Now()
	end := start.Add(d)
	for i := range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			for ctx.Err() == nil && time.Now().Before(end) {
				t0 := time.Now()
				c, err := t.Open(ctx, i, 0)
				if err == nil {
					err = c.Ping(ctx)
					c.Close()
				}
				if err != nil {
					if ctx.Err() == nil {
						mu.Lock()
						if first == nil {
							first = err
						}
						mu.Unlock()
						cancel()
					}
					break
				}
				mine = append(mine, time.Since(t0))
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if first != nil {
		return fmt.Errorf("bench connect: %w", first)
	}
	el := time.Since(start)
	if len(lat) == 0 {
		return fmt.Errorf("bench connect: no connection completed in %v", d)
	}
	slices.Sort(lat)
	q := func(p float64) time.Duration { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
	how := ""
	if t.TLS != nil {
		how = " (full handshakes)"
		if t.TLS.ClientSessionCache != nil {
			how = " (sessions resumed)"
		}
	}
	fmt.Fprintf(w, "%s%s: %d connections in %.1fs by %d threads: %.0f/s; connect+PING+close p50 %v p99 %v max %v\n",
		t.Name(), how, len(lat), el.Seconds(), threads, float64(len(lat))/el.Seconds(),
		q(0.50).Round(time.Microsecond), q(0.99).Round(time.Microsecond), lat[len(lat)-1].Round(time.Microsecond))
	return nil
}
