package acl

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Op is what a Change does.
type Op string

const (
	// OpSetUser creates Users[0] if needed, then applies Rules to it (ACL SETUSER).
	OpSetUser Op = "setuser"
	// OpDelUser deletes the Users that exist (ACL DELUSER); "default" cannot be deleted.
	OpDelUser Op = "deluser"
	// OpLoad replaces every user by those of Rules, one ACL file line
	// ("user <name> <rules...>") each (ACL LOAD). A set without "default" gets the
	// registry's default user.
	OpLoad Op = "load"
)

// Change is one change to the user set, as a value: it can be encoded (Encode), carried
// through a replicated log and applied on every node (Registry.Apply) with the same
// result, because Registry.Prepare replaces cleartext passwords (">pw", "<pw") by the
// hashes they stand for ("#hash", "!hash") before it is proposed: no cleartext password
// ever enters the log, and no node draws its own salt.
type Change struct {
	Op    Op       `json:"op"`
	Users []string `json:"users,omitempty"`
	Rules []string `json:"rules,omitempty"`
}

// changeVersion is the version of Change's encoding; Decode refuses others.
const changeVersion = 1

type encodedChange struct {
	V int `json:"v"`
	Change
}

// Encode returns c as JSON with a version field: {"v":1,"op":"setuser",...}.
func (c Change) Encode() []byte {
	b, err := json.Marshal(encodedChange{changeVersion, c})
	if err != nil {
		panic(err) // strings and slices of strings always marshal
	}
	return b
}

// ErrDecode is returned for an encoded Change or Snapshot that cannot be read.
var ErrDecode = errors.New("acl: cannot decode")

// DecodeChange reads what Encode wrote.
func DecodeChange(b []byte) (Change, error) {
	var e encodedChange
	if err := json.Unmarshal(b, &e); err != nil {
		return Change{}, fmt.Errorf("%w change: %w", ErrDecode, err)
	}
	if e.V != changeVersion {
		return Change{}, fmt.Errorf("%w change: version %d, want %d", ErrDecode, e.V, changeVersion)
	}
	return e.Change, nil
}

// ReplyError is an error whose Reply is Redis's text for it (after "ERR ").
type ReplyError struct{ text string }

func (e *ReplyError) Error() string { return "acl: " + e.text }

// Reply is the error's text as Redis words it, without the "ERR " prefix.
func (e *ReplyError) Reply() string { return e.text }

// Errors of ACL SETUSER, DELUSER and LOAD, worded as Redis's replies.
var (
	ErrBadUsername   = &ReplyError{"Usernames can't contain spaces or null characters"}
	ErrDeleteDefault = &ReplyError{"The 'default' user cannot be removed"}
)

// Reply returns Redis's text for an error of this package (without "ERR "), and the
// error's own text for others.
func Reply(err error) string {
	var r interface{ Reply() string }
	if errors.As(err, &r) {
		return r.Reply()
	}
	return err.Error()
}

// validName reports whether name can be a user's name: Redis refuses spaces and NULs; kura
// also refuses the other whitespace, which would break an ACL file's lines.
func validName(name string) bool {
	return name != "" && !strings.ContainsAny(name, " \t\r\n\x00")
}

// applyChange returns the user set that ch makes of cur, or an error and no change.
func applyChange(env *ruleEnv, cur map[string]*User, ch Change, def []string) (map[string]*User, error) {
	next := make(map[string]*User, len(cur)+1)
	switch ch.Op {
	case OpSetUser:
		if len(ch.Users) != 1 || !validName(ch.Users[0]) {
			return nil, ErrBadUsername
		}
		name := ch.Users[0]
		u := newUser(name, env.cat)
		if old := cur[name]; old != nil {
			u = old.clone()
		}
		if err := env.applyRules(u, ch.Rules); err != nil {
			return nil, err
		}
		for n, v := range cur {
			next[n] = v
		}
		next[name] = u
	case OpDelUser:
		if slices.Contains(ch.Users, DefaultUser) {
			return nil, ErrDeleteDefault
		}
		for n, v := range cur {
			if !slices.Contains(ch.Users, n) {
				next[n] = v
			}
		}
	case OpLoad:
		users, err := parseLines(env, ch.Rules, def)
		if err != nil {
			return nil, err
		}
		return users, nil
	default:
		return nil, fmt.Errorf("acl: unknown change op %q", ch.Op)
	}
	return next, nil
}
