package transport

import "sync"

// Pool keeps one Client per peer, named by the caller (a node ID), and replaces a peer's
// client when the peer's address or host label changes (it restarted on another port).
// Safe for concurrent use.
type Pool struct {
	cfg ClientConfig

	mu      sync.Mutex
	clients map[string]*Client
	hosts   map[string]string // each client's peer's host label
	retired Stats             // what replaced clients had written, so that the pool's counts stay monotonic
}

// NewPool returns an empty pool whose clients use cfg.
func NewPool(cfg ClientConfig) *Pool {
	return &Pool{cfg: cfg, clients: map[string]*Client{}, hosts: map[string]string{}}
}

// Get returns the client for peer name at addr, on host (its host label, "" when
// unknown; see ClientConfig.DialHost), creating it (without dialing) if there is none or
// the peer's address or host changed.
func (p *Pool) Get(name, host, addr string) (*Client, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if cl, ok := p.clients[name]; ok && cl.Addr() == addr && p.hosts[name] == host {
		return cl, nil
	} else if ok {
		cl.Close() // the peer moved
		s := cl.Stats()
		p.retired.FramesWritten += s.FramesWritten
		p.retired.Flushes += s.Flushes
	}
	cfg := p.cfg
	if cfg.DialHost != nil {
		cfg.Dial = cfg.DialHost(host)
	}
	cl, err := NewClient(addr, cfg)
	if err != nil {
		delete(p.clients, name) // closed above, if it was there
		return nil, err
	}
	p.clients[name], p.hosts[name] = cl, host
	return cl, nil
}

// Stats sums what the pool's clients, present and replaced, have written.
func (p *Pool) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.retired
	for _, cl := range p.clients {
		cs := cl.Stats()
		s.FramesWritten += cs.FramesWritten
		s.Flushes += cs.Flushes
	}
	return s
}

// Offsets returns the estimate of each peer's clock against this node's (see
// Client.ClockOffset), by peer name, for the peers that have sent a stamped response.
func (p *Pool) Offsets() map[string]Offset {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]Offset, len(p.clients))
	for name, cl := range p.clients {
		if o, ok := cl.ClockOffset(); ok {
			out[name] = o
		}
	}
	return out
}

// Close closes every client; Get must not be called after.
func (p *Pool) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, cl := range p.clients {
		cl.Close()
	}
}
