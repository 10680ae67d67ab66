package node

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestNodeLoadsItsACLFileAndRefusesOneThatDoesNotParse: --acl-file's users are served; a
// "user default" line wins over --password; a bad file stops the start, naming its line.
func TestNodeLoadsItsACLFileAndRefusesOneThatDoesNotParse(t *testing.T) {
	path := filepath.Join(t.TempDir(), "users.acl")
	cfg := testConfig(t, "memory")
	cfg.ACLFile, cfg.Password = path, "ignored"
	if err := os.WriteFile(path, []byte("# users\nuser default on >adminpw ~* &* +@all\nuser bad on +nosuch\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Start(cfg, quiet()); err == nil || !strings.Contains(err.Error(), "line 3") {
		t.Fatalf("bad ACL file: %v, want an error naming line 3", err)
	}
	if err := os.WriteFile(path, []byte("user default on >adminpw ~* &* +@all\nuser app on >apppw ~app:* -@all +get +set\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	n, err := Start(cfg, quiet())
	if err != nil {
		t.Fatal(err)
	}
	defer n.Shutdown(context.Background())
	ctx := context.Background()
	app := redis.NewClient(&redis.Options{Addr: n.Addr(), Username: "app", Password: "apppw"})
	defer app.Close()
	if err := app.Set(ctx, "app:1", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := app.Set(ctx, "other", "v", 0).Err(); err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
		t.Fatalf("app writes outside its keys: %v", err)
	}
	for pw, ok := range map[string]bool{"adminpw": true, "ignored": false} {
		c := redis.NewClient(&redis.Options{Addr: n.Addr(), Password: pw, MaxRetries: -1})
		err := c.Ping(ctx).Err()
		c.Close()
		if (err == nil) != ok {
			t.Errorf("default user with %q: %v", pw, err)
		}
	}
}
