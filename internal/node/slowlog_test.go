package node

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
)

// The slow log's options reach the front end: slowlog_threshold 0 logs every command, as
// Redis's slowlog-log-slower-than 0 does, and slowlog_max_len bounds the log.
func TestSlowlogOptionsReachTheFrontEnd(t *testing.T) {
	cfg := testConfig(t, "memory")
	cfg.SlowlogThreshold, cfg.SlowlogMaxLen = 0, 3
	n, err := Start(cfg, quiet())
	if err != nil {
		t.Fatal(err)
	}
	defer n.Shutdown(context.Background())
	c := redis.NewClient(&redis.Options{Addr: n.Addr(), Protocol: 2})
	defer c.Close()
	ctx := context.Background()
	for range 5 {
		c.Set(ctx, "k", "v", 0)
	}
	if got, err := c.SlowLogGet(ctx, -1).Result(); err != nil || len(got) != 3 || got[0].Args[0] != "set" {
		t.Fatalf("SLOWLOG GET -1: %+v %v, want the last 3 commands", got, err)
	}
	if got, err := c.ConfigGet(ctx, "slowlog-log-slower-than").Result(); err != nil || got["slowlog-log-slower-than"] != "1" {
		t.Fatalf("CONFIG GET slowlog-log-slower-than: %v %v", got, err)
	}
}
