package acl

import (
	"slices"
	"strings"

	"github.com/kuradb/kura/internal/glob"
)

// User is one user: whether it may log in, how, which commands it may run and which keys
// it may touch. A User in a Snapshot is immutable and safe for concurrent use; rules
// change a copy (see Registry.Apply).
type User struct {
	Name    string
	Enabled bool     // "on"; an "off" user cannot authenticate
	NoPass  bool     // any password authenticates
	hashes  []string // encoded password hashes, in the order added, distinct

	allCommands bool      // the base: +@all (true) or -@all
	cmdRules    []cmdRule // applied over the base, in order, simplified (see applyCmdRule)
	allowed     []bool    // per catalog entry, computed from the base and rules

	keys        []keyPattern
	allChannels bool     // "&*"; kura has no pub/sub: kept for ACL LIST's sake
	channels    []string // "&pattern" rules, idem
}

// cmdRule is one "+name", "-name", "+@cat" or "-@cat" rule.
type cmdRule struct {
	allow  bool
	target string   // command or "container|sub"; "" for a category
	cat    Category // one category, for a category rule
}

func (r cmdRule) String() string {
	sign := "-"
	if r.allow {
		sign = "+"
	}
	if r.target == "" {
		return sign + "@" + r.cat.Names()[0]
	}
	return sign + r.target
}

// keyPattern is one key rule: "~p" (read and write), "%R~p", "%W~p" or "%RW~p".
type keyPattern struct {
	pattern string
	access  KeyAccess
}

func (k keyPattern) String() string {
	switch k.access {
	case KeyRead:
		return "%R~" + k.pattern
	case KeyWrite:
		return "%W~" + k.pattern
	}
	return "~" + k.pattern
}

// newUser returns a user as ACL SETUSER creates it: off, no passwords, no commands, no
// keys, no channels.
func newUser(name string, cat *Catalog) *User {
	return &User{Name: name, allowed: make([]bool, cat.Len())}
}

// clone returns a deep copy of u, for rules to change.
func (u *User) clone() *User {
	c := *u
	c.hashes = slices.Clone(u.hashes)
	c.cmdRules = slices.Clone(u.cmdRules)
	c.allowed = slices.Clone(u.allowed)
	c.keys = slices.Clone(u.keys)
	c.channels = slices.Clone(u.channels)
	return &c
}

// CanRun reports whether u may run the catalog entry id (see Catalog.ID).
func (u *User) CanRun(id int) bool { return id >= 0 && id < len(u.allowed) && u.allowed[id] }

// CanAccessKey reports whether some key pattern of u grants access to key.
func (u *User) CanAccessKey(key []byte, access KeyAccess) bool {
	var granted KeyAccess
	for _, k := range u.keys {
		if glob.Match([]byte(k.pattern), key) {
			granted |= k.access
			if granted&access == access {
				return true
			}
		}
	}
	return false
}

// HasPasswords reports whether u has at least one password hash.
func (u *User) HasPasswords() bool { return len(u.hashes) > 0 }

// PasswordHashes returns u's encoded hashes (a copy), as ACL GETUSER shows them.
func (u *User) PasswordHashes() []string { return slices.Clone(u.hashes) }

// Flags are the words ACL GETUSER lists under "flags": on/off, and nopass.
func (u *User) Flags() []string {
	f := []string{"off"}
	if u.Enabled {
		f[0] = "on"
	}
	if u.NoPass {
		f = append(f, "nopass")
	}
	return f
}

// CommandRules renders u's command rules as Redis does: "+@all" or "-@all", then the
// simplified rules in order ("-@all +get").
func (u *User) CommandRules() string {
	var b strings.Builder
	if u.allCommands {
		b.WriteString("+@all")
	} else {
		b.WriteString("-@all")
	}
	for _, r := range u.cmdRules {
		b.WriteString(" " + r.String())
	}
	return b.String()
}

// KeyRules renders u's key patterns ("~cache:* %R~ro:*"), "" for none.
func (u *User) KeyRules() string {
	parts := make([]string, len(u.keys))
	for i, k := range u.keys {
		parts[i] = k.String()
	}
	return strings.Join(parts, " ")
}

// ChannelRules renders u's channel patterns: "&*", "&a &b", or "" for none.
func (u *User) ChannelRules() string {
	if u.allChannels {
		return "&*"
	}
	parts := make([]string, len(u.channels))
	for i, c := range u.channels {
		parts[i] = "&" + c
	}
	return strings.Join(parts, " ")
}

// Rules renders u as the canonical rule list that recreates it, the way ACL LIST prints
// it after "user <name>": "on #<hash> ~cache:* resetchannels -@all +get".
func (u *User) Rules() []string {
	out := u.Flags()
	for _, h := range u.hashes {
		out = append(out, "#"+h)
	}
	for _, k := range u.keys {
		out = append(out, k.String())
	}
	switch {
	case u.allChannels:
		out = append(out, "&*")
	case len(u.channels) == 0:
		out = append(out, "resetchannels")
	}
	for _, c := range u.channels {
		out = append(out, "&"+c)
	}
	if u.allCommands {
		out = append(out, "+@all")
	} else {
		out = append(out, "-@all")
	}
	for _, r := range u.cmdRules {
		out = append(out, r.String())
	}
	return out
}

// String is u's ACL LIST line: "user <name> <rules...>".
func (u *User) String() string { return "user " + u.Name + " " + strings.Join(u.Rules(), " ") }

// recompute sets u.allowed from the base and the rules.
func (u *User) recompute(cat *Catalog) {
	for i := range u.allowed {
		u.allowed[i] = u.allCommands
	}
	for _, r := range u.cmdRules {
		setBits(u.allowed, r, cat)
	}
}

// setBits applies one command rule to a bitmap.
func setBits(allowed []bool, r cmdRule, cat *Catalog) {
	if r.target == "" {
		for i := range allowed {
			if cat.cmds[i].Categories&r.cat != 0 {
				allowed[i] = r.allow
			}
		}
		return
	}
	for _, id := range cat.covered(r.target) {
		allowed[id] = r.allow
	}
}

// applyCmdRule adds r to u's rules keeping them the shortest list that gives the same
// bitmap, in the order given, as Redis 7.0's ACL GETUSER shows them: earlier rules that r
// overrides completely are dropped (those on the same command or category, those on a
// command r's category contains, those on a subcommand of r's container), and r itself is
// dropped when it changes nothing. Dropping is safe: a dropped rule's bits are all set
// again by r, or were already as r sets them.
func (u *User) applyCmdRule(r cmdRule, cat *Catalog) {
	u.cmdRules = slices.DeleteFunc(u.cmdRules, func(old cmdRule) bool {
		switch {
		case r.target == "" && old.target == "":
			return old.cat == r.cat
		case r.target == "":
			id, ok := cat.byName[old.target]
			return ok && cat.cmds[id].Categories&r.cat != 0 && !cat.HasSubcommands(old.target)
		}
		return old.target == r.target || strings.HasPrefix(old.target, r.target+"|")
	})
	u.recompute(cat)
	before := slices.Clone(u.allowed)
	setBits(u.allowed, r, cat)
	if !slices.Equal(before, u.allowed) {
		u.cmdRules = append(u.cmdRules, r)
	}
}

// AllKeys reports whether u may read and write every key ("allkeys", "~*"): the common
// case, which needs no pattern matching.
func (u *User) AllKeys() bool {
	return len(u.keys) == 1 && u.keys[0] == keyPattern{"*", KeyReadWrite}
}
