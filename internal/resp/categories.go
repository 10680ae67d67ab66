package resp

import (
	"crypto/rand"
	"fmt"
	"sync"

	"github.com/kuradb/kura/internal/acl"
)

// ACL categories of the commands, derived as Redis derives them: readonly is @read, write
// is @write, fast is @fast and everything else @slow, the group gives @string, @hash,
// @keyspace (generic), @connection or @transaction; aclExtra adds what flags cannot say
// (@admin, @dangerous, and the group of server commands that touch the keyspace). The
// subcommands in aclSubs have categories of their own, so that a user without @admin can
// still run ACL WHOAMI or CLIENT ID; the other subcommands have their container's
// categories, and every subcommand has an entry, so that "+config|get" works as in Redis.

// aclExtra are categories beyond the flags', as Redis 7.0's COMMAND INFO lists them.
var aclExtra = map[string]acl.Category{
	"config":   acl.CatAdmin | acl.CatDangerous,
	"latency":  acl.CatAdmin | acl.CatDangerous,
	"slowlog":  acl.CatAdmin | acl.CatDangerous,
	"flushall": acl.CatKeyspace | acl.CatDangerous,
	"flushdb":  acl.CatKeyspace | acl.CatDangerous,
	"keys":     acl.CatDangerous,
	"info":     acl.CatDangerous,
	"dbsize":   acl.CatKeyspace,
	"command":  acl.CatConnection,
	"memory":   acl.CatRead,
	// kura's own: topology is read by token-aware clients, like CLUSTER SLOTS.
	"kura.topology": acl.CatConnection,
}

const adminSub = acl.CatAdmin | acl.CatSlow | acl.CatDangerous

// aclSubs are the subcommands with categories other than their container's.
var aclSubs = []acl.CommandInfo{
	{Name: "acl|cat", Categories: acl.CatSlow},
	{Name: "acl|whoami", Categories: acl.CatSlow},
	{Name: "acl|genpass", Categories: acl.CatSlow},
	{Name: "acl|help", Categories: acl.CatSlow},
	{Name: "acl|setuser", Categories: adminSub},
	{Name: "acl|getuser", Categories: adminSub},
	{Name: "acl|deluser", Categories: adminSub},
	{Name: "acl|list", Categories: adminSub},
	{Name: "acl|users", Categories: adminSub},
	{Name: "acl|log", Categories: adminSub},
	{Name: "acl|save", Categories: adminSub},
	{Name: "acl|load", Categories: adminSub},
	{Name: "acl|dryrun", Categories: adminSub},
	{Name: "client|kill", Categories: adminSub | acl.CatConnection},
	{Name: "client|list", Categories: adminSub | acl.CatConnection},
}

// commandCategories returns c's categories.
func commandCategories(c *command) acl.Category {
	var cat acl.Category
	if c.flags&flagWrite != 0 {
		cat |= acl.CatWrite
	}
	if c.flags&flagReadonly != 0 {
		cat |= acl.CatRead
	}
	if c.flags&flagFast != 0 {
		cat |= acl.CatFast
	} else {
		cat |= acl.CatSlow
	}
	switch c.group {
	case "string":
		cat |= acl.CatString
	case "hash":
		cat |= acl.CatHash
	case "generic":
		cat |= acl.CatKeyspace
	case "connection":
		cat |= acl.CatConnection
	case "transactions":
		cat |= acl.CatTransaction
	}
	return cat | aclExtra[c.name]
}

// keyAccess is what c needs of the key patterns: writes need %W, reads %R, and commands
// that read a key to write it (the leader commands: INCR, APPEND, GETDEL...) need both.
func keyAccess(c *command) acl.KeyAccess {
	switch {
	case c.flags&flagLeader != 0:
		return acl.KeyReadWrite
	case c.flags&flagWrite != 0:
		return acl.KeyWrite
	}
	return acl.KeyRead
}

var (
	catalogOnce sync.Once
	catalog     *acl.Catalog
)

// ACLCatalog returns the catalog of kura's commands for acl.Config.
func ACLCatalog() *acl.Catalog {
	catalogOnce.Do(func() {
		special := map[string]acl.Category{}
		for _, s := range aclSubs {
			special[s.Name] = s.Categories
		}
		var infos []acl.CommandInfo
		for _, c := range commandTable() {
			cat := commandCategories(c)
			infos = append(infos, acl.CommandInfo{Name: c.name, Categories: cat})
			for _, sc := range containers[c.name] {
				name := c.name + "|" + sc.name
				sub, ok := special[name]
				if !ok {
					sub = cat
				}
				infos = append(infos, acl.CommandInfo{Name: name, Categories: sub})
			}
		}
		var err error
		if catalog, err = acl.NewCatalog(infos); err != nil {
			panic(err) // the tables above are constants
		}
	})
	return catalog
}

// NewACLRegistry returns a registry of kura's commands holding only the default user, with
// password as its password when not empty (as Redis's requirepass: ">password" applied to
// "on nopass ~* &* +@all"). Salts and the credential cache's key come from crypto/rand.
func NewACLRegistry(password string) (*acl.Registry, error) {
	cfg := acl.Config{Catalog: ACLCatalog(), Rand: rand.Reader}
	if password != "" {
		cfg.DefaultRules = []string{">" + password}
	}
	r, err := acl.NewRegistry(cfg)
	if err != nil {
		return nil, fmt.Errorf("resp: %w", err)
	}
	return r, nil
}
