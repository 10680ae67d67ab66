package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/kuradb/kura/internal/config"
	"github.com/kuradb/kura/internal/lowprio"
	"github.com/kuradb/kura/internal/node"
)

func newServerCmd() *cobra.Command {
	cfg := config.Default()
	var configPath string
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Run a kura node",
		Long: `Run a kura node: one storage engine behind a Redis-protocol listener, with
Prometheus metrics and /healthz on the admin listener. Options come from the
defaults, then --config FILE (YAML), then flags; see docs/configuration.md.
SIGTERM or SIGINT shut the node down gracefully: it stops accepting clients,
finishes requests in flight, flushes and closes the engine.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := cfg.Load(configPath, cmd.Flags()); err != nil {
				return err
			}
			return runServer(cfg)
		},
	}
	cmd.Flags().StringVar(&configPath, "config", "", "YAML config file (keys as in docs/configuration.md)")
	cfg.BindFlags(cmd.Flags())
	return cmd
}

func runServer(cfg config.Config) error {
	log := newLogger(cfg)
	// Process-wide settings, so the binary makes them rather than the node package, which
	// tests run several times in one process.
	if cfg.MemoryLimitBytes > 0 {
		debug.SetMemoryLimit(cfg.MemoryLimitBytes)
	}
	if pct := cfg.EffectiveGCPercent(os.Getenv("GOGC")); pct > 0 {
		debug.SetGCPercent(pct)
	}
	if n := node.LowPriorityThreads(cfg); n > 0 {
		log.Info("background work at low CPU priority", "gomaxprocs", lowprio.Reserve(n))
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	node.Version = version
	// A line before the engine opens and the node joins, so that a slow start (a large
	// write-ahead log to replay, seeds that do not answer) shows where the time went.
	log.Info("kura node starting", "version", version, "engine", cfg.Engine, "data_dir", cfg.DataDir)
	n, err := node.Start(cfg, log)
	if err != nil {
		return err
	}
	log.Info("kura node ready", "id", n.ID(), "host", n.Host(), "rack", n.Rack(), "engine", cfg.Engine, "listen", n.Addr(), "admin", n.AdminAddr(),
		"tls_listen", n.TLSAddr(), "tls_internode", cfg.TLSInternode, "data_dir", cfg.DataDir, "durability", cfg.Durability)
	var removed error
	select {
	case <-ctx.Done():
	case removed = <-n.Removed():
		log.Error("removed from the cluster: shutting down", "err", removed)
	}
	stop() // a second signal now kills the process the default way
	log.Info("shutting down", "timeout", cfg.ShutdownTimeout)
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	if err := n.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	log.Info("stopped")
	return removed
}

func newLogger(cfg config.Config) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.LogLevel)) // validated by config
	opts := &slog.HandlerOptions{Level: level}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(os.Stderr, opts))
	}
	return slog.New(slog.NewTextHandler(os.Stderr, opts))
}
