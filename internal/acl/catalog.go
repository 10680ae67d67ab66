package acl

import (
	"fmt"
	"math/bits"
	"slices"
	"strings"
)

// Category is a set of Redis ACL command categories (@read, @write...), one bit each.
type Category uint32

// The categories, in the order ACL CAT lists them (Redis 7.0's). kura has no commands in
// some of them (@list, @pubsub, @scripting...); they exist so that rules written for Redis
// parse, and ACL CAT lists them empty as Redis lists a category without commands.
const (
	CatKeyspace Category = 1 << iota
	CatRead
	CatWrite
	CatSet
	CatSortedSet
	CatList
	CatHash
	CatString
	CatBitmap
	CatHyperLogLog
	CatGeo
	CatStream
	CatPubSub
	CatAdmin
	CatFast
	CatSlow
	CatBlocking
	CatDangerous
	CatConnection
	CatTransaction
	CatScripting
)

var categoryNames = [...]string{"keyspace", "read", "write", "set", "sortedset", "list", "hash",
	"string", "bitmap", "hyperloglog", "geo", "stream", "pubsub", "admin", "fast", "slow",
	"blocking", "dangerous", "connection", "transaction", "scripting"}

// CategoryNames lists every category name (without '@') in ACL CAT's order.
func CategoryNames() []string { return slices.Clone(categoryNames[:]) }

// CategoryByName returns the category named name (without '@', any case).
func CategoryByName(name string) (Category, bool) {
	for i, n := range categoryNames {
		if strings.EqualFold(n, name) {
			return 1 << i, true
		}
	}
	return 0, false
}

// Names lists the categories in c by name, in ACL CAT's order.
func (c Category) Names() []string {
	var out []string
	for c != 0 {
		i := bits.TrailingZeros32(uint32(c))
		out = append(out, categoryNames[i])
		c &^= 1 << i
	}
	return out
}

// KeyAccess is what a command does to its keys: key patterns grant read (%R~), write
// (%W~) or both (~).
type KeyAccess uint8

const (
	// KeyRead is needed by commands that read their keys.
	KeyRead KeyAccess = 1 << iota
	// KeyWrite is needed by commands that write their keys.
	KeyWrite
	// KeyReadWrite is both.
	KeyReadWrite = KeyRead | KeyWrite
)

// CommandInfo describes one command, or one subcommand of a container command, to the
// ACL checks. The front end (package resp) builds them from its command table; see
// resp's categories.go for how flags and groups map to categories, as Redis derives them.
type CommandInfo struct {
	// Name is lowercase: "get", or "acl|whoami" for a subcommand that has categories of
	// its own (other subcommands share their container's).
	Name       string
	Categories Category
}

// Catalog is the set of commands rules can name: "+get" and "-acl|setuser" name entries,
// "+@read" the entries of a category. A rule on a container ("-acl") covers its
// subcommands' entries too. A Catalog is immutable and safe for concurrent use.
type Catalog struct {
	cmds   []CommandInfo
	byName map[string]int
	subs   map[string][]int // container name -> its subcommand entries
}

// NewCatalog indexes cmds; every name must be lowercase, unique and without spaces, and a
// subcommand's container must be listed too.
func NewCatalog(cmds []CommandInfo) (*Catalog, error) {
	c := &Catalog{cmds: slices.Clone(cmds), byName: map[string]int{}, subs: map[string][]int{}}
	for i, ci := range c.cmds {
		if ci.Name == "" || ci.Name != strings.ToLower(ci.Name) || strings.ContainsAny(ci.Name, " \t\r\n") {
			return nil, fmt.Errorf("acl: bad command name %q", ci.Name)
		}
		if _, dup := c.byName[ci.Name]; dup {
			return nil, fmt.Errorf("acl: command %q listed twice", ci.Name)
		}
		c.byName[ci.Name] = i
	}
	for i, ci := range c.cmds {
		if parent, _, ok := strings.Cut(ci.Name, "|"); ok {
			if _, ok := c.byName[parent]; !ok {
				return nil, fmt.Errorf("acl: subcommand %q without its container", ci.Name)
			}
			c.subs[parent] = append(c.subs[parent], i)
		}
	}
	return c, nil
}

// Len is the number of entries: IDs are 0 to Len()-1.
func (c *Catalog) Len() int { return len(c.cmds) }

// Info returns the entry with the given ID.
func (c *Catalog) Info(id int) CommandInfo { return c.cmds[id] }

// ID returns the entry that decides whether a command may run: the subcommand's entry
// when the catalog lists "cmd|sub", else the command's. cmd and sub are lowercase; sub is
// "" for commands without one.
func (c *Catalog) ID(cmd, sub string) (int, bool) {
	if sub != "" && len(c.subs[cmd]) > 0 {
		if id, ok := c.byName[cmd+"|"+sub]; ok {
			return id, true
		}
	}
	id, ok := c.byName[cmd]
	return id, ok
}

// HasSubcommands reports whether some of cmd's subcommands have entries of their own.
func (c *Catalog) HasSubcommands(cmd string) bool { return len(c.subs[cmd]) > 0 }

// InCategory lists the names of the entries in category cat, in catalog order.
func (c *Catalog) InCategory(cat Category) []string {
	var out []string
	for _, ci := range c.cmds {
		if ci.Categories&cat != 0 {
			out = append(out, ci.Name)
		}
	}
	return out
}

// covered returns the entries a rule naming target covers: the entry and, for a
// container, its subcommands.
func (c *Catalog) covered(target string) []int {
	id, ok := c.byName[target]
	if !ok {
		return nil
	}
	return append([]int{id}, c.subs[target]...)
}
