package acl

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// RuleError is a rule that does not parse or does not apply, with Redis's wording: its
// Reply is what ACL SETUSER replies after "ERR " ("Error in ACL SETUSER modifier
// '+foo': Unknown command or category name in ACL").
type RuleError struct {
	Rule   string
	Reason string
}

func (e *RuleError) Error() string { return "acl: " + e.Reply() }

// Reply is the error as Redis words it, without "ERR ".
func (e *RuleError) Reply() string {
	return fmt.Sprintf("Error in ACL SETUSER modifier '%s': %s", e.Rule, e.Reason)
}

// Redis's reasons, word for word.
const (
	reasonSyntax    = "Syntax error"
	reasonUnknown   = "Unknown command or category name in ACL"
	reasonNoSuchPwd = "The password you are trying to remove from the user does not exist"
	reasonAfterAll  = "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns"
	reasonBadHash   = "The password hash must be an argon2id hash as ACL GETUSER shows it ($argon2id$v=19$m=<KiB>,t=<passes>,p=<threads>$<salt>$<hash>)"
	reasonSelectors = "Selectors are not supported by kura"
)

// ruleEnv is what applying rules needs besides the user: the catalog, and the hashing of
// cleartext passwords (">pw", "<pw"); rand nil refuses cleartext, which a prepared Change
// never carries.
type ruleEnv struct {
	cat    *Catalog
	params Params
	rand   io.Reader
}

// applyRules applies rules to u in order; on error u is partly changed, so callers apply
// to a clone.
func (e *ruleEnv) applyRules(u *User, rules []string) error {
	for _, r := range rules {
		if err := e.applyRule(u, r); err != nil {
			return err
		}
	}
	return nil
}

// applyRule applies one rule; rule names are case-insensitive, as in Redis.
func (e *ruleEnv) applyRule(u *User, rule string) error {
	bad := func(reason string) error { return &RuleError{Rule: rule, Reason: reason} }
	switch strings.ToLower(rule) {
	case "on":
		u.Enabled = true
	case "off":
		u.Enabled = false
	case "nopass":
		u.NoPass, u.hashes = true, nil
	case "resetpass":
		u.NoPass, u.hashes = false, nil
	case "allkeys":
		u.keys = []keyPattern{{"*", KeyReadWrite}}
	case "resetkeys":
		u.keys = nil
	case "allchannels":
		u.allChannels, u.channels = true, nil
	case "resetchannels":
		u.allChannels, u.channels = false, nil
	case "allcommands", "+@all":
		u.allCommands, u.cmdRules = true, nil
		u.recompute(e.cat)
	case "nocommands", "-@all":
		u.allCommands, u.cmdRules = false, nil
		u.recompute(e.cat)
	case "reset":
		*u = *newUser(u.Name, e.cat)
		u.channels, u.allChannels = nil, false
	case "clearselectors":
	default:
		return e.applyValueRule(u, rule, bad)
	}
	return nil
}

// applyValueRule applies a rule that carries a value: passwords, patterns, commands.
func (e *ruleEnv) applyValueRule(u *User, rule string, bad func(string) error) error {
	if rule == "" {
		return bad(reasonSyntax)
	}
	switch rule[0] {
	case '>', '<':
		return e.applyCleartext(u, rule, bad)
	case '#', '!':
		h := rule[1:]
		if _, err := parseHash(h); err != nil {
			return bad(reasonBadHash)
		}
		return e.setHash(u, rule[0] == '#', h, bad)
	case '~', '%', '&':
		if strings.ContainsAny(rule, " \t\r\n\x00") {
			return bad(reasonSyntax) // ACL LIST and the ACL file separate rules by spaces
		}
	}
	switch rule[0] {
	case '~', '%':
		return e.applyKeyRule(u, rule, bad)
	case '&':
		if u.allChannels {
			return bad(strings.ReplaceAll(reasonAfterAll, "'allkeys'", "'allchannels'"))
		}
		if rule == "&*" {
			u.allChannels, u.channels = true, nil
		} else if !slices.Contains(u.channels, rule[1:]) {
			u.channels = append(u.channels, rule[1:])
		}
		return nil
	case '+', '-':
		return e.applyCommandRule(u, rule, bad)
	case '(':
		return bad(reasonSelectors)
	}
	return bad(reasonSyntax)
}

// applyCleartext applies ">pw" (add) or "<pw" (remove) through prepareRule.
func (e *ruleEnv) applyCleartext(u *User, rule string, bad func(string) error) error {
	prepared, err := e.prepareRule(u, rule)
	if err != nil {
		return err
	}
	return e.setHash(u, prepared[0] == '#', prepared[1:], bad)
}

// prepareRule returns rule with a cleartext password replaced by the hash it stands for
// in u: ">pw" becomes "#hash" (the hash u already has for pw, else a new one), "<pw"
// becomes "!hash" of the stored hash pw matches. Other rules come back as they are.
func (e *ruleEnv) prepareRule(u *User, rule string) (string, error) {
	if rule == "" || (rule[0] != '>' && rule[0] != '<') {
		return rule, nil
	}
	bad := func(reason string) error { return &RuleError{Rule: rule, Reason: reason} }
	if e.rand == nil {
		return "", bad("cleartext password in a prepared change")
	}
	pw := []byte(rule[1:])
	for _, h := range u.hashes {
		if ok, _ := Verify(pw, h); ok {
			if rule[0] == '<' {
				return "!" + h, nil
			}
			return "#" + h, nil
		}
	}
	if rule[0] == '<' {
		return "", bad(reasonNoSuchPwd)
	}
	h, err := Hash(pw, e.params, e.rand)
	if err != nil {
		return "", bad(err.Error())
	}
	return "#" + h, nil
}

// prepareRules applies rules to u (a scratch copy) and returns them prepared.
func (e *ruleEnv) prepareRules(u *User, rules []string) ([]string, error) {
	out := make([]string, len(rules))
	for i, r := range rules {
		p, err := e.prepareRule(u, r)
		if err != nil {
			return nil, err
		}
		if err := e.applyRule(u, p); err != nil {
			return nil, err
		}
		out[i] = p
	}
	return out, nil
}

// setHash adds or removes an encoded hash; adding one clears nopass, as Redis does.
func (e *ruleEnv) setHash(u *User, add bool, h string, bad func(string) error) error {
	i := slices.Index(u.hashes, h)
	switch {
	case add:
		u.NoPass = false
		if i < 0 {
			u.hashes = append(u.hashes, h)
		}
	case i < 0:
		return bad(reasonNoSuchPwd)
	default:
		u.hashes = slices.Delete(u.hashes, i, i+1)
	}
	return nil
}

// applyKeyRule applies "~pattern", "%R~pattern", "%W~pattern" or "%RW~pattern".
func (e *ruleEnv) applyKeyRule(u *User, rule string, bad func(string) error) error {
	access, pattern := KeyReadWrite, rule[1:]
	if rule[0] == '%' {
		perm, p, ok := strings.Cut(rule[1:], "~")
		if !ok || perm == "" {
			return bad(reasonSyntax)
		}
		access = 0
		for _, c := range strings.ToUpper(perm) {
			switch c {
			case 'R':
				access |= KeyRead
			case 'W':
				access |= KeyWrite
			default:
				return bad(reasonSyntax)
			}
		}
		pattern = p
	}
	if slices.Contains(u.keys, keyPattern{"*", KeyReadWrite}) {
		return bad(reasonAfterAll)
	}
	if pattern == "*" && access == KeyReadWrite {
		u.keys = []keyPattern{{"*", KeyReadWrite}}
		return nil
	}
	for i, k := range u.keys {
		if k.pattern == pattern { // one entry per pattern, permissions merged
			u.keys[i].access |= access
			return nil
		}
	}
	u.keys = append(u.keys, keyPattern{pattern, access})
	return nil
}

// applyCommandRule applies "+cmd", "-cmd", "+cmd|sub", "+@cat" or "-@cat".
func (e *ruleEnv) applyCommandRule(u *User, rule string, bad func(string) error) error {
	r := cmdRule{allow: rule[0] == '+'}
	name := strings.ToLower(rule[1:])
	if cname, ok := strings.CutPrefix(name, "@"); ok {
		c, ok := CategoryByName(cname)
		if !ok {
			return bad(reasonUnknown)
		}
		r.cat = c
	} else {
		if _, ok := e.cat.byName[name]; !ok {
			return bad(reasonUnknown)
		}
		r.target = name
	}
	u.applyCmdRule(r, e.cat)
	return nil
}
