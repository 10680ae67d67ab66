package admin

import (
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kuradb/kura/internal/engine/tiered"
)

// TiersStatus is what /tiers reports about a tiered engine (`kura admin tiers`).
type TiersStatus struct {
	Node        string `json:"node"`
	Host        string `json:"host"`
	FastDir     string `json:"fast_dir"`
	SlowDir     string `json:"slow_dir"`
	BudgetBytes int64  `json:"budget_bytes"`
	// DeviceCapBytes is, when not 0, the lower budget in force because the fast device was
	// found to hold less (tiered.Migrator.DeviceCap).
	DeviceCapBytes int64         `json:"device_cap_bytes,omitempty"`
	Window         time.Duration `json:"window"`
	MinReads       int           `json:"min_reads"`
	// CountWrites reports whether writes count as accesses, like reads.
	CountWrites bool `json:"count_writes"`
	// Tiers are each tier's figures, fast first.
	Tiers []TierStatus `json:"tiers"`
	// FastRowBytes is the row data on the fast tier, as measured when the rows moved.
	FastRowBytes int64 `json:"fast_row_bytes"`
	// InBoth counts the keys being moved.
	InBoth int `json:"in_both"`
	// SpilledKeys counts the keys moved to the slow tier because the fast tier's device
	// refused a write to them for lack of space (--disk-reserve-bytes).
	SpilledKeys int64 `json:"spilled_keys"`
	// SinceStart and LastMinute are the share of reads from the fast tier and the
	// migration traffic.
	SinceStart tiered.Rates `json:"since_start"`
	LastMinute tiered.Rates `json:"last_minute"`
	// PromotedOnRead counts the rows promoted as a read or write captured them, since the
	// node started; PromotedOnWrite those of them a write captured.
	PromotedOnRead  int64 `json:"promoted_on_read"`
	PromotedOnWrite int64 `json:"promoted_on_write"`
	// LastDecision is the migrator's latest.
	LastDecision tiered.Decision `json:"last_decision"`
}

// TierStatus is one tier's line.
type TierStatus struct {
	Tier         string `json:"tier"`
	Keys         int64  `json:"keys"`
	DiskBytes    int64  `json:"disk_bytes"`
	Reads        int64  `json:"reads"`
	MovedIn      int64  `json:"moved_in"`
	MovedInBytes int64  `json:"moved_in_bytes"`
	// BlockCacheHits and BlockCacheMisses are the tier store's block cache lookups, and
	// CompactionReadBytes what its compactions read: where the tier's device reads go.
	BlockCacheHits      int64 `json:"block_cache_hits"`
	BlockCacheMisses    int64 `json:"block_cache_misses"`
	CompactionReadBytes int64 `json:"compaction_read_bytes"`
	// CompactionDebtBytes and ReadAmp are the tier store's compaction debt and read
	// amplification (engine.Stats).
	CompactionDebtBytes int64 `json:"compaction_debt_bytes"`
	ReadAmp             int64 `json:"read_amp"`
	// DiskAvailBytes is the tier device's free space and DiskReserveBytes what the tier
	// keeps free there; NoSpaceRefusals counts the writes it refused for lack of it.
	DiskAvailBytes   int64 `json:"disk_available_bytes"`
	DiskReserveBytes int64 `json:"disk_reserve_bytes"`
	NoSpaceRefusals  int64 `json:"no_space_refusals"`
}

// Tiers is a tiered node's engine and migrator, with the configuration its status
// reports.
type Tiers struct {
	DB       *tiered.DB
	Migrator *tiered.Migrator
	Node     string // the node's ID
	Host     string
	FastDir  string
	SlowDir  string // the slow tier's directory (the engine's own directory by default)
	Window   time.Duration
	MinReads int
	// CountWrites reports whether writes count as accesses, like reads.
	CountWrites bool
	Started     time.Time // when the node started, for SinceStart
	Logger      *slog.Logger
}

// Status gathers the tiers' status at now.
func (t *Tiers) Status(now time.Time) *TiersStatus {
	db, m := t.DB, t.Migrator
	st := &TiersStatus{Node: t.Node, Host: t.Host, FastDir: t.FastDir, SlowDir: t.SlowDir,
		BudgetBytes: m.Budget(), Window: t.Window, MinReads: t.MinReads,
		CountWrites:  t.CountWrites,
		FastRowBytes: db.FastRowBytes(), InBoth: db.InBoth(), SpilledKeys: db.Spilled(),
		SinceStart: m.SinceOpen(t.Started, now), LastMinute: m.Recent(time.Minute, now),
		LastDecision: m.Last(), PromotedOnRead: m.PromotedOnRead(),
		PromotedOnWrite: m.PromotedOnWrite()}
	if c, capped := m.DeviceCap(); capped {
		st.DeviceCapBytes = c
	}
	ts := db.TierStats()
	for _, tier := range []tiered.Tier{tiered.Fast, tiered.Slow} {
		s := ts[tier]
		st.Tiers = append(st.Tiers, TierStatus{Tier: tier.String(), Keys: s.Keys, DiskBytes: s.DiskBytes, Reads: s.Reads,
			MovedIn: s.MovedIn, MovedInBytes: s.MovedInBytes, BlockCacheHits: s.BlockCacheHits,
			BlockCacheMisses: s.BlockCacheMisses, CompactionReadBytes: s.CompactionReadBytes,
			CompactionDebtBytes: s.CompactionDebtBytes, ReadAmp: s.ReadAmp,
			DiskAvailBytes: s.DiskAvailBytes, DiskReserveBytes: s.DiskReserveBytes, NoSpaceRefusals: s.NoSpaceRefusals})
	}
	return st
}

// serveTiers answers /tiers on the admin address: GET for TiersStatus, POST with
// budget_bytes=N to change the fast tier's budget until the node restarts (`kura admin
// tiers --set-budget`), answered with the status after the change.
func (cfg *Config) serveTiers(w http.ResponseWriter, r *http.Request) {
	t := cfg.Tiers
	if t == nil {
		http.Error(w, "this node's engine is not tiered (start with --fast-dir)\n", http.StatusNotFound)
		return
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
	case http.MethodPost:
		v := r.FormValue("budget_bytes")
		b, err := strconv.ParseInt(v, 10, 64)
		if err == nil {
			err = t.Migrator.SetBudget(b)
		}
		if err != nil {
			http.Error(w, fmt.Sprintf("budget_bytes=%q: want a byte count, 0 or more (%v)\n", v, err), http.StatusBadRequest)
			return
		}
		t.Logger.Info("fast tier budget changed", "budget_bytes", b)
	default:
		http.Error(w, "GET the tiers, or POST budget_bytes=N to change the fast tier's budget\n", http.StatusMethodNotAllowed)
		return
	}
	writeJSON(w, t.Status(time.Now()))
}

// tierCollector exports a tiered engine's figures at scrape time.
type tierCollector struct {
	db       *tiered.DB
	m        *tiered.Migrator
	keys     *prometheus.Desc
	disk     *prometheus.Desc
	reads    *prometheus.Desc
	moved    *prometheus.Desc
	movedB   *prometheus.Desc
	rowBytes *prometheus.Desc
	budgetD  *prometheus.Desc
	capD     *prometheus.Desc
	thresh   *prometheus.Desc
	inBoth   *prometheus.Desc
}

// NewTierCollector returns the collector of t's figures.
func NewTierCollector(t *Tiers) prometheus.Collector {
	db, m := t.DB, t.Migrator
	tier := []string{"tier"}
	return &tierCollector{db: db, m: m,
		keys:     prometheus.NewDesc("kura_tier_keys", "Keys at home on each tier (exact for fast, an estimate for slow).", tier, nil),
		disk:     prometheus.NewDesc("kura_tier_disk_bytes", "Space each tier's store takes on disk.", tier, nil),
		reads:    prometheus.NewDesc("kura_tier_reads_total", "Reads each tier served; the fast tier's share is rate(fast)/rate(all).", tier, nil),
		moved:    prometheus.NewDesc("kura_tier_moved_rows_total", "Rows moved to each tier.", tier, nil),
		movedB:   prometheus.NewDesc("kura_tier_moved_bytes_total", "Bytes of rows moved to each tier.", tier, nil),
		rowBytes: prometheus.NewDesc("kura_tier_fast_row_bytes", "Row data on the fast tier, as measured when the rows moved.", nil, nil),
		budgetD:  prometheus.NewDesc("kura_tier_fast_budget_bytes", "The fast tier's budget (--fast-budget-bytes, or as kura admin tiers --set-budget changed it).", nil, nil),
		capD:     prometheus.NewDesc("kura_tier_fast_budget_in_force_bytes", "The fast tier's budget in force: the budget, or less while the fast device has been found to hold less.", nil, nil),
		thresh: prometheus.NewDesc("kura_tier_threshold_reads",
			"Fewest reads in the last window of a row kept on the fast tier at the latest decision: K while the budget has room.", nil, nil),
		inBoth: prometheus.NewDesc("kura_tier_keys_moving", "Keys stored in both tiers right now: moves under way.", nil, nil),
	}
}

func (c *tierCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.keys, c.disk, c.reads, c.moved, c.movedB, c.rowBytes, c.budgetD, c.capD, c.thresh, c.inBoth} {
		ch <- d
	}
}

func (c *tierCollector) Collect(ch chan<- prometheus.Metric) {
	ts := c.db.TierStats()
	for _, t := range []tiered.Tier{tiered.Fast, tiered.Slow} {
		s, l := ts[t], t.String()
		ch <- prometheus.MustNewConstMetric(c.keys, prometheus.GaugeValue, float64(s.Keys), l)
		ch <- prometheus.MustNewConstMetric(c.disk, prometheus.GaugeValue, float64(s.DiskBytes), l)
		ch <- prometheus.MustNewConstMetric(c.reads, prometheus.CounterValue, float64(s.Reads), l)
		ch <- prometheus.MustNewConstMetric(c.moved, prometheus.CounterValue, float64(s.MovedIn), l)
		ch <- prometheus.MustNewConstMetric(c.movedB, prometheus.CounterValue, float64(s.MovedInBytes), l)
	}
	ch <- prometheus.MustNewConstMetric(c.rowBytes, prometheus.GaugeValue, float64(c.db.FastRowBytes()))
	ch <- prometheus.MustNewConstMetric(c.budgetD, prometheus.GaugeValue, float64(c.m.Budget()))
	ch <- prometheus.MustNewConstMetric(c.capD, prometheus.GaugeValue, float64(c.m.BudgetInForce()))
	ch <- prometheus.MustNewConstMetric(c.thresh, prometheus.GaugeValue, float64(c.m.Last().Threshold))
	ch <- prometheus.MustNewConstMetric(c.inBoth, prometheus.GaugeValue, float64(c.db.InBoth()))
}
