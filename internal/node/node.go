// Package node is the driver of a kura node: it opens the data directory and the engine,
// opens the listeners, serves the Redis protocol and the admin endpoints, and in cluster
// mode runs gossip, the internode transport, hints and refills. It owns every goroutine,
// socket, timer and file that takes, and moves bytes between them and the node's state
// machine (package machine), which makes every cluster decision: which replicas a request
// goes to, when it times out or falls back, what is hinted, replayed or announced. Command
// semantics are package resp's, placement package ring's, movement plans package move's,
// the admin surface and metrics package admin's; this one starts, connects and stops
// them. The one decision left here is the join's wait for nodes joining at the same time
// (waitForEarlierJoiners), which ring versions will replace.
package node

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kuradb/kura/internal/access"
	"github.com/kuradb/kura/internal/acl"
	"github.com/kuradb/kura/internal/admin"
	"github.com/kuradb/kura/internal/cert"
	"github.com/kuradb/kura/internal/cluster"
	"github.com/kuradb/kura/internal/config"
	"github.com/kuradb/kura/internal/coord"
	"github.com/kuradb/kura/internal/datadir"
	"github.com/kuradb/kura/internal/engine"
	"github.com/kuradb/kura/internal/engine/btree"
	"github.com/kuradb/kura/internal/engine/catalog"
	"github.com/kuradb/kura/internal/engine/tiered"
	"github.com/kuradb/kura/internal/hlc"
	"github.com/kuradb/kura/internal/listener"
	"github.com/kuradb/kura/internal/resp"
	"github.com/kuradb/kura/internal/ring"
)

// Version is reported by INFO; the kura binary sets it.
var Version = "dev"

// Errors Start returns when the data directory cannot be used (package datadir).
var (
	// ErrDataDir means the data directory cannot be created, read or written.
	ErrDataDir = datadir.ErrUnusable
	// ErrEngineMismatch means the data directory holds another engine's data.
	ErrEngineMismatch = datadir.ErrEngineMismatch
)

// Node is a running single node. Start it with Start and stop it with Shutdown.
type Node struct {
	cfg      config.Config
	log      *slog.Logger
	dir      *datadir.Dir
	eng      engine.Engine
	resp     *resp.Server
	respLn   net.Listener
	users    *acl.Registry // the users RESP, the admin endpoints and, in a cluster, the metadata log share
	respDone chan error
	tls      *cert.Source // the node's certificate files, nil without TLS (--tls-port, --tls-internode)
	tlsLn    net.Listener // the RESP TLS listener (--tls-port), or nil
	tlsDone  chan error
	admin    *admin.Server
	migrator *tiered.Migrator            // nil unless the engine is tiered
	purge    *purgeHistory               // repaired ranges, for the engine's purge horizon; nil outside cluster mode
	tiers    *admin.Tiers                // the tiered engine for /tiers; nil unless tiered
	cluster  *clusterNode                // nil for a single node
	clusterP atomic.Pointer[clusterNode] // cluster, for the admin server's goroutines
	host     string
	draining atomic.Bool
	started  time.Time
	hooks    hooks

	shutOnce sync.Once // Shutdown runs once; later calls wait for it and return its error
	shutErr  error
}

// hooks are what tests change in a node that its configuration does not.
type hooks struct {
	// physical is the node's physical clock in microseconds (hlc.New's); nil: the system's.
	physical func() int64
	// internodeVersion is the newest internode frame version the node speaks (0: the
	// newest); 1 plays a node that predates clocks in frames.
	internodeVersion int
	// tlsListen, when set, is the address of the RESP TLS listener instead of
	// --tls-port's ("127.0.0.1:0" in tests, which need a free port).
	tlsListen string
}

// Start opens cfg's data directory and engine and starts serving. On error nothing is left
// running and the data directory is unlocked.
func Start(cfg config.Config, log *slog.Logger) (*Node, error) { return startNode(cfg, log, hooks{}) }

// startNode is Start with hooks, which tests set.
func startNode(cfg config.Config, log *slog.Logger, h hooks) (*Node, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	n := &Node{cfg: cfg, log: log, started: time.Now(), respDone: make(chan error, 1), tlsDone: make(chan error, 1),
		host: cfg.Host, hooks: h}
	if n.host == "" {
		h, err := os.Hostname()
		if err != nil {
			return nil, fmt.Errorf("node: no --host given and the hostname is unknown: %w", err)
		}
		n.host = h
	}
	if err := n.start(); err != nil {
		n.closeAll(context.Background())
		return nil, err
	}
	return n, nil
}

// start does Start's work; on error, Start undoes whatever it got running.
func (n *Node) start() (err error) {
	cfg, log := n.cfg, n.log
	dirs, err := datadir.TiersOf(cfg)
	if err != nil {
		return err
	}
	if n.dir, err = datadir.Open(cfg.DataDir, cfg.Engine, dirs, n.started); err != nil {
		return err
	}
	clock := hlc.New(n.hooks.physical)
	eo := catalog.OptionsFor(cfg)
	if cfg.Clustered() {
		if n.purge, err = openPurgeHistory(n.dir.Path()); err != nil {
			return err
		}
		if cfg.TombstonePurge == "repaired" {
			eo.PurgeHorizon = n.purge.horizon // see purge.go
		}
	}
	eo.Logger = log
	if cfg.Tiered() {
		eo.Tiers = &catalog.Tiers{FastDir: cfg.FastDir, SlowDir: cfg.SlowDir,
			Tracker:     access.New(access.Config{Window: cfg.TierWindow, MinCount: cfg.TierMinReads}),
			CountWrites: cfg.TierCountWrites, FastCacheShare: cfg.TierFastCacheShare,
			DropFastPageCache: !cfg.TierFastPageCache}
	}
	engineDir := n.dir.EngineDir(cfg.Engine)
	if cfg.Engine == "btree" && cfg.BTreeDir != "" {
		// A B+tree file left in the data directory would be silently replaced by an empty
		// one elsewhere: this replica's rows would vanish.
		if _, err := os.Stat(filepath.Join(engineDir, btree.FileName)); err == nil && filepath.Clean(cfg.BTreeDir) != engineDir {
			return fmt.Errorf("node: %w: --btree-dir %s, but %s holds a B+tree file: move it there first", ErrDataDir, cfg.BTreeDir, engineDir)
		}
		engineDir = cfg.BTreeDir
	}
	if n.eng, err = catalog.Open(cfg.Engine, engineDir, eo); err != nil {
		return fmt.Errorf("node: open %s engine in %s: %w", cfg.Engine, cfg.DataDir, err)
	}
	reg := admin.NewRegistry(n.eng)
	if db, ok := n.eng.(*tiered.DB); ok {
		if n.tiers, err = n.startMigrator(db); err != nil {
			return err
		}
		reg.MustRegister(admin.NewTierCollector(n.tiers))
	}
	if cfg.PlaintextClients {
		if n.respLn, err = listener.Listen(listener.Clients, cfg.Listen); err != nil {
			return fmt.Errorf("node: %w", err)
		}
	}
	if err := n.listenTLS(); err != nil {
		return err
	}
	if n.users, err = openUsers(cfg); err != nil {
		return err
	}
	if cfg.AdminListen != "" {
		var ln net.Listener
		if cfg.AdminTLS {
			// Any client may connect; the endpoints ask for a user (admin.Config.Auth).
			ln, err = listener.ListenTLS(listener.Admin, cfg.AdminListen, n.tls.ServerConfig(cert.NoClientCert))
		} else {
			ln, err = listener.Listen(listener.Admin, cfg.AdminListen)
		}
		if err != nil {
			return fmt.Errorf("node: %w", err)
		}
		ac := admin.Config{Registry: reg, Draining: n.draining.Load, Cluster: n.clusterStatus,
			Rebuild: n.rebuild, Topology: n.changeTopology, Tiers: n.tiers, Engine: n.eng, Auth: n.adminAuth(), Logger: log}
		if cfg.Clustered() {
			ac.Repair, ac.RepairProgress, ac.RepairStop = n.startRepair, n.repairProgress, n.stopRepair
		}
		n.admin = admin.Serve(ln, ac)
	}
	var store resp.Store = localStore{n.eng} // the engine, and SCAN over it
	if cfg.Clustered() {
		if n.cluster, err = startCluster(cfg, log, n.dir, n.eng, clock, n.member(), reg, n.hooks.internodeVersion, n.purge, n.tls, n.users); err != nil {
			return err
		}
		store = n.cluster.store
		n.clusterP.Store(n.cluster)
	}
	rc, err := n.respConfig(clock, reg, store)
	if err != nil {
		return err
	}
	if n.resp, err = resp.New(rc); err != nil {
		return err
	}
	if n.cluster != nil {
		run := leaderRunner(n.resp.Handler().RunAtLeader)
		n.cluster.store.leader.Store(&run)
	}
	if ln := n.respLn; ln != nil {
		go func() { n.respDone <- n.resp.Serve(ln) }()
	}
	if tlsLn := n.tlsLn; tlsLn != nil {
		go func() { n.tlsDone <- n.resp.Serve(tlsLn) }()
	}
	return nil
}

// listenTLS loads the certificate files when TLS is on, and opens the RESP TLS listener
// when --tls-port is set. The files are re-read on handshakes when they change (package
// cert), so a renewed certificate or CA bundle needs no restart.
func (n *Node) listenTLS() error {
	cfg := n.cfg
	if !cfg.TLS() {
		return nil
	}
	var err error
	n.tls, err = cert.NewSource(cert.Files{Cert: cfg.TLSCertFile, Key: cfg.TLSKeyFile, CA: cfg.TLSCACertFile},
		cert.SourceOptions{Logger: n.log.With("part", "tls")})
	if err != nil {
		return fmt.Errorf("node: %w", err)
	}
	if cfg.TLSPort == 0 {
		return nil
	}
	auth, err := cert.ParseClientAuth(cfg.TLSAuthClients)
	if err != nil { // validated by config
		return fmt.Errorf("node: %w", err)
	}
	if n.tlsLn, err = listener.ListenTLS(listener.Clients, cmp.Or(n.hooks.tlsListen, cfg.TLSListen()), n.tls.ServerConfig(auth)); err != nil {
		return fmt.Errorf("node: %w", err)
	}
	return nil
}

// startMigrator starts the tiered engine's migrator, and returns what the admin endpoints
// report of the tiers.
func (n *Node) startMigrator(db *tiered.DB) (*admin.Tiers, error) {
	cfg := n.cfg
	var err error
	n.migrator, err = tiered.NewMigrator(db, tiered.MigratorConfig{BudgetBytes: cfg.FastBudgetBytes,
		MoveBytesPerSecond: cfg.TierMoveBytesPerSecond, Logger: n.log})
	if err != nil {
		return nil, fmt.Errorf("node: %w", err)
	}
	n.migrator.Start()
	slowDir := cfg.SlowDir
	if slowDir == "" {
		slowDir = n.dir.EngineDir(cfg.Engine)
	}
	return &admin.Tiers{DB: db, Migrator: n.migrator, Node: n.dir.ID(), Host: n.host, FastDir: cfg.FastDir,
		SlowDir: slowDir, Window: cfg.TierWindow, MinReads: cfg.TierMinReads, CountWrites: cfg.TierCountWrites,
		Started: n.started, Logger: n.log}, nil
}

// member is this node's entry in the cluster view, before tokens and status.
func (n *Node) member() cluster.Member {
	return cluster.Member{ID: ring.NodeID(n.dir.ID()), Host: n.host, Rack: n.cfg.Rack, Engine: n.cfg.Engine,
		Role: n.eng.Role(), ClientAddr: n.Addr(), ClientTLSAddr: n.TLSAddr(), GossipAddr: n.cfg.GossipListen,
		AdminAddr: n.AdminAddr()}
}

// clusterErrorPrefix gives the coordinator's errors the RESP prefixes clients tell apart.
func clusterErrorPrefix(err error) string {
	switch {
	case errors.Is(err, coord.ErrUnavailable), errors.Is(err, errClockOutOfSync):
		return resp.PrefixUnavailable
	case errors.Is(err, coord.ErrTimeout):
		return "TIMEOUT"
	case errors.Is(err, coord.ErrOverloaded):
		return "OVERLOADED"
	}
	return ""
}

// openUsers makes the node's users: the default user with --password, then --acl-file's
// users when set (a "user default" line in the file wins over --password); a file that
// does not parse stops the node from starting. In a cluster the metadata log's record of
// the users replaces them once it exists (users.go).
func openUsers(cfg config.Config) (*acl.Registry, error) {
	users, err := resp.NewACLRegistry(cfg.Password)
	if err != nil {
		return nil, err
	}
	if cfg.ACLFile != "" {
		if err := resp.LoadACLFile(users, cfg.ACLFile); err != nil {
			return nil, fmt.Errorf("node: --acl-file: %w", err)
		}
	}
	return users, nil
}

func (n *Node) respConfig(clock *hlc.Clock, reg prometheus.Registerer, store resp.Store) (resp.Config, error) {
	users := n.users
	var commit func(context.Context, acl.Change) error
	if c := n.cluster; c != nil && c.rl != nil {
		commit = c.commitACL
	}
	return resp.Config{
		ACLCommit:       commit,
		Store:           store,
		ErrorPrefix:     clusterErrorPrefix,
		Clock:           clock,
		ACL:             users,
		ACLFile:         n.cfg.ACLFile,
		KeysEstimate:    n.keysEstimate,
		Info:            n.infoSections,
		Topology:        n.topology,
		Version:         Version,
		ShardID:         n.dir.ID(),
		MaxKeyBytes:     n.cfg.MaxKeyBytes,
		MaxValueBytes:   n.cfg.MaxValueBytes,
		MaxRequestBytes: n.cfg.MaxRequestBytes,
		MaxArgs:         n.cfg.MaxArgs,
		MaxConnections:  n.cfg.MaxConnections,
		IdleTimeout:     n.cfg.IdleTimeout,
		KeysLimit:       n.cfg.KeysLimit,
		Registerer:      reg,
		// 0 logs every command, as Redis's slowlog-log-slower-than 0; resp takes 0 for
		// its default and 1µs for every command.
		SlowlogThreshold: cmp.Or(n.cfg.SlowlogThreshold, time.Microsecond),
		SlowlogMaxLen:    n.cfg.SlowlogMaxLen,
	}, nil
}

// topology answers KURA.TOPOLOGY: the cluster status of /cluster, as JSON.
func (n *Node) topology() ([]byte, error) {
	st, ok := n.clusterStatus()
	if !ok {
		return nil, errors.New("this node is not part of a cluster")
	}
	return json.Marshal(st)
}

// clusterStatus is the node's view for /cluster and KURA.TOPOLOGY; false when the node is
// not in cluster mode.
func (n *Node) clusterStatus() (admin.ClusterStatus, bool) {
	c := n.clusterP.Load()
	if c == nil {
		return admin.ClusterStatus{}, false
	}
	return c.status(), true
}

// rebuild starts a rebuild of this replica from its peers (/rebuild); false when the node
// is not in cluster mode.
func (n *Node) rebuild() (bool, error) {
	c := n.clusterP.Load()
	if c == nil {
		return false, nil
	}
	return true, c.rebuild()
}

// startRepair starts a repair of this node's ranges (/repair).
func (n *Node) startRepair(req admin.RepairRequest) (admin.RepairProgress, error) {
	c := n.clusterP.Load()
	if c == nil {
		return admin.RepairProgress{}, errors.New("node: cluster mode is still starting")
	}
	return c.repair.start(req)
}

// stopRepair stops the running repair after its current range (DELETE /repair).
func (n *Node) stopRepair() (admin.RepairProgress, bool) {
	if c := n.clusterP.Load(); c != nil {
		return c.repair.stop()
	}
	return admin.RepairProgress{}, false
}

// repairProgress returns the running or last repair's progress (/repair).
func (n *Node) repairProgress() (admin.RepairProgress, bool) {
	if c := n.clusterP.Load(); c != nil {
		return c.repair.status()
	}
	return admin.RepairProgress{}, false
}

// infoSections is the node's part of INFO: the engine and its durability.
func (n *Node) infoSections() []resp.InfoSection {
	s := n.eng.Stats()
	f := func(k string, v any) resp.InfoField { return resp.InfoField{Key: k, Value: fmt.Sprint(v)} }
	return []resp.InfoSection{{Name: "Engine", Fields: []resp.InfoField{
		f("engine", n.eng.Name()),
		f("engine_role", n.eng.Role()),
		f("durability", n.cfg.Durability),
		f("sync_interval_ms", n.cfg.SyncInterval.Milliseconds()),
		f("data_dir", n.cfg.DataDir),
		f("disk_bytes", s.DiskBytes),
		f("memory_bytes", s.MemoryBytes),
		f("rows_estimate", s.RowsEstimate),
		f("rows_estimate_exact", s.Exact),
		f("disk_available_bytes", s.DiskAvailBytes),
		f("disk_reserve_bytes", s.DiskReserveBytes),
		f("writes_refused_no_space", s.NoSpaceRefusals),
	}}}
}

// Removed receives an error, once, if the cluster's metadata log records this running
// node as removed: it came back after kura admin removenode (or --auto-remove-after) and
// must stop serving. kura server shuts down with that error. Nil outside cluster mode.
func (n *Node) Removed() <-chan error {
	if c := n.clusterP.Load(); c != nil {
		return c.removed
	}
	return nil
}

// ID returns the node's ID, kept in its data directory's NODE.json.
func (n *Node) ID() string { return n.dir.ID() }

// Host returns the label of the machine the node runs on (--host, or the hostname).
func (n *Node) Host() string { return n.host }

// Rack returns the node's rack label.
func (n *Node) Rack() string { return n.cfg.Rack }

// GossipAddr is the bound gossip address in cluster mode, or "".
func (n *Node) GossipAddr() string {
	if n.cluster == nil {
		return ""
	}
	return n.cluster.gossipAddr()
}

// Addr is the address clients connect to in plain text, or "" with
// --plaintext-clients=false.
func (n *Node) Addr() string {
	if n.respLn == nil {
		return ""
	}
	return n.respLn.Addr().String()
}

// TLSAddr is the bound address clients connect to with TLS (--tls-port), or "" when the
// node serves no TLS port.
func (n *Node) TLSAddr() string {
	if n.tlsLn == nil {
		return ""
	}
	return n.tlsLn.Addr().String()
}

// AdminAddr is the admin HTTP address, or "" when disabled.
func (n *Node) AdminAddr() string {
	if n.admin == nil {
		return ""
	}
	return n.admin.Addr()
}

// Shutdown stops the node gracefully: /healthz turns 503, the client listener closes,
// requests in flight finish, the engine flushes what its durability mode promises and
// closes, and the data directory is unlocked. ctx bounds the wait for the admin server.
// A second call waits for the first and returns its error.
func (n *Node) Shutdown(ctx context.Context) error {
	n.shutOnce.Do(func() {
		n.draining.Store(true)
		n.shutErr = n.closeAll(ctx)
	})
	return n.shutErr
}

// closeAll stops whatever Start got running, in reverse order; it is used for both a
// failed start and a shutdown.
func (n *Node) closeAll(ctx context.Context) error {
	var errs []error
	if n.resp != nil {
		errs = append(errs, n.resp.Shutdown(ctx))
		for _, done := range []chan error{n.respDone, n.tlsDone} {
			if done == n.tlsDone && n.tlsLn == nil || done == n.respDone && n.respLn == nil {
				continue
			}
			if err := <-done; err != nil && !errors.Is(err, resp.ErrServerClosed) {
				errs = append(errs, err)
			}
		}
	} else {
		for _, ln := range []net.Listener{n.respLn, n.tlsLn} {
			if ln != nil {
				ln.Close()
			}
		}
	}
	if n.cluster != nil {
		errs = append(errs, n.cluster.close(ctx))
	}
	if n.migrator != nil {
		n.migrator.Stop() // before the engine closes under its moves
	}
	if n.eng != nil {
		if err := n.eng.Flush(); err != nil && !errors.Is(err, engine.ErrClosed) {
			errs = append(errs, fmt.Errorf("node: flush engine: %w", err))
		}
		errs = append(errs, n.eng.Close())
	}
	if n.admin != nil {
		errs = append(errs, n.admin.Close(ctx))
	}
	if n.dir != nil {
		errs = append(errs, n.dir.Close())
	}
	return errors.Join(errs...)
}
