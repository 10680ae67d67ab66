package resp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/kuradb/kura/internal/acl"
)

// ACL subcommand ... (see docs/design/acl.md). SETUSER, DELUSER and LOAD change the
// registry through Config.ACLCommit when it is set (a cluster replicates them), else
// directly.

// aclCommitTimeout bounds how long ACL SETUSER, DELUSER and LOAD wait for ACLCommit.
const aclCommitTimeout = 10 * time.Second

const errNoACLFile = "ERR This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration."

var aclSubcommands = []subcommand{
	{"setuser", -3, aclSetUser},
	{"getuser", 3, aclGetUser},
	{"deluser", -3, aclDelUser},
	{"list", 2, func(h *Handler, dst []byte, _ [][]byte, _ *Session) []byte {
		users := h.acl.Snapshot().Users()
		dst = appendArray(dst, len(users))
		for _, u := range users {
			dst = appendBulkString(dst, u.String())
		}
		return dst
	}},
	{"users", 2, func(h *Handler, dst []byte, _ [][]byte, _ *Session) []byte {
		users := h.acl.Snapshot().Users()
		dst = appendArray(dst, len(users))
		for _, u := range users {
			dst = appendBulkString(dst, u.Name)
		}
		return dst
	}},
	{"whoami", 2, func(_ *Handler, dst []byte, _ [][]byte, s *Session) []byte {
		return appendBulkString(dst, s.username)
	}},
	{"cat", -2, aclCat},
	{"log", -2, aclLog},
	{"genpass", -2, aclGenPass},
	{"dryrun", -4, aclDryRun},
	{"save", 2, aclSave},
	{"load", 2, aclLoad},
	{"help", 2, func(_ *Handler, dst []byte, _ [][]byte, _ *Session) []byte {
		return appendHelp(dst,
			"ACL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
			"CAT [<category>]", "    List all commands that belong to <category>, or all command categories",
			"    when no category is specified.",
			"DELUSER <username> [<username> ...]", "    Delete a list of users.",
			"DRYRUN <username> <command> [<arg> ...]", "    Returns whether the user can execute the given command without executing the command.",
			"GETUSER <username>", "    Get the user's details.",
			"GENPASS [<bits>]", "    Generate a secure 256-bit user password. The optional `bits` argument can",
			"    be used to specify a different size.",
			"LIST", "    Show users details in config file format.",
			"LOAD", "    Reload users from the ACL file.",
			"LOG [<count> | RESET]", "    Show the ACL log entries.",
			"SAVE", "    Save the current config to the ACL file.",
			"SETUSER <username> <attribute> [<attribute> ...]", "    Create or modify a user with the specified attributes.",
			"USERS", "    List all the registered usernames.",
			"WHOAMI", "    Return the current connection username.",
			"HELP", "    Print this help.")
	}},
}

// ACL subcommand ...
func cmdACL(h *Handler, dst []byte, args [][]byte, s *Session) []byte {
	return dispatchSub(h, dst, args, s, "acl", aclSubcommands)
}

// commit applies a change: through Config.ACLCommit when set, else to the registry. s is
// marked as changing the ACL meanwhile, so that the connection closing of revoked users
// (closeRevoked) leaves it to reply first.
func (h *Handler) commit(s *Session, ch acl.Change) error {
	ch, err := h.acl.Prepare(ch)
	if err != nil {
		return err
	}
	s.aclChanging.Store(true)
	defer s.aclChanging.Store(false)
	if h.cfg.ACLCommit != nil {
		ctx, cancel := context.WithTimeout(context.Background(), aclCommitTimeout)
		defer cancel()
		err = h.cfg.ACLCommit(ctx, ch)
	} else {
		_, err = h.acl.Apply(ch)
	}
	if err == nil {
		if u, ok := h.sessionUser(s); !ok || u == nil {
			s.quit = true // its own user was deleted or disabled: close after the reply
		}
	}
	return err
}

// appendACLErr replies with an acl error as Redis words it.
func appendACLErr(dst []byte, err error) []byte {
	return appendErr(dst, "ERR "+strings.ReplaceAll(acl.Reply(err), "\n", " "))
}

func aclSetUser(h *Handler, dst []byte, args [][]byte, s *Session) []byte {
	rules := make([]string, 0, len(args)-3)
	for _, a := range args[3:] {
		rules = append(rules, string(a))
	}
	if err := h.commit(s, acl.Change{Op: acl.OpSetUser, Users: []string{string(args[2])}, Rules: rules}); err != nil {
		return appendACLErr(dst, err)
	}
	return appendOK(dst)
}

func aclDelUser(h *Handler, dst []byte, args [][]byte, s *Session) []byte {
	snap := h.acl.Snapshot()
	var names []string
	n := 0
	for _, a := range args[2:] {
		names = append(names, string(a))
		if snap.User(string(a)) != nil {
			n++
		}
	}
	if err := h.commit(s, acl.Change{Op: acl.OpDelUser, Users: names}); err != nil {
		return appendACLErr(dst, err)
	}
	return appendInt(dst, int64(n))
}

// ACL GETUSER name: Redis 7.0's fields; keys and channels as one string each.
func aclGetUser(h *Handler, dst []byte, args [][]byte, s *Session) []byte {
	u := h.acl.Snapshot().User(string(args[2]))
	if u == nil {
		return s.proto.appendNull(dst)
	}
	dst = s.proto.appendMap(dst, 6)
	flags := u.Flags()
	dst = appendArray(appendBulkString(dst, "flags"), len(flags))
	for _, f := range flags {
		dst = appendBulkString(dst, f)
	}
	hashes := u.PasswordHashes()
	dst = appendArray(appendBulkString(dst, "passwords"), len(hashes))
	for _, p := range hashes {
		dst = appendBulkString(dst, p)
	}
	dst = appendBulkString(appendBulkString(dst, "commands"), u.CommandRules())
	dst = appendBulkString(appendBulkString(dst, "keys"), u.KeyRules())
	dst = appendBulkString(appendBulkString(dst, "channels"), u.ChannelRules())
	return appendArray(appendBulkString(dst, "selectors"), 0)
}

// ACL CAT [category]
func aclCat(h *Handler, dst []byte, args [][]byte, _ *Session) []byte {
	if len(args) > 3 {
		return appendArityErr(dst, "acl|cat")
	}
	if len(args) == 2 {
		names := acl.CategoryNames()
		dst = appendArray(dst, len(names))
		for _, n := range names {
			dst = appendBulkString(dst, n)
		}
		return dst
	}
	cat, ok := acl.CategoryByName(string(args[2]))
	if !ok {
		return appendErrf(dst, "ERR Unknown category '%s'", sanitize(args[2]))
	}
	names := h.acl.Catalog().InCategory(cat)
	dst = appendArray(dst, len(names))
	for _, n := range names {
		dst = appendBulkString(dst, n)
	}
	return dst
}

// ACL LOG [count | RESET]: Redis 7.0's fields, newest first.
func aclLog(h *Handler, dst []byte, args [][]byte, s *Session) []byte {
	n := 10
	switch {
	case len(args) > 3:
		return appendArityErr(dst, "acl|log")
	case len(args) == 3 && equalFold(args[2], "reset"):
		h.acl.Log().Reset()
		return appendOK(dst)
	case len(args) == 3:
		v, ok := parseInt(args[2])
		if !ok || v < 0 {
			return appendErr(dst, "ERR value is out of range, must be positive")
		}
		n = int(min(v, 1<<20))
	}
	now := h.ticks()
	entries := h.acl.Log().Entries(n)
	dst = appendArray(dst, len(entries))
	for _, e := range entries {
		dst = s.proto.appendMap(dst, 7)
		dst = appendInt(appendBulkString(dst, "count"), int64(e.Count))
		dst = appendBulkString(appendBulkString(dst, "reason"), e.Reason)
		dst = appendBulkString(appendBulkString(dst, "context"), e.Context)
		dst = appendBulkString(appendBulkString(dst, "object"), e.Object)
		dst = appendBulkString(appendBulkString(dst, "username"), e.Username)
		age := strconv.FormatFloat((now - e.Updated).Seconds(), 'f', 3, 64)
		dst = appendBulkString(dst, "age-seconds")
		if s.proto == resp3 {
			dst = append(append(append(dst, ','), age...), '\r', '\n')
		} else {
			dst = appendBulkString(dst, age)
		}
		dst = appendBulkString(appendBulkString(dst, "client-info"), e.ClientInfo)
	}
	return dst
}

// maxGenPassBits bounds ACL GENPASS, as Redis does.
const maxGenPassBits = 4096

// ACL GENPASS [bits]: a random password of bits bits (256 by default), in hex.
func aclGenPass(_ *Handler, dst []byte, args [][]byte, _ *Session) []byte {
	bits := int64(256)
	if len(args) > 3 {
		return appendArityErr(dst, "acl|genpass")
	}
	if len(args) == 3 {
		v, ok := parseInt(args[2])
		if !ok || v <= 0 || v > maxGenPassBits {
			return appendErrf(dst, "ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to %d", maxGenPassBits)
		}
		bits = v
	}
	chars := (bits + 3) / 4
	b := make([]byte, (chars+1)/2)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return appendBulkString(dst, hex.EncodeToString(b)[:chars])
}

// ACL DRYRUN username command [arg ...]: whether the user could run the command.
func aclDryRun(h *Handler, dst []byte, args [][]byte, _ *Session) []byte {
	u := h.acl.Snapshot().User(string(args[2]))
	if u == nil {
		return appendErrf(dst, "ERR User '%s' not found", sanitize(args[2]))
	}
	cargs := args[3:]
	c := h.lookup(cargs[0])
	if c == nil {
		return appendErrf(dst, "ERR Command '%s' not found", sanitize(cargs[0]))
	}
	if !arityOK(c.arity, len(cargs)) {
		return appendArityErr(dst, c.name)
	}
	switch d := h.check(u, c, cargs); d.reason {
	case "":
		return appendOK(dst)
	case acl.ReasonCommand:
		return appendBulkString(dst, "This user has no permissions to run the '"+d.object+"' command")
	default:
		return appendBulkString(dst, "This user has no permissions to access the '"+d.object+"' key")
	}
}

func aclSave(h *Handler, dst []byte, _ [][]byte, _ *Session) []byte {
	if h.cfg.ACLFile == "" {
		return appendErr(dst, errNoACLFile)
	}
	if err := SaveACLFile(h.acl.Snapshot(), h.cfg.ACLFile); err != nil {
		return appendErrf(dst, "ERR There was an error trying to save the ACLs. Please check the server logs for more information: %s", strings.ReplaceAll(err.Error(), "\n", " "))
	}
	return appendOK(dst)
}

func aclLoad(h *Handler, dst []byte, _ [][]byte, s *Session) []byte {
	if h.cfg.ACLFile == "" {
		return appendErr(dst, errNoACLFile)
	}
	ch, err := readACLFile(h.acl, h.cfg.ACLFile)
	if err == nil {
		err = h.commit(s, ch)
	}
	if err != nil {
		var fe *acl.FileError
		if errors.As(err, &fe) {
			return appendErrf(dst, "ERR %s:%d: %s", h.cfg.ACLFile, fe.Line, acl.Reply(fe.Err))
		}
		return appendACLErr(dst, err)
	}
	return appendOK(dst)
}
