package admin

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/kuradb/kura/internal/engine"
)

// engineCollector exports an engine's Stats at scrape time, so the hot path pays nothing.
type engineCollector struct {
	eng                          engine.Engine
	diskBytes, memBytes, rowsEst *prometheus.Desc
	cacheHits, cacheMisses       *prometheus.Desc
	blockHits, blockMisses       *prometheus.Desc
	compactionRead               *prometheus.Desc
	compactionDebt, readAmp      *prometheus.Desc
	writeStall, flushes          *prometheus.Desc
	diskAvail, diskReserve       *prometheus.Desc
	noSpace                      *prometheus.Desc
}

func newEngineCollector(eng engine.Engine) *engineCollector {
	labels := prometheus.Labels{"engine": eng.Name(), "role": eng.Role().String()}
	return &engineCollector{
		eng:       eng,
		diskBytes: prometheus.NewDesc("kura_engine_disk_bytes", "Space the engine's files take on disk.", nil, labels),
		memBytes:  prometheus.NewDesc("kura_engine_memory_bytes", "Memory the engine holds for data.", nil, labels),
		rowsEst:   prometheus.NewDesc("kura_engine_rows_estimate", "Estimated number of stored rows (tombstoned rows included).", nil, labels),
		cacheHits: prometheus.NewDesc("kura_engine_row_cache_hits_total", "Reads the engine's row cache answered (lsm, btree).", nil, labels),
		cacheMisses: prometheus.NewDesc("kura_engine_row_cache_misses_total",
			"Reads the engine's row cache did not answer, so the store did (lsm, btree).", nil, labels),
		blockHits: prometheus.NewDesc("kura_engine_block_cache_hits_total", "Lookups the store's block cache answered (lsm).", nil, labels),
		blockMisses: prometheus.NewDesc("kura_engine_block_cache_misses_total",
			"Lookups the store's block cache did not answer: file reads, from the page cache or the device (lsm).", nil, labels),
		compactionRead: prometheus.NewDesc("kura_engine_compaction_read_bytes_total", "Bytes the store's compactions read (lsm).", nil, labels),
		compactionDebt: prometheus.NewDesc("kura_engine_compaction_debt_bytes",
			"Bytes the store's compactions must still rewrite to bring every level within its target size, as the store estimates it (lsm).", nil, labels),
		readAmp: prometheus.NewDesc("kura_engine_read_amplification",
			"Files or levels a point read may have to look into: L0's sublevels plus the other non-empty levels (lsm; a tiered node's worse tier).", nil, labels),
		writeStall: prometheus.NewDesc("kura_engine_write_stall_seconds_total",
			"Time writes waited for the engine's flushes to free memory (btree with --btree-write-buffer-bytes).", nil, labels),
		flushes: prometheus.NewDesc("kura_engine_write_buffer_flushes_total",
			"Flushes of the write buffer into the store (btree with --btree-write-buffer-bytes).", nil, labels),
		diskAvail: prometheus.NewDesc("kura_engine_disk_available_bytes",
			"Free space of the device the engine writes to (the fullest of them), as the engine estimates it; 0 when it does not watch its disk.", nil, labels),
		diskReserve: prometheus.NewDesc("kura_engine_disk_reserve_bytes",
			"Free space the engine keeps on that device (--disk-reserve-bytes): writes that would leave less are refused.", nil, labels),
		noSpace: prometheus.NewDesc("kura_engine_writes_refused_no_space_total",
			"Writes the engine refused because its disk was nearly full.", nil, labels),
	}
}

func (c *engineCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.diskBytes
	ch <- c.memBytes
	ch <- c.rowsEst
	ch <- c.cacheHits
	ch <- c.cacheMisses
	ch <- c.blockHits
	ch <- c.blockMisses
	ch <- c.compactionRead
	ch <- c.compactionDebt
	ch <- c.readAmp
	ch <- c.writeStall
	ch <- c.flushes
	ch <- c.diskAvail
	ch <- c.diskReserve
	ch <- c.noSpace
}

func (c *engineCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.eng.Stats()
	ch <- prometheus.MustNewConstMetric(c.diskBytes, prometheus.GaugeValue, float64(s.DiskBytes))
	ch <- prometheus.MustNewConstMetric(c.memBytes, prometheus.GaugeValue, float64(s.MemoryBytes))
	ch <- prometheus.MustNewConstMetric(c.rowsEst, prometheus.GaugeValue, float64(s.RowsEstimate))
	ch <- prometheus.MustNewConstMetric(c.cacheHits, prometheus.CounterValue, float64(s.RowCacheHits))
	ch <- prometheus.MustNewConstMetric(c.cacheMisses, prometheus.CounterValue, float64(s.RowCacheMisses))
	ch <- prometheus.MustNewConstMetric(c.blockHits, prometheus.CounterValue, float64(s.BlockCacheHits))
	ch <- prometheus.MustNewConstMetric(c.blockMisses, prometheus.CounterValue, float64(s.BlockCacheMisses))
	ch <- prometheus.MustNewConstMetric(c.compactionRead, prometheus.CounterValue, float64(s.CompactionReadBytes))
	ch <- prometheus.MustNewConstMetric(c.compactionDebt, prometheus.GaugeValue, float64(s.CompactionDebtBytes))
	ch <- prometheus.MustNewConstMetric(c.readAmp, prometheus.GaugeValue, float64(s.ReadAmp))
	ch <- prometheus.MustNewConstMetric(c.writeStall, prometheus.CounterValue, float64(s.WriteStallNanos)/1e9)
	ch <- prometheus.MustNewConstMetric(c.flushes, prometheus.CounterValue, float64(s.Flushes))
	ch <- prometheus.MustNewConstMetric(c.diskAvail, prometheus.GaugeValue, float64(s.DiskAvailBytes))
	ch <- prometheus.MustNewConstMetric(c.diskReserve, prometheus.GaugeValue, float64(s.DiskReserveBytes))
	ch <- prometheus.MustNewConstMetric(c.noSpace, prometheus.CounterValue, float64(s.NoSpaceRefusals))
}

// NewRegistry returns a registry with the Go runtime and process collectors, the ones every
// Prometheus user expects, plus the engine's stats.
func NewRegistry(eng engine.Engine) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		newEngineCollector(eng),
	)
	return reg
}
