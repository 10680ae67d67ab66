package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/kuradb/kura/internal/admin"
	"github.com/kuradb/kura/internal/config"
)

// A node started with --fast-dir moves the keys clients read to the fast directory (at
// once while its budget has room), serves them from there, reports it on /tiers and
// /metrics, and keeps them across a restart.
func TestTieredNodeMovesReadKeysToTheFastDirectory(t *testing.T) {
	cfg := testConfig(t, "lsm")
	cfg.FastDir = filepath.Join(t.TempDir(), "ssd")
	cfg.FastBudgetBytes = 1 << 20
	cfg.TierWindow = 200 * time.Millisecond
	n, err := Start(cfg, quiet())
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(&redis.Options{Addr: n.Addr()})
	defer c.Close()
	ctx := context.Background()
	for i := range 20 {
		if err := c.Set(ctx, fmt.Sprintf("k%02d", i), fmt.Sprintf("v%d", i), 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	var st admin.TiersStatus
	for {
		// Keep reading three keys until a window in which they were read has been
		// decided on.
		for _, k := range []string{"k01", "k02", "k03"} {
			if err := c.Get(ctx, k).Err(); err != nil {
				t.Fatal(err)
			}
		}
		code, body := get(t, "http://"+n.AdminAddr()+"/tiers")
		if code != 200 {
			t.Fatalf("/tiers = %d %s", code, body)
		}
		st = admin.TiersStatus{}
		if err := json.Unmarshal([]byte(body), &st); err != nil {
			t.Fatal(err)
		}
		// Moved, not just under way, and counted (the key counts are estimates that can
		// run ahead of the move counter).
		if st.Tiers[0].Keys == 3 && st.InBoth == 0 && st.Tiers[0].MovedIn >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the read keys never all reached the fast tier: %s", body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if st.Tiers[0].Tier != "fast" || st.Tiers[0].MovedIn < 3 || st.SinceStart.Reads == 0 {
		t.Errorf("/tiers: %+v", st)
	}
	_, metrics := get(t, "http://"+n.AdminAddr()+"/metrics")
	for _, want := range []string{`kura_tier_keys{tier="fast"} 3`, `kura_tier_fast_budget_bytes 1.048576e+06`, `kura_tier_reads_total{tier="fast"}`, "kura_engine_block_cache_misses_total", "kura_engine_compaction_read_bytes_total", "kura_engine_compaction_debt_bytes", "kura_engine_read_amplification"} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	for i := range 20 {
		if got := c.Get(ctx, fmt.Sprintf("k%02d", i)).Val(); got != fmt.Sprintf("v%d", i) {
			t.Errorf("GET k%02d = %q", i, got)
		}
	}
	// Every key has now been read and the budget has room for all of them: each is
	// promoted on read, within the promotion queue's drain interval.
	deadline = time.Now().Add(20 * time.Second)
	var fastKeys int64
	for fastKeys = n.tiers.Status(time.Now()).Tiers[0].Keys; fastKeys != 20 || n.tiers.Status(time.Now()).InBoth != 0; fastKeys = n.tiers.Status(time.Now()).Tiers[0].Keys {
		if time.Now().After(deadline) {
			t.Fatalf("after reading all 20 keys the fast tier holds %d", fastKeys)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := n.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}

	// The data directory remembers its tiers.
	plain := cfg
	plain.FastDir, plain.FastBudgetBytes = "", 0
	if _, err := Start(plain, quiet()); !errors.Is(err, ErrEngineMismatch) {
		t.Fatalf("restart without --fast-dir: %v, want ErrEngineMismatch", err)
	}
	n, err = Start(cfg, quiet())
	if err != nil {
		t.Fatal(err)
	}
	defer n.Shutdown(ctx)
	c2 := redis.NewClient(&redis.Options{Addr: n.Addr()})
	defer c2.Close()
	if got := c2.Get(ctx, "k02").Val(); got != "v2" {
		t.Errorf("after restart GET k02 = %q", got)
	}
	if st := n.tiers.Status(time.Now()); st.Tiers[0].Keys != fastKeys || st.Tiers[0].Reads != 1 {
		t.Errorf("after restart the fast tier holds %d keys and served %d reads, want %d and 1", st.Tiers[0].Keys, st.Tiers[0].Reads, fastKeys)
	}
}

// An lsm data directory can become the slow tier where it is.
func TestPlainLSMDataDirBecomesTheSlowTier(t *testing.T) {
	cfg := testConfig(t, "lsm")
	n, err := Start(cfg, quiet())
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(&redis.Options{Addr: n.Addr()})
	if err := c.Set(context.Background(), "old", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if err := n.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	cfg.FastDir, cfg.FastBudgetBytes = filepath.Join(t.TempDir(), "ssd"), 1<<20
	n, err = Start(cfg, quiet())
	if err != nil {
		t.Fatal(err)
	}
	defer n.Shutdown(context.Background())
	c = redis.NewClient(&redis.Options{Addr: n.Addr()})
	defer c.Close()
	if got := c.Get(context.Background(), "old").Val(); got != "1" {
		t.Errorf("GET old = %q after tiering the data directory", got)
	}
	if code, _ := get(t, "http://"+n.AdminAddr()+"/tiers"); code != 200 {
		t.Errorf("/tiers = %d", code)
	}
}

// An lsm data directory can gain a second directory under the free-space rule (a second
// device added to the node), and cannot lose it again once it has one.
func TestPlainLSMDataDirGainsAFreeSpaceSecondDir(t *testing.T) {
	cfg := testConfig(t, "lsm")
	n, err := Start(cfg, quiet())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: n.Addr()})
	if err := c.Set(ctx, "old", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if err := n.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	cfg.LSMSecondDir, cfg.LSMSecondDirPolicy = filepath.Join(t.TempDir(), "ssd"), "free-space"
	n, err = Start(cfg, quiet())
	if err != nil {
		t.Fatal(err)
	}
	c = redis.NewClient(&redis.Options{Addr: n.Addr()})
	if got := c.Get(ctx, "old").Val(); got != "1" {
		t.Errorf("GET old = %q after adding the second directory", got)
	}
	if err := c.Set(ctx, "new", "2", 0).Err(); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if err := n.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	plain := cfg
	plain.LSMSecondDir, plain.LSMSecondDirPolicy = "", ""
	if n, err := Start(plain, quiet()); !errors.Is(err, ErrEngineMismatch) {
		if err == nil {
			n.Shutdown(ctx)
		}
		t.Fatalf("restart without the second directory: %v, want ErrEngineMismatch", err)
	}
	n, err = Start(cfg, quiet())
	if err != nil {
		t.Fatal(err)
	}
	defer n.Shutdown(ctx)
	c = redis.NewClient(&redis.Options{Addr: n.Addr()})
	defer c.Close()
	for k, want := range map[string]string{"old": "1", "new": "2"} {
		if got := c.Get(ctx, k).Val(); got != want {
			t.Errorf("GET %s = %q after restarting with the second directory, want %q", k, got, want)
		}
	}
}

// With --tier-count-writes (the default), writes rank rows, and beside reads a SET, which
// replaces its row whole, promotes it as a read would, from what the write left. (Writes
// that add to a row move nothing: see tiered's TestAWriteReplacingARowPromotesIt; kura's
// HSET reads the row first, and that read promotes it.) Writes alone, as in a bulk load,
// move nothing. The node reports that it counts writes.
func TestTieredNodeCountsWritesWhenAsked(t *testing.T) {
	cfg := testConfig(t, "lsm")
	cfg.FastDir = filepath.Join(t.TempDir(), "ssd")
	cfg.FastBudgetBytes = 1 << 20
	cfg.TierCountWrites = true
	cfg.TierWindow = 200 * time.Millisecond
	n, err := Start(cfg, quiet())
	if err != nil {
		t.Fatal(err)
	}
	defer n.Shutdown(context.Background())
	if st := n.tiers.Status(time.Now()); !st.CountWrites {
		t.Errorf("/tiers: count writes %v: want true", st.CountWrites)
	}
	c := redis.NewClient(&redis.Options{Addr: n.Addr()})
	defer c.Close()
	ctx := context.Background()
	write := func() {
		for i := range 5 {
			if err := c.Set(ctx, fmt.Sprintf("w%d", i), "v", 0).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Writes alone, over four windows: nothing moves.
	for start := time.Now(); time.Since(start) < 4*cfg.TierWindow; time.Sleep(10 * time.Millisecond) {
		write()
	}
	time.Sleep(100 * time.Millisecond) // a promotion under way would show by now
	if st := n.tiers.Status(time.Now()); st.Tiers[0].Keys != 0 {
		t.Fatalf("writes alone moved rows to the fast tier: %+v", st.Tiers)
	}
	// Beside reads of another key: the rows move, from what the writes left.
	deadline := time.Now().Add(20 * time.Second)
	for st := n.tiers.Status(time.Now()); st.Tiers[0].Keys != 5 || st.InBoth != 0; st = n.tiers.Status(time.Now()) {
		if time.Now().After(deadline) {
			t.Fatalf("rows SET beside reads did not all reach the fast tier: %+v", st.Tiers)
		}
		write()
		if err := c.Get(ctx, "never written").Err(); err != redis.Nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if st := n.tiers.Status(time.Now()); st.PromotedOnWrite != 5 || st.PromotedOnRead != 5 {
		t.Errorf("promoted %d rows, %d of them on write: want the 5 rows SET, from their writes", st.PromotedOnRead, st.PromotedOnWrite)
	}
	if got := c.Get(ctx, "w2").Val(); got != "v" {
		t.Errorf("GET w2 = %q on the fast tier, want v", got)
	}
}

// /debug/store (`kura admin store`) prints each tier's pebble report, fast first, under a
// heading naming its directory; an engine without a report answers 404 saying so.
func TestStoreReportShowsEachTierOrSaysThereIsNone(t *testing.T) {
	n, cfg := startTiered(t)
	code, body := get(t, "http://"+n.AdminAddr()+"/debug/store")
	if code != 200 {
		t.Fatalf("/debug/store = %d %s", code, body)
	}
	fast, slow := strings.Index(body, "fast tier ("+cfg.FastDir), strings.Index(body, "slow tier (")
	if fast < 0 || slow < fast {
		t.Fatalf("want the fast tier's heading, then the slow tier's:\n%s", body)
	}
	for _, part := range []string{body[fast:slow], body[slow:]} {
		if !strings.Contains(part, "Flushes:") || !strings.Contains(part, "Compactions:") {
			t.Errorf("a tier's part is not a pebble report:\n%s", part)
		}
	}

	m, err := Start(testConfig(t, "memory"), quiet())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Shutdown(context.Background())
	if code, body := get(t, "http://"+m.AdminAddr()+"/debug/store"); code != 404 || !strings.Contains(body, "memory engine has no store report") {
		t.Errorf("/debug/store of a memory node = %d %q, want 404 saying it has none", code, body)
	}
}

// POST /tiers?budget_bytes=N changes the fast tier's budget on the running node, as
// /tiers and /metrics then say; a bad value is refused and changes nothing.
func TestTiersBudgetChangesOverTheAdminAddress(t *testing.T) {
	n, _ := startTiered(t)
	post := func(q string) (int, string) {
		t.Helper()
		resp, err := http.Post("http://"+n.AdminAddr()+"/tiers?"+q, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	code, body := post("budget_bytes=4096")
	var st admin.TiersStatus
	if code != http.StatusOK || json.Unmarshal([]byte(body), &st) != nil || st.BudgetBytes != 4096 {
		t.Fatalf("POST budget_bytes=4096: %d %s", code, body)
	}
	for _, bad := range []string{"budget_bytes=-5", "budget_bytes=lots", ""} {
		if code, body := post(bad); code != http.StatusBadRequest {
			t.Errorf("POST %q: %d %s, want 400", bad, code, body)
		}
	}
	_, body = get(t, "http://"+n.AdminAddr()+"/tiers")
	if st = (admin.TiersStatus{}); json.Unmarshal([]byte(body), &st) != nil || st.BudgetBytes != 4096 {
		t.Errorf("GET /tiers after the refused changes: %s", body)
	}
	if _, metrics := get(t, "http://"+n.AdminAddr()+"/metrics"); !strings.Contains(metrics, "kura_tier_fast_budget_bytes 4096") {
		t.Error("/metrics does not show the new budget")
	}
}

// startTiered starts a tiered node with a 1 MiB budget, shut down when the test ends.
func startTiered(t *testing.T) (*Node, config.Config) {
	t.Helper()
	cfg := testConfig(t, "lsm")
	cfg.FastDir = filepath.Join(t.TempDir(), "ssd")
	cfg.FastBudgetBytes = 1 << 20
	n, err := Start(cfg, quiet())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Shutdown(context.Background()) })
	return n, cfg
}
