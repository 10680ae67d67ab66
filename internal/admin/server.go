// Package admin is a node's administration surface: the admin HTTP endpoints, the JSON
// types they answer with (which `kura admin` and the benchmark's token-aware client
// read), and the Prometheus collectors behind /metrics.
package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/kuradb/kura/internal/engine"
)

// Config is what the admin endpoints serve. Functions are called on the HTTP server's
// goroutines, concurrently.
type Config struct {
	Registry *prometheus.Registry // /metrics
	// Draining reports whether the node is shutting down: /healthz then answers 503, so
	// that load balancers stop sending it clients while in-flight requests finish.
	Draining func() bool
	// Cluster returns the node's ClusterStatus for /cluster, false when it is not in
	// cluster mode.
	Cluster func() (ClusterStatus, bool)
	// Rebuild starts a rebuild of this replica from its peers (POST /rebuild); false when
	// not in cluster mode, or the rebuild's error.
	Rebuild func() (bool, error)
	// Topology runs an operator's membership change (POST /topology) and returns its
	// report; nil when not in cluster mode.
	Topology func(TopologyRequest) (string, error)
	// Repair starts a repair of this node's ranges (POST /repair) and returns its
	// status as it starts, or ErrRepairRunning; RepairProgress returns the running or last
	// repair's, false when none has run. Both nil when not in cluster mode.
	Repair         func(RepairRequest) (RepairProgress, error)
	RepairProgress func() (RepairProgress, bool)
	// RepairStop stops the running repair once its current range is done (DELETE
	// /repair); false when none runs.
	RepairStop func() (RepairProgress, bool)
	// Tiers is the tiered engine's status and budget (/tiers); nil when not tiered.
	Tiers *Tiers
	// Engine's report of its store answers /debug/store (engine.Reporter).
	Engine engine.Engine
	// Auth, when set, guards every endpoint but /metrics and /healthz: it gets the HTTP
	// Basic credentials of the request ("" and "" when it has none) and the client's
	// address, and returns nil to let the request through, ErrUnauthenticated (wrapped or
	// not) for missing or wrong credentials, or any other error for a user who lacks the
	// permission. Nil leaves every endpoint open.
	Auth   func(user, password, remote string) error
	Logger *slog.Logger
}

// ErrUnauthenticated is what Config.Auth returns for missing or wrong credentials.
var ErrUnauthenticated = errors.New("admin: invalid username-password pair or user is disabled")

// openPaths are the endpoints Config.Auth does not guard: Prometheus scrapes /metrics and
// load balancers probe /healthz without credentials, and neither changes anything.
var openPaths = map[string]bool{"/metrics": true, "/healthz": true}

// guard wraps h with cfg.Auth's check (see Config.Auth).
func (cfg *Config) guard(h http.Handler) http.Handler {
	if cfg.Auth == nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if openPaths[r.URL.Path] {
			h.ServeHTTP(w, r)
			return
		}
		user, pass, ok := r.BasicAuth()
		switch err := cfg.Auth(user, pass, r.RemoteAddr); {
		case errors.Is(err, ErrUnauthenticated) && !ok:
			w.Header().Set("WWW-Authenticate", `Basic realm="kura admin", charset="UTF-8"`)
			http.Error(w, "authentication required: give a user allowed the admin category (kura admin --user NAME --password ...)\n", http.StatusUnauthorized)
		case errors.Is(err, ErrUnauthenticated):
			w.Header().Set("WWW-Authenticate", `Basic realm="kura admin", charset="UTF-8"`)
			http.Error(w, err.Error()+"\n", http.StatusUnauthorized)
		case err != nil:
			http.Error(w, err.Error()+"\n", http.StatusForbidden)
		default:
			h.ServeHTTP(w, r)
		}
	})
}

// Server serves /metrics, /healthz, /cluster (ClusterStatus as JSON), /tiers
// (TiersStatus as JSON), /rebuild (POST: refill this replica from its peers), /repair
// (POST: repair this node's ranges with their other replicas; GET: its status; DELETE:
// stop it), /topology
// (POST: a membership change),
// /debug/store (the engine's report of its store, as text) and /debug/pprof.
type Server struct {
	srv *http.Server
	ln  net.Listener
}

// Serve starts serving cfg's endpoints on ln, in a goroutine of its own, until Close.
func Serve(ln net.Listener, cfg Config) *Server {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(cfg.Registry, promhttp.HandlerOpts{Registry: cfg.Registry}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if cfg.Draining() {
			http.Error(w, "draining\n", http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("/cluster", cfg.serveCluster)
	mux.HandleFunc("/tiers", cfg.serveTiers)
	mux.HandleFunc("/rebuild", cfg.serveRebuild)
	mux.HandleFunc("/repair", cfg.serveRepair)
	mux.HandleFunc("/topology", cfg.serveTopology)
	mux.HandleFunc("/debug/store", cfg.serveStore)
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	s := &Server{srv: &http.Server{Handler: cfg.guard(mux), ReadHeaderTimeout: 10 * time.Second}, ln: ln}
	go func() {
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			cfg.Logger.Error("admin listener failed", "err", err)
		}
	}()
	return s
}

// Addr is the address the server listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops the server, waiting up to ctx for requests in flight.
func (s *Server) Close(ctx context.Context) error { return s.srv.Shutdown(ctx) }

const notClustered = "not in cluster mode (start with --gossip-listen)\n"

// writeJSON answers v as JSON.
func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// serveCluster answers /cluster.
func (cfg *Config) serveCluster(w http.ResponseWriter, _ *http.Request) {
	st, ok := cfg.Cluster()
	if !ok {
		http.Error(w, notClustered, http.StatusNotFound)
		return
	}
	writeJSON(w, st)
}

// serveRebuild starts a rebuild of this node's replica from its peers (POST).
func (cfg *Config) serveRebuild(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST to start a rebuild\n", http.StatusMethodNotAllowed)
		return
	}
	ok, err := cfg.Rebuild()
	switch {
	case !ok:
		http.Error(w, notClustered, http.StatusNotFound)
	case err != nil:
		http.Error(w, err.Error()+"\n", http.StatusConflict)
	default:
		w.Write([]byte("rebuilding: the node serves no reads until it has pulled its ranges from its peers\n"))
	}
}

// serveStore answers /debug/store (`kura admin store`) with the engine's report of its
// store (engine.Reporter) as text, or 404 when the engine has none.
func (cfg *Config) serveStore(w http.ResponseWriter, _ *http.Request) {
	r, ok := cfg.Engine.(engine.Reporter)
	if !ok {
		http.Error(w, fmt.Sprintf("the %s engine has no store report\n", cfg.Engine.Name()), http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = io.WriteString(w, r.Report())
}
