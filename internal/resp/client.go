package resp

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// CLIENT LIST and CLIENT KILL see every connection: the handler keeps a registry of its
// sessions. A session is registered when it is created and leaves when the Server ends
// its connection (EndSession) or CLIENT KILL kills it. What another connection reads of a
// session is either set once at creation (addr, laddr, created), or written by the
// session's own goroutine under its info lock (name, library, protocol) or atomically
// (the last command and when it started).

// clientRegistry is the handler's open sessions, by ID.
type clientRegistry struct {
	mu       sync.Mutex
	sessions map[int64]*Session
}

func (c *clientRegistry) add(s *Session) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sessions == nil {
		c.sessions = map[int64]*Session{}
	}
	c.sessions[s.id] = s
}

// remove unregisters s and reports whether it was registered.
func (c *clientRegistry) remove(s *Session) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sessions[s.id] != s {
		return false
	}
	delete(c.sessions, s.id)
	return true
}

// list returns the registered sessions by increasing ID.
func (c *clientRegistry) list() []*Session {
	c.mu.Lock()
	out := make([]*Session, 0, len(c.sessions))
	for _, s := range c.sessions {
		out = append(out, s)
	}
	c.mu.Unlock()
	slices.SortFunc(out, func(a, b *Session) int { return cmp.Compare(a.id, b.id) })
	return out
}

func (c *clientRegistry) byID(id int64) *Session {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sessions[id]
}

// NewConnSession returns the session of a new client connection from addr to laddr (as
// CLIENT LIST shows them); closeConn closes the connection, for CLIENT KILL, and must be
// safe to call from any goroutine, more than once. The driver calls EndSession when the
// connection ends.
func (h *Handler) NewConnSession(addr, laddr string, closeConn func()) *Session {
	s := &Session{id: h.nextID.Add(1), proto: resp2,
		addr: addr, laddr: laddr, created: h.cfg.Ticks(), closeConn: closeConn}
	h.startUser(s)
	s.lastSeen.Store(s.created)
	h.clientList.add(s)
	return s
}

// EndSession removes an ended connection's session from CLIENT LIST.
func (h *Handler) EndSession(s *Session) { h.clientList.remove(s) }

// userName is the user s is authenticated as, "" for none; safe from any goroutine.
func (s *Session) userName() string {
	s.info.Lock()
	defer s.info.Unlock()
	return s.username
}

// setInfo runs f, which changes what CLIENT LIST shows of s, under s's info lock.
func (s *Session) setInfo(f func()) {
	s.info.Lock()
	defer s.info.Unlock()
	f()
}

// clientLine appends s's line of CLIENT LIST (without its newline): Redis 7's fields
// that mean something in kura, in Redis's order. cmd is the session's last command
// ("client|list" when s is the caller).
func (h *Handler) clientLine(b *strings.Builder, s *Session, now int64) {
	s.info.Lock()
	name, libName, libVer, p, user := s.name, s.libName, s.libVer, s.proto, s.username
	s.info.Unlock()
	cmd := "NULL"
	if c := s.lastCmd.Load(); c != nil {
		cmd = *c
	}
	if user == "" {
		user = "default" // as Redis shows connections that have not authenticated yet
	}
	i64 := func(n int64) string { return strconv.FormatInt(n, 10) }
	b.WriteString("id=" + i64(s.id) + " addr=" + s.addr + " laddr=" + s.laddr + " name=" + name)
	b.WriteString(" age=" + i64(max(now-s.created, 0)/microsPerSecond))
	b.WriteString(" idle=" + i64(max(now-s.lastSeen.Load(), 0)/microsPerSecond))
	b.WriteString(" flags=N db=0 sub=0 psub=0 ssub=0 cmd=" + cmd + " user=" + user + " redir=-1")
	b.WriteString(" resp=" + strconv.Itoa(int(p)) + " lib-name=" + libName + " lib-ver=" + libVer)
}

// CLIENT INFO: the caller's line of CLIENT LIST.
func clientInfo(h *Handler, dst []byte, _ [][]byte, s *Session) []byte {
	var b strings.Builder
	h.clientLine(&b, s, h.cfg.Ticks())
	b.WriteByte('\n')
	return s.proto.appendVerbatim(dst, b.String())
}

// clientType is a client type CLIENT LIST and KILL filter on. Every kura client is normal.
type clientType int8

const (
	typeAny clientType = iota
	typeNormal
	typeOther // master, replica, pubsub: kura has none
)

// parseClientType parses Redis's client type names, ok=false for others.
func parseClientType(b []byte) (clientType, bool) {
	switch {
	case equalFold(b, "normal"):
		return typeNormal, true
	case equalFold(b, "master"), equalFold(b, "slave"), equalFold(b, "replica"), equalFold(b, "pubsub"):
		return typeOther, true
	}
	return typeAny, false
}

// CLIENT LIST [TYPE type | ID id [id ...]]
func clientList(h *Handler, dst []byte, args [][]byte, s *Session) []byte {
	var sessions []*Session
	switch {
	case len(args) == 2:
		sessions = h.clientList.list()
	case len(args) == 4 && equalFold(args[2], "type"):
		t, ok := parseClientType(args[3])
		if !ok {
			return appendErrf(dst, "ERR Unknown client type '%s'", sanitize(args[3]))
		}
		if t == typeNormal {
			sessions = h.clientList.list()
		}
	case len(args) > 3 && equalFold(args[2], "id"):
		for _, a := range args[3:] {
			id, ok := parseInt(a)
			if !ok {
				return appendErr(dst, "ERR Invalid client ID")
			}
			if c := h.clientList.byID(id); c != nil {
				sessions = append(sessions, c)
			}
		}
	default:
		return appendSyntaxErr(dst)
	}
	var b strings.Builder
	now := h.cfg.Ticks()
	for _, c := range sessions {
		h.clientLine(&b, c, now)
		b.WriteByte('\n')
	}
	return s.proto.appendVerbatim(dst, b.String())
}

// killFilter is CLIENT KILL's filters; the zero value matches every client.
type killFilter struct {
	id          int64
	typ         clientType
	addr, laddr []byte
	user        []byte
	skipMe      bool
}

func (f *killFilter) matches(c, caller *Session) bool {
	switch {
	case f.id != 0 && c.id != f.id,
		f.typ == typeOther,
		f.addr != nil && c.addr != string(f.addr),
		f.laddr != nil && c.laddr != string(f.laddr),
		f.user != nil && c.userName() != string(f.user),
		f.skipMe && c == caller:
		return false
	}
	return true
}

// CLIENT KILL ip:port, or CLIENT KILL <filter> <value> ... (ID, TYPE, USER, ADDR, LADDR,
// SKIPME): the first form replies OK or "No such client", the second the number of
// clients killed. A killed connection is closed at once; the caller's own, after its
// reply.
func clientKill(h *Handler, dst []byte, args [][]byte, s *Session) []byte {
	f := killFilter{skipMe: true}
	if len(args) == 3 {
		f = killFilter{addr: args[2]}
	} else if dst, ok := h.parseKillFilter(dst, args[2:], &f); !ok {
		return dst
	}
	killed := 0
	for _, c := range h.clientList.list() {
		if f.matches(c, s) && h.kill(c, s) {
			killed++
		}
	}
	if len(args) == 3 {
		if killed == 0 {
			return appendErr(dst, "ERR No such client")
		}
		return appendOK(dst)
	}
	return appendInt(dst, int64(killed))
}

// parseKillFilter parses CLIENT KILL's option-value pairs with Redis's checks and texts.
func (h *Handler) parseKillFilter(dst []byte, opts [][]byte, f *killFilter) ([]byte, bool) {
	for i := 0; i < len(opts); i += 2 {
		if i+1 >= len(opts) {
			return appendSyntaxErr(dst), false
		}
		o, v := opts[i], opts[i+1]
		switch {
		case equalFold(o, "id"):
			id, ok := parseInt(v)
			if !ok || id < 1 {
				return appendErr(dst, "ERR client-id should be greater than 0"), false
			}
			f.id = id
		case equalFold(o, "type"):
			t, ok := parseClientType(v)
			if !ok {
				return appendErrf(dst, "ERR Unknown client type '%s'", sanitize(v)), false
			}
			f.typ = t
		case equalFold(o, "user"):
			if h.acl.Snapshot().User(string(v)) == nil {
				return appendErrf(dst, "ERR No such user '%s'", sanitize(v)), false
			}
			f.user = v
		case equalFold(o, "addr"):
			f.addr = v
		case equalFold(o, "laddr"):
			f.laddr = v
		case equalFold(o, "skipme"):
			switch {
			case equalFold(v, "yes"):
				f.skipMe = true
			case equalFold(v, "no"):
				f.skipMe = false
			default:
				return appendSyntaxErr(dst), false
			}
		default:
			return appendSyntaxErr(dst), false
		}
	}
	return dst, true
}

// kill unregisters c and closes its connection: at once for another session, after the
// reply for the caller's own (QUIT's way). It reports false when c was already gone.
func (h *Handler) kill(c, caller *Session) bool {
	if !h.clientList.remove(c) {
		return false
	}
	if c == caller && caller != nil {
		c.quit = true
		return true
	}
	if c.closeConn != nil {
		c.closeConn()
	}
	return true
}
