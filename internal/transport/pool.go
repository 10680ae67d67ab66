package transport

import "sync"

// Pool keeps one Client per peer, named by the caller (a node ID), and replaces a peer's
// client when the peer's address changes (it restarted on another port). Safe for
// concurrent use.
type Pool struct {
	cfg ClientConfig

	mu      sync.Mutex
	clients map[string]*Client
	retired Stats // what replaced clients had written, so that the pool's counts stay monotonic
}

// NewPool returns an empty pool whose clients use cfg.
func NewPool(cfg ClientConfig) *Pool { return &Pool{cfg: cfg, clients: map[string]*Client{}} }

// Get returns the client for peer name at addr, creating it (without dialing) if there is
// none or the peer's address changed.
func (p *Pool) Get(name, addr string) (*Client, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if cl, ok := p.clients[name]; ok && cl.Addr() == addr {
		return cl, nil
	} else if ok {
		cl.Close() // the peer moved
		s := cl.Stats()
		p.retired.FramesWritten += s.FramesWritten
		p.retired.Flushes += s.Flushes
	}
	cl, err := NewClient(addr, p.cfg)
	if err != nil {
		return nil, err
	}
	p.clients[name] = cl
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
