// Package config holds a kura node's settings: their defaults, their command-line flags,
// the YAML file that may set them, and their validation. One table (BindFlags) names every
// option once; the YAML key of an option is its flag name with dashes turned into
// underscores, and docs/configuration.md is generated from the same table, so the three
// cannot drift apart.
//
// Precedence: built-in defaults, then the YAML file (--config), then flags given on the
// command line.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/kuradb/kura/internal/engine"
	"gopkg.in/yaml.v3"
)

// ErrInvalid is wrapped by every validation and parse error.
var ErrInvalid = errors.New("config: invalid")

// Config is everything a single node needs. Field comments give the effect; defaults live
// in Default and are shown by `kura server --help` and docs/configuration.md.
type Config struct {
	Engine           string        `yaml:"engine"`
	DataDir          string        `yaml:"data_dir"`
	Listen           string        `yaml:"listen"`
	AdminListen      string        `yaml:"admin_listen"`
	Password         string        `yaml:"password"`
	ACLFile          string        `yaml:"acl_file"`
	Durability       string        `yaml:"durability"`
	SyncInterval     time.Duration `yaml:"sync_interval"`
	TombstoneGrace   time.Duration `yaml:"tombstone_grace"`
	ShutdownTimeout  time.Duration `yaml:"shutdown_timeout"`
	DiskReserveBytes int64         `yaml:"disk_reserve_bytes"`

	LSMCacheSizeBytes     int64  `yaml:"lsm_cache_size_bytes"`
	LSMRowCacheBytes      int64  `yaml:"lsm_row_cache_bytes"`
	LSMMemTableSizeBytes  int64  `yaml:"lsm_memtable_size_bytes"`
	LSMBlockSizeBytes     int64  `yaml:"lsm_block_size_bytes"`
	LSMWALDir             string `yaml:"lsm_wal_dir"`
	LSMWALFailoverDir     string `yaml:"lsm_wal_failover_dir"`
	LSMSecondDir          string `yaml:"lsm_second_dir"`
	LSMSecondDirPolicy    string `yaml:"lsm_second_dir_policy"`
	BTreeDir              string `yaml:"btree_dir"`
	BTreeRowCacheBytes    int64  `yaml:"btree_row_cache_bytes"`
	BTreeWriteBufferBytes int64  `yaml:"btree_write_buffer_bytes"`

	FastDir                string        `yaml:"fast_dir"`
	SlowDir                string        `yaml:"slow_dir"`
	FastBudgetBytes        int64         `yaml:"fast_budget_bytes"`
	TierWindow             time.Duration `yaml:"tier_window"`
	TierMinReads           int           `yaml:"tier_min_reads"`
	TierCountWrites        bool          `yaml:"tier_count_writes"`
	TierMoveBytesPerSecond int64         `yaml:"tier_move_bytes_per_second"`
	TierFastCacheShare     float64       `yaml:"tier_fast_cache_share"`
	TierFastPageCache      bool          `yaml:"tier_fast_page_cache"`

	MemorySnapshot         bool          `yaml:"memory_snapshot"`
	MemorySnapshotInterval time.Duration `yaml:"memory_snapshot_interval"`

	MaxKeyBytes     int           `yaml:"max_key_bytes"`
	MaxValueBytes   int           `yaml:"max_value_bytes"`
	MaxRequestBytes int           `yaml:"max_request_bytes"`
	MaxArgs         int           `yaml:"max_args"`
	MaxConnections  int           `yaml:"max_connections"`
	IdleTimeout     time.Duration `yaml:"idle_timeout"`
	KeysLimit       int           `yaml:"keys_limit"`

	// TLS (docs/design/security.md), in Redis's names. TLSPort, when not 0, serves RESP
	// over TLS on that port of Listen's host, beside Listen's plain port. The
	// certificate, key and CA bundle serve clients and, with TLSInternode, the internode
	// port in both directions; they are re-read when they change. TLSAuthClients is
	// yes (a client certificate chaining to the CA bundle is required; the default),
	// optional or no.
	TLSPort        int    `yaml:"tls_port"`
	TLSCertFile    string `yaml:"tls_cert_file"`
	TLSKeyFile     string `yaml:"tls_key_file"`
	TLSCACertFile  string `yaml:"tls_ca_cert_file"`
	TLSAuthClients string `yaml:"tls_auth_clients"`
	TLSInternode   bool   `yaml:"tls_internode"`
	// PlaintextClients, when false, opens no plain RESP listener: clients connect only
	// through TLSPort (Redis's port 0). Listen then names only the host TLSPort binds on.
	PlaintextClients bool `yaml:"plaintext_clients"`
	// AdminTLS serves the admin endpoints over HTTPS with the node's certificate.
	AdminTLS bool `yaml:"admin_tls"`
	// Insecure lets a node listen on a non-loopback address with a listener unprotected
	// (see Unprotected); without it such a node refuses to start.
	Insecure bool `yaml:"insecure"`

	SlowlogThreshold time.Duration `yaml:"slowlog_threshold"`
	SlowlogMaxLen    int           `yaml:"slowlog_max_len"`

	MemoryLimitBytes int64 `yaml:"memory_limit_bytes"`
	GCPercent        int   `yaml:"gc_percent"`

	LogLevel  string `yaml:"log_level"`
	LogFormat string `yaml:"log_format"`

	Host string `yaml:"host"`
	Rack string `yaml:"rack"`

	GossipListen string `yaml:"gossip_listen"`
	// GossipKeyringFile holds the keys that encrypt and authenticate gossip
	// (membership.ParseKeyring); re-read while the node runs, to roll a key.
	GossipKeyringFile string        `yaml:"gossip_keyring_file"`
	InternodeListen   string        `yaml:"internode_listen"`
	Seeds             string        `yaml:"seeds"`
	ReplicationFactor int           `yaml:"replication_factor"`
	Placement         string        `yaml:"placement"`
	Routing           string        `yaml:"routing"`
	NumTokens         int           `yaml:"num_tokens"`
	TokenAllocation   string        `yaml:"token_allocation"`
	Consistency       string        `yaml:"consistency"`
	ReadRepair        string        `yaml:"read_repair"`
	RequestTimeout    time.Duration `yaml:"request_timeout"`
	WriteFallback     time.Duration `yaml:"write_fallback_after"`
	ReadFallback      time.Duration `yaml:"read_fallback_after"`
	// ReadFallbackPercentile, when above 0, makes a read ask spares once it has waited
	// longer than this percentile of the coordinator's recent reads, ReadFallback at most.
	ReadFallbackPercentile float64       `yaml:"read_fallback_percentile"`
	SlowWriteLog           time.Duration `yaml:"slow_write_log"`
	AsyncWriteTarget       time.Duration `yaml:"async_write_target"`
	HintWindow             time.Duration `yaml:"hint_window"`
	HintMaxBytes           int64         `yaml:"hint_max_bytes"`
	HintsDir               string        `yaml:"hints_dir"`
	// MaxClockOffset is the most a node's physical clock may be off from most of its
	// peers' before it refuses the writes it would timestamp (docs/design/clocks.md); 0 sets
	// no limit. Default 500 ms, CockroachDB's --max-offset.
	MaxClockOffset time.Duration `yaml:"max_clock_offset"`

	// Membership changes (docs/design/membership.md).

	// RingSource is where the ring comes from: "log", the metadata log (ring versions
	// every node agrees on, joins that stream before they serve), or "gossip", each
	// node's tokens as it gossips them (kura before ring versions: a joiner serves its
	// ranges empty).
	RingSource string `yaml:"ring_source"`
	// Join is how a new node joins: "auto", planned with the nodes registered within
	// JoinBatchWindow of it, or "staged", waiting for an operator's kura admin commit.
	Join            string        `yaml:"join"`
	JoinBatchWindow time.Duration `yaml:"join_batch_window"`
	// AutoRemoveAfter is how long a normal member may be down before the metadata log's
	// leader removes it and re-replicates its ranges (kura admin removenode); 0 never does.
	// The default, 10 minutes, is Ceph's (HDFS: 10.5, CockroachDB: 5): longer than a
	// reboot or a rolling restart, whose writes the node catches up from hints (kept 3
	// hours), and short enough that a second failure in the same ranges is unlikely
	// meanwhile. A rack whose every node is down is not removed (a switch or power
	// failure that comes back, as Ceph's down-out subtree limit).
	AutoRemoveAfter time.Duration `yaml:"auto_remove_after"`
	// Replace is the ID of a dead node whose tokens this new node takes.
	Replace string `yaml:"replace"`
	// StreamLimit bounds what a node streams for membership changes, in bytes per
	// second, sent and received each; 0 sets no limit.
	StreamLimit int64 `yaml:"stream_limit"`
	// StreamCPUTarget, when set, is the Go scheduler latency (p99 of each 100 ms) above
	// which the node slows its streams, sent and received, below StreamLimit (down to a
	// quarter of it), and under which it lets them back up (package elastic). 0, the
	// default, streams at StreamLimit whatever the CPU: measured on the re-replication
	// experiment, a 1 ms target made the recovery 2.5 times as long without bringing the
	// foreground's p99 down, which the receivers' compactions, not the streams, drove
	// (docs/design/rereplication.md, section 7).
	StreamCPUTarget time.Duration `yaml:"stream_cpu_target"`
	// BackgroundPriority is the CPU priority of a node's background work: its lsm
	// engine's compactions and flushes, and the stream pages it reads and encodes for its
	// peers. "low" runs it on threads at nice 19 (package lowprio), so that on a busy
	// machine the foreground's requests take the CPU first, and adds the threads it may
	// hold back to GOMAXPROCS; "normal" runs it at the process's own priority. Received
	// pages are applied at normal priority either way (docs/design/rereplication.md,
	// section 7).
	BackgroundPriority string `yaml:"background_priority"`
	// RepairPeriod is how often the background scheduler repairs each range the node is
	// the first replica of, with all its other replicas (every node doing the same, every
	// range of the cluster is repaired once a period); 0 turns it off. The default, 5
	// days, is half the grace period, so that under --tombstone-purge repaired a
	// tombstone can go within one and a half grace periods of its delete.
	RepairPeriod time.Duration `yaml:"repair_period"`
	// RepairRowsPerSecond bounds the rows a node's repairs scan, as initiator and as
	// responder together (background and operator repairs alike); 0 sets no bound. The
	// default, 2,000, kept a 3-node cluster's foreground p99 within 1.07-1.20 times its
	// p99 without repairs at half its saturation on the 2-core VM, and repairs a million
	// rows in well under an hour (docs/benchmarks.md).
	RepairRowsPerSecond int64 `yaml:"repair_rows_per_second"`
	// TombstonePurge says when a replica may purge a tombstone (or an expired cell) older
	// than TombstoneGrace: "repaired", the default, only once every replica of its range
	// has been repaired past it (`kura admin repair`; internal/node/purge.go), so that a
	// replica that missed the delete cannot bring the deleted value back; "grace" at the
	// grace period alone, Cassandra's gc_grace rule, which relies on every range being
	// repaired within the grace period.
	TombstonePurge string `yaml:"tombstone_purge"`
	// CleanupDelay is how long after a membership change finished a node deletes the
	// rows of the ranges it gave up; 0 leaves it to kura admin cleanup.
	CleanupDelay time.Duration `yaml:"cleanup_delay"`
}

// Clustered reports whether the node joins a cluster (gossip_listen is set) rather than
// serving alone.
func (c *Config) Clustered() bool { return c.GossipListen != "" }

// SeedList returns the seeds as a list.
func (c *Config) SeedList() []string {
	var out []string
	for _, s := range strings.Split(c.Seeds, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// Default returns the built-in defaults: a working single node on loopback.
func Default() Config {
	return Config{
		Engine:                 "lsm",
		DataDir:                "kura-data",
		Listen:                 "127.0.0.1:6380",
		AdminListen:            "127.0.0.1:9380",
		Durability:             "sync",
		SyncInterval:           time.Second,
		TombstoneGrace:         engine.DefaultGracePeriod,
		ShutdownTimeout:        30 * time.Second,
		DiskReserveBytes:       256 << 20,
		LSMCacheSizeBytes:      256 << 20,
		LSMRowCacheBytes:       256 << 20,
		BTreeRowCacheBytes:     64 << 20,
		LSMMemTableSizeBytes:   32 << 20,
		TierWindow:             10 * time.Second,
		TierMinReads:           1,
		TierMoveBytesPerSecond: 32 << 20,
		TierFastCacheShare:     0.25,
		TierFastPageCache:      true,
		TierCountWrites:        true,
		MaxKeyBytes:            64 << 10,
		MaxValueBytes:          16 << 20,
		MaxRequestBytes:        64 << 20,
		MaxArgs:                1 << 20,
		MaxConnections:         10000,
		SlowlogThreshold:       10 * time.Millisecond,
		SlowlogMaxLen:          128,
		KeysLimit:              10000,
		TLSAuthClients:         "yes",
		PlaintextClients:       true,
		LogLevel:               "info",
		LogFormat:              "text",
		Rack:                   "rack1",
		InternodeListen:        "127.0.0.1:7380",
		ReplicationFactor:      3,
		Placement:              "host-aware",
		Routing:                "uniform",
		NumTokens:              16,
		TokenAllocation:        "balanced",
		Consistency:            "QUORUM",
		ReadRepair:             "background",
		RequestTimeout:         2 * time.Second,
		WriteFallback:          50 * time.Millisecond,
		ReadFallback:           20 * time.Millisecond,
		SlowWriteLog:           500 * time.Millisecond,
		AsyncWriteTarget:       time.Second,
		HintWindow:             3 * time.Hour,
		HintMaxBytes:           1 << 30,
		MaxClockOffset:         500 * time.Millisecond,
		RingSource:             "log",
		Join:                   "auto",
		JoinBatchWindow:        10 * time.Second,
		AutoRemoveAfter:        10 * time.Minute,
		StreamLimit:            64 << 20,
		BackgroundPriority:     "normal",
		CleanupDelay:           10 * time.Minute,
		TombstonePurge:         "repaired",
		RepairPeriod:           120 * time.Hour,
		RepairRowsPerSecond:    2000,
	}
}

// BindFlags registers one flag per option on fs, writing into c. Flag defaults are c's
// current values, so call it on a Default() config.
func (c *Config) BindFlags(fs *pflag.FlagSet) {
	fs.StringVar(&c.Engine, "engine", c.Engine, "storage engine: lsm (write-optimized, pebble), btree (read-optimized, bbolt) or memory (in-memory)")
	fs.StringVar(&c.DataDir, "data-dir", c.DataDir, "directory holding the node's data; created if missing, locked while the node runs")
	fs.StringVar(&c.Listen, "listen", c.Listen, "address of the Redis-protocol (RESP2 and RESP3) listener")
	fs.StringVar(&c.AdminListen, "admin-listen", c.AdminListen, "address of the admin HTTP listener (/metrics, /healthz); empty disables it")
	fs.StringVar(&c.Password, "password", c.Password, "the default user's password, which clients must give with AUTH (Redis's requirepass); empty means no authentication unless --acl-file says otherwise")
	// With both: the file wins for the default user when it has a "user default" line
	// (Redis's way: users come from the ACL file); without one, the default user is
	// Redis's with --password. The node loads the file at start.
	fs.StringVar(&c.ACLFile, "acl-file", c.ACLFile, "file of users and their ACL rules in Redis's format (\"user <name> <rules...>\" lines), loaded at start (the node refuses to start if it does not parse), reread by ACL LOAD, written by ACL SAVE; empty keeps users in memory only. A \"user default\" line in it overrides --password")
	fs.StringVar(&c.Durability, "durability", c.Durability, "sync: a write is acknowledged once fsynced (concurrent writers share one fsync); periodic: fsync every --sync-interval, a machine crash may lose that interval's acknowledged writes")
	fs.DurationVar(&c.SyncInterval, "sync-interval", c.SyncInterval, "fsync period in periodic durability")
	fs.DurationVar(&c.TombstoneGrace, "tombstone-grace", c.TombstoneGrace, "how long deletes and expired cells are kept before a rewrite may drop them")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", c.ShutdownTimeout, "how long a graceful shutdown (SIGTERM, SIGINT) gives connections to write the replies of requests already read before it closes them; requests running in the engine are always waited for")
	fs.Int64Var(&c.DiskReserveBytes, "disk-reserve-bytes", c.DiskReserveBytes, "free space the node keeps on each device its store (lsm, btree) and hint store write to, capped at a tenth of the device: a write that would leave less is refused with a NOSPACE error and not applied, reads go on, and writes resume once space is freed, so that a full disk stops writes rather than the node (pebble ends the process when it cannot write its log); 0 disables")
	fs.Int64Var(&c.LSMCacheSizeBytes, "lsm-cache-size-bytes", c.LSMCacheSizeBytes, "lsm engine: block cache capacity; it fills only as data is read, so it costs nothing at idle. With blind writes a key's versions sit in several files until compaction, and reads slow down sharply once those blocks miss the cache")
	fs.Int64Var(&c.LSMRowCacheBytes, "lsm-row-cache-bytes", c.LSMRowCacheBytes, "lsm engine: capacity of the cache of merged rows in front of pebble, which answers repeated reads of a key without visiting every level its write operands sit in; it fills only as rows are read; 0 disables it")
	fs.Int64Var(&c.LSMMemTableSizeBytes, "lsm-memtable-size-bytes", c.LSMMemTableSizeBytes, "lsm engine: memtable size")
	fs.Int64Var(&c.LSMBlockSizeBytes, "lsm-block-size-bytes", c.LSMBlockSizeBytes, "lsm engine: sstable data and index block size before compression, 1024 to 1048576 (0: pebble's 4 KiB); larger blocks shrink the index a point read needs cached, and cost a read more bytes but no more seeks (measured on an emulated HDD, 32 KiB gained nothing once steady: docs/benchmarks.md at 77be0fa). Applies to tables written from then on")
	fs.StringVar(&c.LSMWALFailoverDir, "lsm-wal-failover-dir", c.LSMWALFailoverDir, "lsm engine: directory on another device where the write-ahead log goes while a write or sync of its own takes over 100 ms, until its device answers quickly again (pebble's WAL failover), one per node; empty: no failover. Once used, keep it set while it may hold logs: the node refuses to start otherwise")
	fs.StringVar(&c.LSMWALDir, "lsm-wal-dir", c.LSMWALDir, "lsm engine: directory of the write-ahead log, e.g. on a disk of its own (as Cassandra's commit log), one per node; empty keeps it in the data directory. Moving it later needs the old directory emptied of logs first: the node refuses to start otherwise")
	fs.StringVar(&c.BTreeDir, "btree-dir", c.BTreeDir, "btree engine: directory of the B+tree file instead of the data directory, e.g. on a disk the node does not share with a write-optimized node of the same host (its random page writes would take that node's flushes' I/O); one per node. The node refuses to start if the data directory holds a B+tree file already")
	fs.Int64Var(&c.BTreeRowCacheBytes, "btree-row-cache-bytes", c.BTreeRowCacheBytes, "btree engine: capacity of the cache of rows read recently, in front of the B+tree file; the OS caches the file a page at a time, a page holding a hot row with its cold neighbours, so with data larger than memory the same memory holds up to three times more hot rows as a row cache (a 4 KiB page per 1 KB row); it fills only as rows are read; 0 disables it")
	fs.Int64Var(&c.BTreeWriteBufferBytes, "btree-write-buffer-bytes", c.BTreeWriteBufferBytes, "btree engine: when positive, writes are journaled and kept in memory, and a background flush merges up to this many bytes of them into the B+tree at a time, in key order, so that a key written many times meanwhile is written to the tree once and keys sharing a leaf share its rewrite (reads merge the buffer with the tree); 0 (the default) commits each group of writes to the tree")
	fs.StringVar(&c.LSMSecondDir, "lsm-second-dir", c.LSMSecondDir, "lsm engine: a second directory (on another device) for some of the sstables, chosen by --lsm-second-dir-policy: the whole-file placements tiered storage (--fast-dir) is compared with")
	fs.StringVar(&c.LSMSecondDirPolicy, "lsm-second-dir-policy", c.LSMSecondDirPolicy, "lsm engine: free-space (each new sstable in the data or the second directory with probability proportional to the free space of its device, Cassandra's rule for several data directories) or lower-levels (sstables of the two lowest levels in the second directory, pebble's placement for a slower store)")
	fs.StringVar(&c.FastDir, "fast-dir", c.FastDir, "lsm engine, tiered storage: directory on the fast device (an SSD) for the rows read most; setting it splits the engine into a fast and a slow store and starts moving rows between them by their reads (needs --fast-budget-bytes)")
	fs.StringVar(&c.SlowDir, "slow-dir", c.SlowDir, "lsm engine, tiered storage: directory on the slow device (an HDD) for every other row; empty keeps it in the data directory")
	fs.Int64Var(&c.FastBudgetBytes, "fast-budget-bytes", c.FastBudgetBytes, "tiered storage: row data the fast directory may hold; leave room for the store's own overhead (about a quarter more)")
	fs.DurationVar(&c.TierWindow, "tier-window", c.TierWindow, "tiered storage: the window W over which reads are counted; placement is decided at the end of each")
	fs.IntVar(&c.TierMinReads, "tier-min-reads", c.TierMinReads, "tiered storage: K, the reads in the last window that make a row hot; hot rows go to the fast directory while its budget allows, hottest first, and rows read fewer times leave it")
	fs.BoolVar(&c.TierCountWrites, "tier-count-writes", c.TierCountWrites, "tiered storage: count writes as accesses too, as the paper does (Cassandra's toppartitions samples both): writes then rank rows beside reads (a row written often stays on the fast directory once a read has moved it there, and under a mixed workload hot rows are ranked twice as fast), and a SET, which replaces its row whole, moves it as a read does, from what it wrote; other writes move nothing (the row moves at its next read); writes count only while reads were at least a tenth of the requests of the previous --tier-window, so that a bulk load (writes alone) does not rank rows written once. Measured on the emulated SSD and HDD, it served 1 to 2 points more of the reads from the fast directory than reads alone (docs/benchmarks.md at 77be0fa); false ranks by reads only")
	fs.Int64Var(&c.TierMoveBytesPerSecond, "tier-move-bytes-per-second", c.TierMoveBytesPerSecond, "tiered storage: most row bytes per second moved between the directories")
	fs.Float64Var(&c.TierFastCacheShare, "tier-fast-cache-share", c.TierFastCacheShare, "tiered storage: the fast tier's share of the block and row caches (the slow tier has the rest): a miss there costs a fast-device read, one in the slow tier a slow-device read")
	fs.BoolVar(&c.TierFastPageCache, "tier-fast-page-cache", c.TierFastPageCache, "tiered storage: leave the fast tier's file pages in the operating system's page cache; false drops them once read or written, so that the memory holds the slow tier's pages instead, whose misses cost slow-device reads where a fast-tier miss costs a fast-device read")
	fs.BoolVar(&c.MemorySnapshot, "memory-snapshot", c.MemorySnapshot, "memory engine: write a snapshot file on shutdown (and every --memory-snapshot-interval) and load it at start; writes between snapshots are not durable")
	fs.DurationVar(&c.MemorySnapshotInterval, "memory-snapshot-interval", c.MemorySnapshotInterval, "memory engine: snapshot period; 0 snapshots only on shutdown")
	fs.IntVar(&c.MaxKeyBytes, "max-key-bytes", c.MaxKeyBytes, "largest key a client may send (at most 65536)")
	fs.IntVar(&c.MaxValueBytes, "max-value-bytes", c.MaxValueBytes, "largest value (string or hash field) a client may send")
	fs.IntVar(&c.MaxRequestBytes, "max-request-bytes", c.MaxRequestBytes, "largest command (all arguments together) a client may send")
	fs.IntVar(&c.MaxArgs, "max-args", c.MaxArgs, "most arguments one command may carry")
	fs.IntVar(&c.MaxConnections, "max-connections", c.MaxConnections, "most client connections served at once; more are refused with an error")
	fs.DurationVar(&c.IdleTimeout, "idle-timeout", c.IdleTimeout, "close a client connection idle this long; 0 never does")
	fs.DurationVar(&c.SlowlogThreshold, "slowlog-threshold", c.SlowlogThreshold, "a command that takes this long or more, from the start of its execution to its reply (store and replicas included), enters the slow log (SLOWLOG GET) and counts as a latency spike (LATENCY LATEST); Redis's slowlog-log-slower-than. 0 logs every command, a negative value none")
	fs.IntVar(&c.SlowlogMaxLen, "slowlog-max-len", c.SlowlogMaxLen, "how many commands the slow log keeps, the newest (at most 65536)")
	fs.IntVar(&c.KeysLimit, "keys-limit", c.KeysLimit, "most keys KEYS replies with: a pattern matching more gets an error telling the client to use SCAN, which pages; KEYS reads the whole keyspace (the whole cluster's) whatever the limit, the limit bounds its reply")
	fs.IntVar(&c.TLSPort, "tls-port", c.TLSPort, "port of a second Redis-protocol listener, on --listen's host, that serves TLS (1.2 and 1.3) with --tls-cert-file; the plain --listen port keeps serving; 0: none")
	fs.StringVar(&c.TLSCertFile, "tls-cert-file", c.TLSCertFile, "PEM certificate the node presents to clients (--tls-port) and, with --tls-internode, to other nodes, as server and as client: a node certificate (kura cert create-node); re-read when it changes, without a restart")
	fs.StringVar(&c.TLSKeyFile, "tls-key-file", c.TLSKeyFile, "PEM private key of --tls-cert-file; re-read with it")
	fs.StringVar(&c.TLSCACertFile, "tls-ca-cert-file", c.TLSCACertFile, "PEM bundle of the CA certificates that clients' and other nodes' certificates must chain to; several CAs during a change of CA (docs/design/security.md); re-read when it changes")
	fs.StringVar(&c.TLSAuthClients, "tls-auth-clients", c.TLSAuthClients, "what the TLS port asks of clients: yes (a certificate chaining to --tls-ca-cert-file is required), optional (verified if given) or no (none asked for)")
	fs.BoolVar(&c.PlaintextClients, "plaintext-clients", c.PlaintextClients, "serve plain RESP on --listen; false serves clients only over TLS on --tls-port (Redis's port 0), on --listen's host")
	fs.BoolVar(&c.AdminTLS, "admin-tls", c.AdminTLS, "serve the admin endpoints over HTTPS with --tls-cert-file (kura admin --cacert then reaches them)")
	fs.BoolVar(&c.Insecure, "insecure", c.Insecure, "start even though a listener on a non-loopback address is unprotected (RESP without TLS and authentication, admin without TLS and authentication, internode without --tls-internode, gossip without --gossip-keyring-file); without it such a node refuses to start and says what to set")
	fs.BoolVar(&c.TLSInternode, "tls-internode", c.TLSInternode, "cluster mode: mutual TLS on the internode port, Raft's connections included: a peer must present a node certificate (OU kura-node) of the CA bundle, and a node dialing checks that the peer's certificate is a node's and names the host the ring has for it; every node of a cluster must agree")
	fs.Int64Var(&c.MemoryLimitBytes, "memory-limit-bytes", c.MemoryLimitBytes, "soft limit on the Go runtime's memory (debug.SetMemoryLimit): the garbage collector works harder as the process nears it, which keeps RSS close to the live data, worth setting with the memory engine; 0 leaves the runtime's default (GOMEMLIMIT or none)")
	fs.IntVar(&c.GCPercent, "gc-percent", c.GCPercent, "the Go collector's GOGC: how far the heap may grow past live data before a collection; 0 chooses: 25 with the memory engine (its rows are the heap, and 100 would let RSS reach twice the data), Go's default otherwise; a GOGC environment variable overrides the automatic choice")
	fs.StringVar(&c.Host, "host", c.Host, "label of the machine this node runs on: replicas are never placed on two nodes of one host, and several kura nodes may share a machine; empty means the machine's hostname")
	fs.StringVar(&c.Rack, "rack", c.Rack, "label of the rack (or failure domain) the host is in; rack-aware placement spreads replicas over racks")
	fs.StringVar(&c.GossipListen, "gossip-listen", c.GossipListen, "cluster mode: address (TCP and UDP) for gossip with the other nodes; empty runs a single node")
	fs.StringVar(&c.GossipKeyringFile, "gossip-keyring-file", c.GossipKeyringFile, "cluster mode: file of base64 keys (16, 24 or 32 bytes, one per line, `kura cert create-gossip-key` makes one) that encrypt and authenticate gossip with AES-GCM; the first is used to send, all are accepted. Gossip without a valid key is dropped. The node re-reads the file when it changes, so a key rolls on a running cluster by adding it on every node, then moving it first, then removing the old one (docs/design/security.md). Empty: gossip in the clear")
	fs.StringVar(&c.InternodeListen, "internode-listen", c.InternodeListen, "cluster mode: address other nodes send replica reads and writes to")
	fs.StringVar(&c.Seeds, "seeds", c.Seeds, "cluster mode: comma-separated gossip addresses of nodes to join through; empty starts a new cluster")
	fs.IntVar(&c.ReplicationFactor, "replication-factor", c.ReplicationFactor, "cluster mode: copies of every key")
	fs.StringVar(&c.Placement, "placement", c.Placement, "cluster mode: replica placement: simple (next nodes clockwise), host-aware (never two replicas on one host), rack-aware (spread over racks first) or engine-diverse (cover every engine role, never two replicas on one host)")
	fs.StringVar(&c.Routing, "routing", c.Routing, "cluster mode: how the coordinator routes requests: uniform (Cassandra's: a write counts any W replicas, a read asks the first R), engine-aware (a write counts the write-optimized and in-memory replicas, a read asks the read-optimized and in-memory ones: for clusters that mix engines), or load-aware (engine-aware, but a read of a key this node wrote in the last second skips replicas that may lack it, and a replica answering over three times slower than the fastest is asked last)")
	fs.IntVar(&c.NumTokens, "num-tokens", c.NumTokens, "cluster mode: vnode tokens of a new node")
	fs.StringVar(&c.TokenAllocation, "token-allocation", c.TokenAllocation, "cluster mode: how a new node picks its tokens: balanced (evens out replicated ownership) or random")
	fs.StringVar(&c.Consistency, "consistency", c.Consistency, "cluster mode: default consistency level of reads and writes: ONE, TWO, QUORUM or ALL")
	fs.StringVar(&c.ReadRepair, "read-repair", c.ReadRepair, "cluster mode: background (reply with the newest row at once, repair stale replicas after) or blocking (reply once they are repaired)")
	fs.DurationVar(&c.RequestTimeout, "request-timeout", c.RequestTimeout, "cluster mode: how long a coordinator waits for replicas before answering TIMEOUT")
	fs.Float64Var(&c.ReadFallbackPercentile, "read-fallback-percentile", c.ReadFallbackPercentile, "cluster mode: when above 0, a read asks its spare replicas once it has waited longer than this percentile of the coordinator's reads of the last 2 s (Cassandra's speculative_retry = '95p'), --read-fallback-after at most and until enough reads are counted; 0 uses --read-fallback-after alone")
	fs.DurationVar(&c.ReadFallback, "read-fallback-after", c.ReadFallback, "cluster mode: how long a read waits for the replicas it asked before it also asks another replica in place of each one that has not answered (Cassandra's speculative retry; engine-aware: the write-optimized replica, when a B+tree read waits on its disk), then goes on with the first answers its level needs; about one read in ten at most (a retry budget), so that saturated disks are not sent more, except that load-aware routing also asks spares that answered in under half this of late; 0 waits for a failure or the request timeout")
	fs.DurationVar(&c.WriteFallback, "write-fallback-after", c.WriteFallback, "cluster mode, engine-aware routing: how long a write waits for its synchronous replicas (write-optimized and in-memory) before the read-optimized replica's acknowledgement counts too, as when one of them fails; 0 waits for a failure or the request timeout")
	fs.DurationVar(&c.SlowWriteLog, "slow-write-log", c.SlowWriteLog, "cluster mode: a coordinated write that takes longer is logged (at most one a second), with when each replica answered and how long the coordinator spent on its own part (local write dispatch, hints); 0 logs none")
	fs.DurationVar(&c.AsyncWriteTarget, "async-write-target", c.AsyncWriteTarget, "cluster mode, engine-aware and load-aware routing: each coordinator paces its asynchronous writes to a read-optimized replica (1,000 a second at first, 64 unanswered at most), halving the pace when that replica answers later than this or a synchronous replica on its host later than --write-fallback-after, and growing it while they answer in time; writes beyond the pace are deferred to hints, replayed as it allows. A B+tree in periodic durability answers within its sync interval (1 s) unless its disk cannot keep up. 0 sends every write at once")
	fs.DurationVar(&c.HintWindow, "hint-window", c.HintWindow, "cluster mode: a replica unreachable for longer gets no more hints (it needs a repair); hints older than this are dropped")
	fs.Int64Var(&c.HintMaxBytes, "hint-max-bytes", c.HintMaxBytes, "cluster mode: most bytes of hints a node keeps; more are dropped (and counted)")
	fs.StringVar(&c.RingSource, "ring-source", c.RingSource, "cluster mode: where the ring comes from: log (the cluster metadata log: ring versions every node agrees on, and a joining node streams its ranges before it serves them) or gossip (each node's tokens as it gossips them; a joiner serves its ranges empty)")
	fs.StringVar(&c.Join, "join", c.Join, "cluster mode with --ring-source=log: auto (a new node joins with the nodes that register within --join-batch-window of it) or staged (it registers and waits for kura admin commit)")
	fs.DurationVar(&c.AutoRemoveAfter, "auto-remove-after", c.AutoRemoveAfter, "cluster mode with --ring-source=log: a normal member down this long is removed and its ranges re-replicated (0: never; a rack whose every node is down is not)")
	fs.DurationVar(&c.JoinBatchWindow, "join-batch-window", c.JoinBatchWindow, "cluster mode with --ring-source=log: nodes that register within this time of the first are planned as one change, so that starting several at once moves each range once")
	fs.StringVar(&c.Replace, "replace", c.Replace, "cluster mode with --ring-source=log: the ID of a dead node whose tokens this new node takes, streaming them from the surviving replicas")
	fs.DurationVar(&c.StreamCPUTarget, "stream-cpu-target", c.StreamCPUTarget, "cluster mode: the Go scheduler latency (p99 over 100 ms) above which streams slow down below --stream-limit, to a quarter of it at most, so that the foreground gets the CPU first (e.g. 1ms; 0: streams always run at --stream-limit)")
	fs.StringVar(&c.BackgroundPriority, "background-priority", c.BackgroundPriority, "CPU priority of background work, the lsm engine's compactions and flushes and (in cluster mode) the stream pages a node sends: low (threads at nice 19, so that requests take the CPU first) or normal")
	fs.Int64Var(&c.StreamLimit, "stream-limit", c.StreamLimit, "cluster mode: bytes per second a node sends, and receives, streaming ranges for membership changes (each); changeable on a running node with kura admin; 0 sets no limit")
	fs.DurationVar(&c.RepairPeriod, "repair-period", c.RepairPeriod, "cluster mode: how often the background scheduler repairs each range this node is the first replica of with its other replicas (anti-entropy, as kura admin repair); 0 turns it off")
	fs.Int64Var(&c.RepairRowsPerSecond, "repair-rows-per-second", c.RepairRowsPerSecond, "cluster mode: rows per second this node's repairs may scan, as initiator and responder together (background and kura admin repair alike), so that repairs leave the foreground its latency; 0 sets no bound")
	fs.StringVar(&c.TombstonePurge, "tombstone-purge", c.TombstonePurge, "cluster mode: when a tombstone older than --tombstone-grace may be purged: repaired (only once every replica of its range has been repaired since it was written, with kura admin repair, so that a replica that missed the delete cannot bring the value back; until then it stays) or grace (at the grace period alone, as Cassandra's gc_grace: every range must then be repaired within it)")
	fs.DurationVar(&c.CleanupDelay, "cleanup-delay", c.CleanupDelay, "cluster mode with --ring-source=log: how long after a membership change finished the node deletes the rows of the ranges it gave up (until then they stay, costing only disk, in case the change must be undone by hand); 0 leaves it to kura admin cleanup")
	fs.DurationVar(&c.MaxClockOffset, "max-clock-offset", c.MaxClockOffset, "cluster mode: the most a node's clock may be off from most of its peers' (estimated from the stamps of internode messages) before the node refuses the writes it would timestamp, with UNAVAILABLE, until its clock is back within it; reads go on, and the read-modify-write commands it coordinates run at a key's other replicas. Peers further off are flagged in kura admin status and kura_clock_offset_seconds. NTP keeps servers within milliseconds of each other, so an offset of 500ms (CockroachDB's default --max-offset) is a broken clock, and two writes to a key through different nodes that far apart, with no read between, cannot be ordered by a clock that wrong. 0 sets no limit (offsets are still reported)")
	fs.StringVar(&c.HintsDir, "hints-dir", c.HintsDir, "cluster mode: directory of the hint store (writes kept for replicas that did not take them), e.g. on a disk less busy than the data's, as Cassandra's hints_directory; one per node; empty keeps it in the data directory (hints/). The node refuses to start if it is set and the data directory still holds hints")
	fs.StringVar(&c.LogLevel, "log-level", c.LogLevel, "debug, info, warn or error")
	fs.StringVar(&c.LogFormat, "log-format", c.LogFormat, "text or json")
}

// Load builds the effective config: defaults, then the YAML file at path (if not empty),
// then the flags of fs that were set on the command line. fs must have been bound to c with
// BindFlags and parsed.
func (c *Config) Load(path string, fs *pflag.FlagSet) error {
	if path == "" {
		return c.Validate()
	}
	// Remember what the command line said, reset to defaults, read the file, then say it
	// again: the flags write through pointers into c, so Set lands in the loaded config.
	type setFlag struct{ name, value string }
	var set []setFlag
	fs.Visit(func(f *pflag.Flag) { set = append(set, setFlag{f.Name, f.Value.String()}) })
	fromFile, err := ReadFile(path)
	if err != nil {
		return err
	}
	*c = fromFile
	for _, f := range set {
		if err := fs.Set(f.name, f.value); err != nil {
			return fmt.Errorf("%w: flag --%s: %w", ErrInvalid, f.name, err)
		}
	}
	return c.Validate()
}

// ReadFile returns Default() overlaid with the YAML file at path. Unknown keys are errors,
// so a typo never silently leaves a default in place.
func ReadFile(path string) (Config, error) {
	c := Default()
	data, err := os.ReadFile(path)
	if err != nil {
		return c, fmt.Errorf("config: read %s: %w", path, err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	// An empty file decodes to io.EOF and is a valid config: all defaults.
	if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) {
		return c, fmt.Errorf("%w: %s: %w", ErrInvalid, path, err)
	}
	return c, nil
}

// Validate checks every option and returns the first problem found.
func (c *Config) Validate() error {
	switch c.Engine {
	case "lsm", "btree", "memory":
	default:
		return fmt.Errorf("%w: engine %q (want lsm, btree or memory)", ErrInvalid, c.Engine)
	}
	if c.DataDir == "" {
		return fmt.Errorf("%w: data_dir is empty", ErrInvalid)
	}
	if len(c.Host) > 255 || c.Rack == "" || len(c.Rack) > 255 {
		return fmt.Errorf("%w: host must be at most 255 bytes and rack 1 to 255", ErrInvalid)
	}
	if err := c.validateCluster(); err != nil {
		return err
	}
	if err := c.validateTiers(); err != nil {
		return err
	}
	if (c.LSMSecondDir == "") != (c.LSMSecondDirPolicy == "") {
		return fmt.Errorf("%w: lsm_second_dir and lsm_second_dir_policy go together", ErrInvalid)
	}
	if c.LSMSecondDir != "" && (c.Engine != "lsm" || c.Tiered()) {
		return fmt.Errorf("%w: lsm_second_dir is for the lsm engine without fast_dir", ErrInvalid)
	}
	switch c.LSMSecondDirPolicy {
	case "", "free-space", "lower-levels":
	default:
		return fmt.Errorf("%w: lsm_second_dir_policy %q (want free-space or lower-levels)", ErrInvalid, c.LSMSecondDirPolicy)
	}
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		return fmt.Errorf("%w: listen %q: %w", ErrInvalid, c.Listen, err)
	}
	if c.AdminListen != "" {
		if _, _, err := net.SplitHostPort(c.AdminListen); err != nil {
			return fmt.Errorf("%w: admin_listen %q: %w", ErrInvalid, c.AdminListen, err)
		}
	}
	if err := c.validateTLS(); err != nil {
		return err
	}
	if c.Durability != "sync" && c.Durability != "periodic" {
		return fmt.Errorf("%w: durability %q (want sync or periodic)", ErrInvalid, c.Durability)
	}
	positive := []struct {
		name string
		v    int64
	}{
		{"sync_interval", int64(c.SyncInterval)}, {"tombstone_grace", int64(c.TombstoneGrace)},
		{"shutdown_timeout", int64(c.ShutdownTimeout)}, {"lsm_cache_size_bytes", c.LSMCacheSizeBytes},
		{"lsm_memtable_size_bytes", c.LSMMemTableSizeBytes}, {"max_key_bytes", int64(c.MaxKeyBytes)},
		{"max_value_bytes", int64(c.MaxValueBytes)}, {"max_request_bytes", int64(c.MaxRequestBytes)},
		{"max_args", int64(c.MaxArgs)}, {"max_connections", int64(c.MaxConnections)},
		{"slowlog_max_len", int64(c.SlowlogMaxLen)},
		{"keys_limit", int64(c.KeysLimit)},
	}
	for _, p := range positive {
		if p.v <= 0 {
			return fmt.Errorf("%w: %s must be positive, got %d", ErrInvalid, p.name, p.v)
		}
	}
	if c.SlowlogMaxLen > 1<<16 {
		return fmt.Errorf("%w: slowlog_max_len %d exceeds 65536", ErrInvalid, c.SlowlogMaxLen)
	}
	if c.MaxKeyBytes > 64<<10 {
		return fmt.Errorf("%w: max_key_bytes %d exceeds the row key limit 65536", ErrInvalid, c.MaxKeyBytes)
	}
	if c.MemorySnapshotInterval < 0 || c.IdleTimeout < 0 || c.MemoryLimitBytes < 0 || c.DiskReserveBytes < 0 || c.GCPercent < 0 || c.LSMRowCacheBytes < 0 || c.BTreeRowCacheBytes < 0 || c.BTreeWriteBufferBytes < 0 || c.WriteFallback < 0 || c.ReadFallback < 0 || c.AsyncWriteTarget < 0 || c.SlowWriteLog < 0 {
		return fmt.Errorf("%w: negative duration or size", ErrInvalid)
	}
	// The lsm engine's own bounds (lsm.MinBlockSizeBytes, lsm.MaxBlockSizeBytes), which
	// it checks again at open; config does not import the engines.
	if c.LSMBlockSizeBytes != 0 && (c.LSMBlockSizeBytes < 1<<10 || c.LSMBlockSizeBytes > 1<<20) {
		return fmt.Errorf("%w: lsm_block_size_bytes %d (want 0 for the default, or 1024 to 1048576)", ErrInvalid, c.LSMBlockSizeBytes)
	}
	if c.ReadFallbackPercentile < 0 || c.ReadFallbackPercentile >= 100 {
		return fmt.Errorf("%w: read_fallback_percentile %g (want 0 for off, or above 0 and below 100)", ErrInvalid, c.ReadFallbackPercentile)
	}
	if c.ReadFallbackPercentile > 0 && c.ReadFallback == 0 {
		return fmt.Errorf("%w: read_fallback_percentile needs read_fallback_after above 0 (its cap)", ErrInvalid)
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		return fmt.Errorf("%w: log_level %q", ErrInvalid, c.LogLevel)
	}
	if c.LogFormat != "text" && c.LogFormat != "json" {
		return fmt.Errorf("%w: log_format %q (want text or json)", ErrInvalid, c.LogFormat)
	}
	return nil
}

// TLS reports whether any listener or dialer of the node uses TLS, and so needs the
// certificate files.
func (c *Config) TLS() bool { return c.TLSPort != 0 || c.TLSInternode || c.AdminTLS }

// TLSListen is the address of the TLS RESP listener: TLSPort on Listen's host.
func (c *Config) TLSListen() string {
	host, _, _ := net.SplitHostPort(c.Listen) // validated
	return net.JoinHostPort(host, strconv.Itoa(c.TLSPort))
}

func (c *Config) validateTLS() error {
	if c.TLSPort < 0 || c.TLSPort > 65535 {
		return fmt.Errorf("%w: tls_port %d (want 0 for none, or 1 to 65535)", ErrInvalid, c.TLSPort)
	}
	switch c.TLSAuthClients {
	case "yes", "optional", "no":
	default:
		return fmt.Errorf("%w: tls_auth_clients %q (want yes, optional or no)", ErrInvalid, c.TLSAuthClients)
	}
	if c.TLS() && (c.TLSCertFile == "" || c.TLSKeyFile == "" || c.TLSCACertFile == "") {
		return fmt.Errorf("%w: tls_port, tls_internode and admin_tls need tls_cert_file, tls_key_file and tls_ca_cert_file", ErrInvalid)
	}
	if !c.PlaintextClients && c.TLSPort == 0 {
		return fmt.Errorf("%w: plaintext_clients false needs a tls_port: clients would have no way in", ErrInvalid)
	}
	if bad := c.Unprotected(); len(bad) > 0 && !c.Insecure {
		return fmt.Errorf("%w: refusing to listen on a network unprotected:\n  - %s\n"+
			"Fix each, or start with --insecure to run unprotected anyway (a trusted network; never on the internet). "+
			"kura cert create-ca / create-node makes certificates, kura cert create-gossip-key a gossip key; "+
			"docs/design/security.md", ErrInvalid, strings.Join(bad, "\n  - "))
	}
	return nil
}

// Unprotected lists, one sentence each saying what to set, the listeners that a
// non-loopback address leaves open to whoever reaches it: RESP in plain text or without
// authentication, the admin endpoints without TLS and authentication, the internode port
// without mutual TLS, gossip without a key. A node refuses to start with any of them
// unless Insecure (CockroachDB's rule: no networked node without certificates unless told
// --insecure; Redis's open defaults are how exposed servers were taken over).
func (c *Config) Unprotected() []string {
	var bad []string
	auth := c.Password != "" || c.ACLFile != ""
	if c.PlaintextClients && exposed(c.Listen) {
		bad = append(bad, fmt.Sprintf("RESP listens on %s in plain text: serve clients with TLS only (--tls-port with --tls-cert-file, "+
			"--tls-key-file and --tls-ca-cert-file, and --plaintext-clients=false) or listen on loopback", c.Listen))
	}
	if c.TLSPort != 0 && exposed(c.TLSListen()) && !auth {
		bad = append(bad, fmt.Sprintf("RESP over TLS on %s asks no password: set --password (the default user's) or --acl-file", c.TLSListen()))
	}
	if c.AdminListen != "" && exposed(c.AdminListen) && (!c.AdminTLS || !auth) {
		bad = append(bad, fmt.Sprintf("the admin endpoints on %s need --admin-tls and users (--password or --acl-file) or a loopback --admin-listen", c.AdminListen))
	}
	if c.Clustered() && exposed(c.InternodeListen) && !c.TLSInternode {
		bad = append(bad, fmt.Sprintf("the internode port %s needs --tls-internode (mutual TLS with node certificates)", c.InternodeListen))
	}
	if c.Clustered() && exposed(c.GossipListen) && c.GossipKeyringFile == "" {
		bad = append(bad, fmt.Sprintf("gossip on %s needs --gossip-keyring-file (encrypted, authenticated gossip)", c.GossipListen))
	}
	return bad
}

// exposed reports whether addr (host:port) listens beyond this machine: any host but a
// loopback IP or "localhost" (an empty host, 0.0.0.0 and :: listen everywhere).
func exposed(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return true
	}
	if strings.EqualFold(host, "localhost") {
		return false
	}
	ip := net.ParseIP(host)
	return ip == nil || !ip.IsLoopback()
}

// MemoryEngineGCPercent is the GOGC the node uses with the memory engine unless told
// otherwise: with rows living in the Go heap, Go's 100 lets RSS grow to about twice the data;
// 25 keeps it near 1.25x for a few percent more collector CPU (docs/bench/engines.md).
const MemoryEngineGCPercent = 25

// EffectiveGCPercent returns the GOGC to set, or 0 to leave the runtime alone. envGOGC is
// the GOGC environment variable, which wins over the automatic choice but not over an
// explicit gc_percent.
func (c *Config) EffectiveGCPercent(envGOGC string) int {
	switch {
	case c.GCPercent > 0:
		return c.GCPercent
	case envGOGC != "":
		return 0
	case c.Engine == "memory":
		return MemoryEngineGCPercent
	}
	return 0
}

// Tiered reports whether the engine is split over a fast and a slow directory.
func (c *Config) Tiered() bool { return c.FastDir != "" }

// validateTiers checks the tiered-storage options.
func (c *Config) validateTiers() error {
	if !c.Tiered() {
		if c.SlowDir != "" || c.FastBudgetBytes != 0 || !c.TierFastPageCache {
			return fmt.Errorf("%w: slow_dir, fast_budget_bytes and tier_fast_page_cache need fast_dir", ErrInvalid)
		}
		return nil
	}
	switch {
	case c.Engine != "lsm":
		return fmt.Errorf("%w: fast_dir: tiered storage works with the lsm engine, not %s", ErrInvalid, c.Engine)
	case c.LSMWALDir != "" || c.LSMWALFailoverDir != "":
		return fmt.Errorf("%w: fast_dir and lsm_wal_dir or lsm_wal_failover_dir together are not supported: each tier keeps its log beside its data", ErrInvalid)
	case c.FastBudgetBytes <= 0:
		return fmt.Errorf("%w: fast_dir needs a positive fast_budget_bytes", ErrInvalid)
	case c.TierWindow < 10*time.Millisecond || c.TierMinReads < 1 || c.TierMoveBytesPerSecond <= 0:
		return fmt.Errorf("%w: tier_window must be at least 10ms, tier_min_reads at least 1 and tier_move_bytes_per_second positive", ErrInvalid)
	case !(c.TierFastCacheShare > 0 && c.TierFastCacheShare < 1):
		return fmt.Errorf("%w: tier_fast_cache_share must be between 0 and 1 exclusive, got %v", ErrInvalid, c.TierFastCacheShare)
	}
	return nil
}

// validateCluster checks the cluster-mode options.
func (c *Config) validateCluster() error {
	if !c.Clustered() {
		return nil
	}
	addrs := append([]string{c.GossipListen, c.InternodeListen}, c.SeedList()...)
	for _, a := range addrs {
		if _, _, err := net.SplitHostPort(a); err != nil {
			return fmt.Errorf("%w: address %q: %w", ErrInvalid, a, err)
		}
	}
	switch {
	case c.ReplicationFactor < 1 || c.ReplicationFactor > 16:
		return fmt.Errorf("%w: replication_factor %d (want 1 to 16)", ErrInvalid, c.ReplicationFactor)
	case c.NumTokens < 1 || c.NumTokens > 256:
		return fmt.Errorf("%w: num_tokens %d (want 1 to 256)", ErrInvalid, c.NumTokens)
	case !slices.Contains([]string{"simple", "host-aware", "rack-aware", "engine-diverse"}, c.Placement):
		return fmt.Errorf("%w: placement %q (want simple, host-aware, rack-aware or engine-diverse)", ErrInvalid, c.Placement)
	case !slices.Contains([]string{"uniform", "engine-aware", "load-aware"}, c.Routing):
		return fmt.Errorf("%w: routing %q (want uniform, engine-aware or load-aware)", ErrInvalid, c.Routing)
	case c.TokenAllocation != "balanced" && c.TokenAllocation != "random":
		return fmt.Errorf("%w: token_allocation %q (want balanced or random)", ErrInvalid, c.TokenAllocation)
	case c.ReadRepair != "background" && c.ReadRepair != "blocking":
		return fmt.Errorf("%w: read_repair %q (want background or blocking)", ErrInvalid, c.ReadRepair)
	case c.RequestTimeout <= 0 || c.HintWindow <= 0 || c.HintMaxBytes <= 0:
		return fmt.Errorf("%w: request_timeout, hint_window and hint_max_bytes must be positive", ErrInvalid)
	case c.MaxClockOffset < 0:
		return fmt.Errorf("%w: max_clock_offset %v is negative (0 sets no limit)", ErrInvalid, c.MaxClockOffset)
	case c.RingSource != "log" && c.RingSource != "gossip":
		return fmt.Errorf("%w: ring_source %q (want log or gossip)", ErrInvalid, c.RingSource)
	case c.TombstonePurge != "repaired" && c.TombstonePurge != "grace":
		return fmt.Errorf("%w: tombstone_purge %q (want repaired or grace)", ErrInvalid, c.TombstonePurge)
	case c.BackgroundPriority != "low" && c.BackgroundPriority != "normal":
		return fmt.Errorf("%w: background_priority %q (want low or normal)", ErrInvalid, c.BackgroundPriority)
	case c.Join != "auto" && c.Join != "staged":
		return fmt.Errorf("%w: join %q (want auto or staged)", ErrInvalid, c.Join)
	case c.JoinBatchWindow < 0 || c.StreamLimit < 0 || c.StreamCPUTarget < 0 || c.CleanupDelay < 0 || c.AutoRemoveAfter < 0 ||
		c.RepairPeriod < 0 || c.RepairRowsPerSecond < 0:
		return fmt.Errorf("%w: join_batch_window, stream_limit, cleanup_delay, auto_remove_after, repair_period and repair_rows_per_second must not be negative", ErrInvalid)
	case c.RingSource == "gossip" && (c.Join != "auto" || c.Replace != ""):
		return fmt.Errorf("%w: join and replace need ring_source log", ErrInvalid)
	}
	switch strings.ToUpper(c.Consistency) {
	case "ONE", "TWO", "QUORUM", "ALL":
	default:
		return fmt.Errorf("%w: consistency %q (want ONE, TWO, QUORUM or ALL)", ErrInvalid, c.Consistency)
	}
	return nil
}

// EngineDiskReserve is DiskReserveBytes as the engines and the hint store take it
// (engine.Options.DiskReserveBytes): there 0 is the default and a negative value
// disables the reserve, which the configuration writes as 0.
func (c Config) EngineDiskReserve() int64 {
	if c.DiskReserveBytes == 0 {
		return -1
	}
	return c.DiskReserveBytes
}
