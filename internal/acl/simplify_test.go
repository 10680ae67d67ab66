package acl

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// naiveAllowed is the reference for command rules: each rule applied in order to a
// bitmap, nothing dropped or reordered. Rules that are not command rules are ignored;
// reset and the all/no rules reset the bitmap.
func naiveAllowed(cat *Catalog, rules []string) []bool {
	allowed := make([]bool, cat.Len())
	set := func(v bool) {
		for i := range allowed {
			allowed[i] = v
		}
	}
	for _, r := range rules {
		switch l := strings.ToLower(r); {
		case l == "allcommands" || l == "+@all":
			set(true)
		case l == "nocommands" || l == "-@all" || l == "reset":
			set(false)
		case len(l) > 1 && (l[0] == '+' || l[0] == '-'):
			rule := cmdRule{allow: l[0] == '+'}
			if c, ok := CategoryByName(strings.TrimPrefix(l[1:], "@")); ok && l[1] == '@' {
				rule.cat = c
			} else {
				rule.target = l[1:]
			}
			setBits(allowed, rule, cat)
		}
	}
	return allowed
}

// TestSimplifiedRulesAllowWhatTheRulesAllow: random command rule sequences give, after
// the simplification ACL GETUSER shows, exactly the bitmap of applying every rule in
// order; and the printed rules give it again.
func TestSimplifiedRulesAllowWhatTheRulesAllow(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	cat := testCatalog(t)
	var words []string
	for i := range cat.Len() {
		words = append(words, cat.Info(i).Name)
	}
	for _, c := range []string{"@read", "@write", "@admin", "@fast", "@slow", "@string", "@hash", "@all"} {
		words = append(words, c)
	}
	env := &ruleEnv{cat: cat}
	for range 5000 {
		rules := make([]string, rng.IntN(8))
		for i := range rules {
			rules[i] = []string{"+", "-"}[rng.IntN(2)] + words[rng.IntN(len(words))]
		}
		u := newUser("u", cat)
		if err := env.applyRules(u, rules); err != nil {
			t.Fatalf("seed %d: %q: %v", seed, rules, err)
		}
		if want := naiveAllowed(cat, rules); !slices.Equal(u.allowed, want) {
			t.Fatalf("seed %d: %q simplified to %q allows %v, want %v", seed, rules, u.CommandRules(), u.allowed, want)
		}
		if again := naiveAllowed(cat, strings.Fields(u.CommandRules())); !slices.Equal(again, u.allowed) {
			t.Fatalf("seed %d: %q printed as %q, which allows %v, want %v", seed, rules, u.CommandRules(), again, u.allowed)
		}
	}
}
