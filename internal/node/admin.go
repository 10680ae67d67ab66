package node

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// adminServer serves /metrics, /healthz, /cluster (ClusterStatus as JSON), /tiers
// (TiersStatus as JSON), /rebuild (POST: refill this replica from its peers),
// /debug/store (the engine's report of its store, as text) and /debug/pprof on the admin
// address.
type adminServer struct {
	srv      *http.Server
	ln       net.Listener
	draining *atomic.Bool
}

func startAdmin(addr string, reg *prometheus.Registry, draining *atomic.Bool, cluster, tiers, rebuild, store http.HandlerFunc, log *slog.Logger) (*adminServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		// A draining node answers 503 so load balancers stop sending it clients while
		// in-flight requests finish.
		if draining.Load() {
			http.Error(w, "draining\n", http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("/cluster", cluster)
	mux.HandleFunc("/tiers", tiers)
	mux.HandleFunc("/rebuild", rebuild)
	mux.HandleFunc("/debug/store", store)
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	a := &adminServer{
		srv:      &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second},
		ln:       ln,
		draining: draining,
	}
	go func() {
		if err := a.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("admin listener failed", "err", err)
		}
	}()
	return a, nil
}

func (a *adminServer) addr() string { return a.ln.Addr().String() }

func (a *adminServer) close(ctx context.Context) error { return a.srv.Shutdown(ctx) }
