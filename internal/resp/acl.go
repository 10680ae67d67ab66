package resp

import (
	"errors"
	"net"
	"strings"
	"time"

	"github.com/kuradb/kura/internal/acl"
)

// Users and permissions (package acl holds the rules): a session is authenticated as a
// user, resolved again from the registry's current snapshot whenever it changed, and
// every command is checked against that user before it runs (Handler.permit), in Redis's
// order: NOAUTH, then NOPERM for the command, then NOPERM for its keys.

// aclDenial is why a user may not run a command: reason is "" when it may, else
// acl.ReasonCommand (object: the command's name) or acl.ReasonKey (object: the key).
type aclDenial struct{ reason, object string }

// aclID returns the catalog entry that decides whether c (with args) may run, and the
// name NOPERM shows: "acl|whoami" for a subcommand with an entry of its own, else c's,
// or "container|sub" for another subcommand, as Redis names them.
func (h *Handler) aclID(c *command, args [][]byte) (int, string) {
	if id := h.aclIDs[c.id]; id != aclContainer || len(args) < 2 {
		return id, c.name
	}
	sub := strings.ToLower(string(args[1]))
	id, _ := h.acl.Catalog().ID(c.name, sub)
	return id, c.name + "|" + sub
}

// aclContainer marks a container command in Handler.aclIDs: its subcommand decides.
const aclContainer = -2

// check returns why u may not run c with args, or the zero aclDenial.
func (h *Handler) check(u *acl.User, c *command, args [][]byte) aclDenial {
	id, name := h.aclID(c, args)
	if !u.CanRun(id) {
		return aclDenial{acl.ReasonCommand, name}
	}
	if c.firstKey == 0 || u.AllKeys() {
		return aclDenial{}
	}
	access := keyAccess(c)
	last := c.lastKey
	if last < 0 {
		last += len(args)
	}
	for i := c.firstKey; i <= last && i < len(args); i += max(c.step, 1) {
		if !u.CanAccessKey(args[i], access) {
			return aclDenial{acl.ReasonKey, string(args[i])}
		}
	}
	return aclDenial{}
}

// permit checks the session's user may run c: ok, or the NOPERM reply (and an ACL LOG
// entry). context is "toplevel" or "multi", as ACL LOG names where it happened.
func (h *Handler) permit(dst []byte, c *command, args [][]byte, s *Session, context string) ([]byte, bool) {
	u, ok := h.sessionUser(s)
	if !ok || u == nil {
		return appendErr(dst, errNoAuth), false
	}
	d := h.check(u, c, args)
	switch d.reason {
	case "":
		return dst, true
	case acl.ReasonCommand:
		dst = appendErrf(dst, "NOPERM this user has no permissions to run the '%s' command", d.object)
	default:
		dst = appendErr(dst, "NOPERM this user has no permissions to access one of the keys used as arguments")
	}
	s.lastCmd.Store(h.commandName(c, args)) // the entry's cmd= is the denied command, as Redis's
	h.logDenial(s, d.reason, context, d.object, u.Name)
	return dst, false
}

// permitQueued checks a transaction's commands again at EXEC, in case the user's rules
// changed since they were queued. Redis then refuses only the commands no longer allowed
// and runs the others; kura refuses the whole transaction, which runs as one unit at a
// key's leader.
func (h *Handler) permitQueued(dst []byte, cmds [][][]byte, s *Session) ([]byte, bool) {
	u, ok := h.sessionUser(s)
	if !ok || u == nil {
		return appendErr(dst, errNoAuth), false
	}
	for _, args := range cmds {
		c := h.lookup(args[0])
		if c == nil || c.flags&flagNoAuth != 0 {
			continue
		}
		d := h.check(u, c, args)
		if d.reason == "" {
			continue
		}
		h.logDenial(s, d.reason, "multi", d.object, u.Name)
		why := "no permission to execute the '" + d.object + "' command"
		if d.reason == acl.ReasonKey {
			why = "no permission to touch the specified keys"
		}
		return appendErr(dst, "NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. This command is no longer allowed for the following reason: "+why), false
	}
	return dst, true
}

// logDenial adds an ACL LOG entry with s's CLIENT INFO line.
func (h *Handler) logDenial(s *Session, reason, context, object, user string) {
	var b strings.Builder
	h.clientLine(&b, s, h.cfg.Ticks())
	h.acl.Log().Add(acl.LogEntry{Reason: reason, Context: context, Object: object,
		Username: user, ClientInfo: b.String(), Updated: h.ticks()})
}

// ticks is Config.Ticks as a duration, the clock of the failed-AUTH limiter and ACL LOG.
func (h *Handler) ticks() time.Duration { return time.Duration(h.cfg.Ticks()) * time.Microsecond }

// sessionUser returns s's user as the current snapshot has it. ok is false when s was
// authenticated as a user that has since been deleted or disabled; u is nil when s is not
// authenticated.
func (h *Handler) sessionUser(s *Session) (u *acl.User, ok bool) {
	if s.username == "" {
		return nil, true
	}
	snap := h.acl.Snapshot()
	if snap != s.snap {
		s.snap, s.user = snap, snap.User(s.username)
		if s.user != nil && !s.user.Enabled {
			s.user = nil
		}
	}
	return s.user, s.user != nil
}

// setUser makes s authenticated as u (nil: not authenticated).
func (s *Session) setUser(u *acl.User, snap *acl.Snapshot) {
	name := ""
	if u != nil {
		name = u.Name
	}
	s.setInfo(func() { s.username = name })
	s.user, s.snap = u, snap
}

// startUser is the user a new connection is authenticated as: the default user when it
// is on and needs no password, else none.
func (h *Handler) startUser(s *Session) {
	snap := h.acl.Snapshot()
	if u := snap.User(acl.DefaultUser); u != nil && u.Enabled && u.NoPass {
		s.username, s.user, s.snap = u.Name, u, snap
	}
}

// authenticate checks a password for user (nil: the default user) and authenticates s,
// or returns the error reply and ACL LOG entry. object is the command as sent ("AUTH").
func (h *Handler) authenticate(dst []byte, s *Session, user, pass []byte, object string) ([]byte, bool) {
	name := acl.DefaultUser
	if user != nil {
		name = string(user)
	}
	snap := h.acl.Snapshot()
	u, err := h.acl.Authenticate(name, string(pass), clientIP(s.addr), h.ticks())
	var le *acl.LimitError
	switch {
	case errors.As(err, &le):
		return appendErr(dst, "ERR "+le.Reply()), false
	case err != nil:
		h.logDenial(s, acl.ReasonAuth, "toplevel", object, name)
		return appendErr(dst, errWrongPass), false
	}
	s.setUser(u, snap)
	if h.acl.Snapshot() != snap {
		s.snap = nil // changed meanwhile: sessionUser resolves the user again
	}
	return dst, true
}

// clientIP is the address the failed-AUTH limiter counts by: the IP without the port.
func clientIP(addr string) string {
	if host, _, err := net.SplitHostPort(addr); err == nil {
		return host
	}
	return addr
}

// closeRevoked closes the connections of users that snap deleted or disabled (Redis keeps
// disabled users' connections; kura does not). A session in the middle of the ACL command
// that revoked its own user replies first (see Handler.commit). Runs in the registry's
// subscriber callback.
func (h *Handler) closeRevoked(snap *acl.Snapshot) {
	for _, c := range h.clientList.list() {
		c.info.Lock()
		name := c.username
		c.info.Unlock()
		if name == "" || c.aclChanging.Load() {
			continue
		}
		if u := snap.User(name); u == nil || !u.Enabled {
			h.kill(c, nil)
		}
	}
}
