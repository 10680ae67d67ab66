package transport

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"runtime"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/kuradb/kura/internal/hlc"
)

// BenchmarkPing compares a ping (the payload echoed back) through this package and
// through gRPC, both over loopback TCP in this process, case by case in the same run:
//
//	go test -run xxx -bench Ping -benchtime 2s -count 3 ./internal/transport/
//
// callers=1 is one goroutine calling in a loop (latency-bound); callers=16 runs
// b.RunParallel with 16 goroutines sharing one client (one connection each for kura and
// gRPC), which is where write coalescing counts. Both servers copy the request into a
// fresh response, and both clients return a fresh slice. kura stamps every frame with a
// clock and a ring epoch and observes the peer's, as nodes do (frame version 2, both nodes
// at the same epoch, stale requests refused); kura-v1 speaks version 1, without clocks or
// epochs, which is what the stamps cost.
func BenchmarkPing(b *testing.B) {
	for _, size := range []int{16, 1024} {
		for _, callers := range []int{1, 16} {
			name := fmt.Sprintf("payload=%d/callers=%d", size, callers)
			b.Run("kura/"+name, func(b *testing.B) {
				runPing(b, callers, size, kuraPinger(b, Version))
			})
			b.Run("kura-v1/"+name, func(b *testing.B) {
				runPing(b, callers, size, kuraPinger(b, Version1))
			})
			b.Run("grpc/"+name, func(b *testing.B) {
				runPing(b, callers, size, grpcPinger(b))
			})
		}
	}
}

type pinger func(ctx context.Context, req []byte) ([]byte, error)

func runPing(b *testing.B, callers, size int, ping pinger) {
	req := bytes.Repeat([]byte{'p'}, size)
	check := func(resp []byte, err error) {
		if err != nil || len(resp) != size {
			b.Fatalf("ping: %d bytes, %v", len(resp), err)
		}
	}
	check(ping(context.Background(), req)) // dial and warm up
	b.ReportAllocs()
	b.ResetTimer()
	if callers == 1 {
		for range b.N {
			check(ping(context.Background(), req))
		}
	} else {
		// RunParallel starts parallelism × GOMAXPROCS goroutines.
		b.SetParallelism(max(1, callers/runtime.GOMAXPROCS(0)))
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				resp, err := ping(context.Background(), req)
				if err != nil || len(resp) != size {
					b.Errorf("ping: %d bytes, %v", len(resp), err)
					return
				}
			}
		})
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
}

func kuraPinger(b *testing.B, version int) pinger {
	// The caller takes a timestamp per call, as a coordinator does for a write, in both
	// versions; in version 2 the connections carry it.
	now := hlc.New(nil)
	scfg, ccfg := ServerConfig{MaxVersion: version}, ClientConfig{MaxVersion: version}
	if version != Version1 {
		scfg.Clock, ccfg.Clock = hlc.New(nil), now
		// Two nodes at the same epoch, hooked up as a node's are: an atomic load, a
		// record of the largest epoch seen, every method refused when stale.
		var serverEpoch, clientEpoch, seen atomic.Uint64
		serverEpoch.Store(7)
		clientEpoch.Store(7)
		observe := func(e uint64) {
			for old := seen.Load(); e > old && !seen.CompareAndSwap(old, e); old = seen.Load() {
			}
		}
		scfg.Epoch, scfg.ObserveEpoch = serverEpoch.Load, observe
		scfg.RefuseStaleEpoch = func(uint16) bool { return true }
		ccfg.Epoch, ccfg.ObserveEpoch = clientEpoch.Load, observe
	}
	s, err := NewServer(HandlerFunc(func(_ context.Context, _ uint16, p []byte) ([]byte, error) {
		return bytes.Clone(p), nil
	}), scfg)
	if err != nil {
		b.Fatal(err)
	}
	ln := listenLoopback(b)
	go s.Serve(ln)
	c, err := NewClient(ln.Addr().String(), ccfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		c.Close()
		s.Close()
	})
	return func(ctx context.Context, req []byte) ([]byte, error) {
		now.Now()
		return c.Call(ctx, 1, req)
	}
}

func listenLoopback(b testing.TB) net.Listener {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	return ln
}

// rawCodec lets gRPC carry raw bytes (a *[]byte) without protobuf, so that both sides of
// the comparison move the same opaque payload.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) { return *v.(*[]byte), nil }

// Unmarshal copies: gRPC may reuse data once Unmarshal returns.
func (rawCodec) Unmarshal(data []byte, v any) error {
	*v.(*[]byte) = bytes.Clone(data)
	return nil
}

func (rawCodec) Name() string { return "kura-raw" }

// pingService is a hand-written service descriptor (no protoc): one unary method that
// echoes its request.
var pingService = grpc.ServiceDesc{
	ServiceName: "kura.bench.Ping",
	HandlerType: (*any)(nil),
	Methods: []grpc.MethodDesc{{
		MethodName: "Ping",
		Handler: func(_ any, _ context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
			var in []byte
			if err := dec(&in); err != nil {
				return nil, err
			}
			return &in, nil // Unmarshal already copied
		},
	}},
}

func grpcPinger(b *testing.B) pinger {
	s := grpc.NewServer(grpc.ForceServerCodec(rawCodec{}))
	s.RegisterService(&pingService, struct{}{})
	ln := listenLoopback(b)
	go s.Serve(ln)
	cc, err := grpc.NewClient("passthrough:///"+ln.Addr().String(),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		cc.Close()
		s.Stop()
	})
	return func(ctx context.Context, req []byte) ([]byte, error) {
		var resp []byte
		err := cc.Invoke(ctx, "/kura.bench.Ping/Ping", &req, &resp, grpc.ForceCodec(rawCodec{}))
		return resp, err
	}
}
