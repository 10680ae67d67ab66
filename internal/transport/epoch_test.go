package transport

import (
	"context"
	"encoding/binary"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// epochNode is a node's side of the epoch hooks, as a node wires them: an atomic epoch and
// an observer that records what it is given (a node's records the largest and pokes).
type epochNode struct {
	t     *testing.T
	epoch atomic.Uint64
	mu    sync.Mutex
	seen  []uint64
}

func newEpochNode(t *testing.T, epoch uint64) *epochNode {
	n := &epochNode{t: t}
	n.epoch.Store(epoch)
	return n
}

func (n *epochNode) observe(e uint64) {
	if e == 0 {
		n.t.Error("ObserveEpoch was given 0")
	}
	n.mu.Lock()
	n.seen = append(n.seen, e)
	n.mu.Unlock()
}

// observed returns the distinct epochs observed so far.
func (n *epochNode) observed() []uint64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Compact(slices.Clone(n.seen))
}

func (n *epochNode) client(cfg ClientConfig) ClientConfig {
	cfg.Epoch, cfg.ObserveEpoch = n.epoch.Load, n.observe
	return cfg
}

func (n *epochNode) server(cfg ServerConfig) ServerConfig {
	cfg.Epoch, cfg.ObserveEpoch = n.epoch.Load, n.observe
	return cfg
}

func refuseAll(uint16) bool { return true }

// epochHandler answers with the request's epoch (RequestEpoch), 8 bytes, and counts its
// calls.
type epochHandler struct{ calls atomic.Int32 }

func (h *epochHandler) Handle(ctx context.Context, _ uint16, _ []byte) ([]byte, error) {
	h.calls.Add(1)
	return binary.BigEndian.AppendUint64(nil, RequestEpoch(ctx)), nil
}

// callEpoch makes a call to an epochHandler and returns the epoch its handler saw.
func callEpoch(t *testing.T, c *Client, method uint16) uint64 {
	t.Helper()
	resp, err := c.Call(context.Background(), method, nil)
	if err != nil || len(resp) != 8 {
		t.Fatalf("call %d: %x, %v", method, resp, err)
	}
	return binary.BigEndian.Uint64(resp)
}

// Each side's epoch travels on its frames, read as they go out: the handler sees the
// request's, the client's hook the response's newer one and the server's hook the
// request's newer one (before the handler runs); an older or equal epoch, or 0, is not
// observed.
func TestEpochsTravelBothWaysAndNewerOnesAreObserved(t *testing.T) {
	server, client := newEpochNode(t, 9), newEpochNode(t, 5)
	h := &epochHandler{}
	ts := startServer(t, h, server.server(ServerConfig{}))
	c := newClient(t, ts.addr, client.client(ClientConfig{}))
	if got := callEpoch(t, c, 1); got != 5 {
		t.Fatalf("the handler saw epoch %d, want the client's 5", got)
	}
	if got := client.observed(); !slices.Equal(got, []uint64{9}) {
		t.Fatalf("the client observed %v, want the server's 9", got)
	}
	if got := server.observed(); len(got) != 0 {
		t.Fatalf("the server observed %v from an older client", got)
	}

	// The client catches up and overtakes; the server learns of it before the handler
	// runs, and serves the request.
	client.epoch.Store(12)
	sawObserved := make(chan []uint64, 1)
	ts2 := startServer(t, HandlerFunc(func(ctx context.Context, _ uint16, _ []byte) ([]byte, error) {
		sawObserved <- server.observed()
		return nil, nil
	}), server.server(ServerConfig{RefuseStaleEpoch: refuseAll}))
	if _, err := newClient(t, ts2.addr, client.client(ClientConfig{})).Call(context.Background(), 1, nil); err != nil {
		t.Fatal(err)
	}
	if got := <-sawObserved; !slices.Equal(got, []uint64{12}) {
		t.Fatalf("when the handler ran the server had observed %v, want 12", got)
	}
	if got := callEpoch(t, c, 1); got != 12 {
		t.Fatalf("after the client's epoch changed the handler saw %d, want 12", got)
	}
	if got := client.observed(); !slices.Equal(got, []uint64{9}) {
		t.Fatalf("the client ahead observed %v, want only the 9 of before", got)
	}

	// Epoch 0 on either side is sent and never observed (observe fails the test on 0).
	zero := newEpochNode(t, 0)
	ts3 := startServer(t, h, zero.server(ServerConfig{RefuseStaleEpoch: refuseAll}))
	c3 := newClient(t, ts3.addr, zero.client(ClientConfig{}))
	if got := callEpoch(t, c3, 1); got != 0 {
		t.Fatalf("a client at epoch 0: the handler saw %d", got)
	}
	if got := zero.observed(); len(got) != 0 {
		t.Fatalf("nodes at epoch 0 observed %v", got)
	}
}

// A request planned at an older epoch than the server's is refused, with the server's
// epoch, and its handler is not called; the client has observed that epoch when Call
// returns, and once caught up it is served on the same connection. An equal or newer
// epoch, or 0, is served.
func TestAStaleRequestIsRefusedWithTheServersEpochAndNotHandled(t *testing.T) {
	server, client := newEpochNode(t, 9), newEpochNode(t, 5)
	h := &epochHandler{}
	ts := startServer(t, h, server.server(ServerConfig{RefuseStaleEpoch: refuseAll}))
	c := newClient(t, ts.addr, client.client(ClientConfig{}))

	_, err := c.Call(context.Background(), 1, []byte("write"))
	var se *StaleEpochError
	if !errors.As(err, &se) || se.Epoch != 9 || !errors.Is(err, ErrStaleEpoch) {
		t.Fatalf("a call at epoch 5 to a server at 9 returned %v, want a *StaleEpochError at 9", err)
	}
	if e, ok := IsStaleEpoch(err); !ok || e != 9 {
		t.Fatalf("IsStaleEpoch = %d, %v", e, ok)
	}
	var re *RemoteError
	if errors.As(err, &re) {
		t.Fatalf("the refusal is also a *RemoteError %v: a caller would take it for a handler's failure", re)
	}
	if n := h.calls.Load(); n != 0 {
		t.Fatalf("the handler ran %d times for a refused request", n)
	}
	if got := client.observed(); !slices.Contains(got, 9) {
		t.Fatalf("Call returned the refusal before the client observed 9 (observed %v)", got)
	}
	done := make(chan error, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c.Go(ctx, 1, nil, func(_ []byte, err error) { done <- err })
	if e, ok := IsStaleEpoch(<-done); !ok || e != 9 {
		t.Fatalf("Go at a stale epoch: IsStaleEpoch = %d, %v", e, ok)
	}

	for _, e := range []uint64{9, 10, 0} {
		client.epoch.Store(e)
		if got := callEpoch(t, c, 1); got != e {
			t.Fatalf("a call at epoch %d: the handler saw %d", e, got)
		}
	}
	if n := h.calls.Load(); n != 3 {
		t.Fatalf("the handler ran %d times, want 3", n)
	}
	if got := server.observed(); !slices.Equal(got, []uint64{10}) {
		t.Fatalf("the server observed %v, want the newer 10 only", got)
	}
}

// RefuseStaleEpoch is asked per method: a method it exempts (the metadata log's, which a
// node behind uses to catch up) is served at any epoch.
func TestRefuseStaleEpochExemptsTheMethodsItSays(t *testing.T) {
	const write, metaPull = 1, 9
	server, client := newEpochNode(t, 9), newEpochNode(t, 5)
	var asked atomic.Int32
	h := &epochHandler{}
	ts := startServer(t, h, server.server(ServerConfig{RefuseStaleEpoch: func(m uint16) bool {
		asked.Add(1)
		return m != metaPull
	}}))
	c := newClient(t, ts.addr, client.client(ClientConfig{}))
	if got := callEpoch(t, c, metaPull); got != 5 {
		t.Fatalf("the exempt method's handler saw epoch %d", got)
	}
	if _, err := c.Call(context.Background(), write, nil); !errors.Is(err, ErrStaleEpoch) {
		t.Fatalf("a stale write returned %v", err)
	}
	client.epoch.Store(9)
	callEpoch(t, c, write) // served: not stale, and the predicate is not asked
	if n := h.calls.Load(); n != 2 {
		t.Fatalf("the handler ran %d times, want 2", n)
	}
	if n := asked.Load(); n != 2 {
		t.Fatalf("the predicate was asked %d times, want for the 2 stale calls only", n)
	}
}

// The handler's context carries its request's epoch with or without a deadline, through
// contexts the handler derives from it, and after the handler returned: contexts are never
// reused for later requests.
func TestRequestEpochIsTheRequestsOwn(t *testing.T) {
	type key struct{}
	client := newEpochNode(t, 0)
	var mu sync.Mutex
	kept := map[uint64]context.Context{}
	ts := startServer(t, HandlerFunc(func(ctx context.Context, _ uint16, _ []byte) ([]byte, error) {
		derived := context.WithValue(ctx, key{}, 1)
		mu.Lock()
		kept[RequestEpoch(derived)] = ctx
		mu.Unlock()
		return nil, nil
	}), ServerConfig{}) // a server needs no epoch of its own for its handlers to read them
	c := newClient(t, ts.addr, client.client(ClientConfig{}))
	const calls = 3*requestCtxBatch + 5 // more than one batch of contexts
	for i := range uint64(calls) {
		ctx, cancel := context.Background(), context.CancelFunc(func() {})
		if i%2 == 0 { // with a deadline, the handler's context is a lazy one
			ctx, cancel = context.WithTimeout(ctx, time.Minute)
		}
		// Each call at its own epoch: the epoch is read as the frame goes out, so the
		// calls are made one at a time.
		client.epoch.Store(i + 1)
		_, err := c.Call(ctx, 1, nil)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(kept) != calls {
		t.Fatalf("the handlers saw %d distinct epochs in %d calls", len(kept), calls)
	}
	for e, ctx := range kept {
		if got := RequestEpoch(ctx); got != e {
			t.Fatalf("a context kept from the request at epoch %d now says %d", e, got)
		}
	}
	if got := RequestEpoch(context.Background()); got != 0 {
		t.Fatalf("RequestEpoch of a context that is no handler's = %d", got)
	}
}

// What a peer that predates epochs sees on the wire, written and read raw: a refusal is a
// version 2 error frame stamped with the server's epoch, whose code an older client turns
// into a plain *RemoteError; a request with epoch 0 is served, and its response stamped.
func TestAStaleEpochRefusalOnTheWire(t *testing.T) {
	server := newEpochNode(t, 9)
	ts := startServer(t, echo, server.server(ServerConfig{RefuseStaleEpoch: refuseAll}))
	raw := dialRaw(t, ts.addr) // speaks version 2 without a hello: the server reads it anyway
	raw.Write(AppendFrame(nil, Frame{Type: TypeRequest, Method: 3, ID: 1, Epoch: 4, Payload: []byte("w")}))
	f, err := raw.dec.Next()
	if err != nil || f.Version != Version || f.Type != TypeError || f.ID != 1 || f.Epoch != 9 {
		t.Fatalf("a stale request was answered with %+v, %v; want a version 2 error frame at epoch 9", f, err)
	}
	old := parseErrorPayload(f.Payload) // what a client that predates epochs makes of it
	if old.Code != CodeStaleEpoch || !strings.Contains(old.Message, "epoch 4") || !strings.Contains(old.Message, "epoch 9") {
		t.Fatalf("an old client reads the refusal as %v", old)
	}
	raw.Write(AppendFrame(nil, Frame{Type: TypeRequest, Method: 3, ID: 2, Payload: []byte("w")}))
	if f, err = raw.dec.Next(); err != nil || f.Type != TypeResponse || f.ID != 2 || f.Epoch != 9 {
		t.Fatalf("a request at epoch 0 was answered with %+v, %v; want a response at epoch 9", f, err)
	}
	if got := server.observed(); len(got) != 0 {
		t.Fatalf("the server observed %v", got)
	}
}

// Mixed versions: a node with epochs and a peer that speaks version 1 (no room for an
// epoch: both sides see 0), either way round. Calls are served, nothing is refused and
// nothing observed.
func TestEpochsWithAVersion1Peer(t *testing.T) {
	node := newEpochNode(t, 9)

	// A new client at an older epoch than the server, which speaks version 1: the
	// server written from the version 1 layout, then this package's configured as one.
	addr, _ := oldServer(t)
	resp, err := newClient(t, addr, node.client(ClientConfig{})).Call(context.Background(), 7, []byte("x"))
	if err != nil || string(resp) != "x" {
		t.Fatalf("a call to a version 1 server: %q, %v", resp, err)
	}
	h := &epochHandler{}
	ts := startServer(t, h, ServerConfig{MaxVersion: Version1, Epoch: func() uint64 { return 20 },
		ObserveEpoch: node.observe, RefuseStaleEpoch: refuseAll})
	if got := callEpoch(t, newClient(t, ts.addr, node.client(ClientConfig{})), 1); got != 0 {
		t.Fatalf("a version 1 server's handler saw epoch %d", got)
	}

	// A client that speaks version 1 to a new server at a newer epoch that refuses stale
	// requests.
	ts = startServer(t, h, node.server(ServerConfig{RefuseStaleEpoch: refuseAll}))
	if got := callEpoch(t, newClient(t, ts.addr, ClientConfig{MaxVersion: Version1}), 1); got != 0 {
		t.Fatalf("a version 1 client's request reached the handler at epoch %d", got)
	}
	if got := node.observed(); len(got) != 0 {
		t.Fatalf("epochs observed across version 1: %v", got)
	}
}

// Mixed versions: a node with epochs and a version 2 peer that predates them. Such a peer
// writes epoch 0 and ignores the field (no version 2 build ever checked it: parseHeader
// has read it since version 2 began, and nothing acted on it), which is what this
// package does without Epoch, ObserveEpoch and RefuseStaleEpoch, so a peer configured
// without them stands for it here; the raw frames show the field written and ignored.
func TestEpochsWithAVersion2PeerThatPredatesThem(t *testing.T) {
	node := newEpochNode(t, 9)
	h := &epochHandler{}

	// A new client to an older server: served at any epoch, a response stamped 0, nothing
	// observed.
	ts := startServer(t, h, ServerConfig{})
	c := newClient(t, ts.addr, node.client(ClientConfig{}))
	callEpoch(t, c, 1)
	if cn := c.cur.Load(); cn == nil || cn.version != Version {
		t.Fatal("the connection does not speak version 2")
	}
	raw := dialRaw(t, ts.addr)
	raw.Write(AppendFrame(nil, Frame{Type: TypeRequest, Method: 1, ID: 1, Epoch: 3}))
	if f, err := raw.dec.Next(); err != nil || f.Type != TypeResponse || f.Epoch != 0 {
		t.Fatalf("an older server answered a request at epoch 3 with %+v, %v; want a response stamped 0", f, err)
	}

	// An older client to a new server that refuses stale requests: its requests carry
	// epoch 0 and are served; the responses' epoch is ignored.
	ts = startServer(t, h, node.server(ServerConfig{RefuseStaleEpoch: refuseAll}))
	c = newClient(t, ts.addr, ClientConfig{})
	if got := callEpoch(t, c, 1); got != 0 {
		t.Fatalf("an older client's request reached the handler at epoch %d", got)
	}
	if cn := c.cur.Load(); cn == nil || cn.version != Version {
		t.Fatal("the connection does not speak version 2")
	}
	if got := node.observed(); len(got) != 0 {
		t.Fatalf("epochs observed with a peer that sends none: %v", got)
	}
	if n := h.calls.Load(); n != 3 {
		t.Fatalf("the handlers ran %d times, want 3 (nothing refused)", n)
	}
}
