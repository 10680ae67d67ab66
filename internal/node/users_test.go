package node

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/kuradb/kura/internal/cluster"
	"github.com/kuradb/kura/internal/meta"
)

// Users are cluster-wide: ACL SETUSER on one node lets the user in on every node within a
// second of the change's commit, ACL DELUSER and turning a user off close its connections
// on every node, a change made concurrently on two nodes loses neither, and the admin
// endpoints ask for a user allowed @admin once the default user has a password.
func TestUsersAreClusterWideAndRevocationClosesConnectionsEverywhere(t *testing.T) {
	n1 := startMember(t, "h1", "", nil)
	n2 := startMember(t, "h2", n1.GossipAddr(), nil)
	n3 := startMember(t, "h3", n1.GossipAddr(), nil)
	nodes := []*Node{n1, n2, n3}
	for _, n := range nodes {
		eventuallyFor(t, 60*time.Second, "every node sees three normal members", func() bool { return ready(n, 3) })
	}
	ctx := context.Background()
	admin1 := redis.NewClient(&redis.Options{Addr: n1.Addr()})
	defer admin1.Close()
	admin2 := redis.NewClient(&redis.Options{Addr: n2.Addr()})
	defer admin2.Close()

	// Two users created at once on two nodes: both exist afterwards everywhere.
	errs := make(chan error, 2)
	go func() { errs <- admin1.Do(ctx, "ACL", "SETUSER", "alice", "on", ">alice-pw", "~a:*", "+@all").Err() }()
	go func() { errs <- admin2.Do(ctx, "ACL", "SETUSER", "bob", "on", ">bob-pw", "~*", "+@read").Err() }()
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	committed := time.Now()
	var within time.Duration
	for _, n := range nodes {
		for _, user := range []string{"alice", "bob"} {
			eventuallyFor(t, 10*time.Second, user+" exists on "+n.Host(), func() bool { return n.users.Snapshot().User(user) != nil })
		}
		within = max(within, time.Since(committed))
	}
	t.Logf("both users on every node %v after the commit", within)
	if within > time.Second {
		t.Errorf("users reached every node %v after the commit, want within a second", within)
	}
	alice3 := redis.NewClient(&redis.Options{Addr: n3.Addr(), Username: "alice", Password: "alice-pw", MaxRetries: -1, PoolSize: 1})
	defer alice3.Close()
	if err := alice3.Set(ctx, "a:1", "x", 0).Err(); err != nil {
		t.Fatalf("alice on n3: %v", err)
	}
	if err := alice3.Set(ctx, "b:1", "x", 0).Err(); err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
		t.Fatalf("alice writing outside ~a:*: %v, want NOPERM", err)
	}
	bob1 := redis.NewClient(&redis.Options{Addr: n1.Addr(), Username: "bob", Password: "bob-pw", MaxRetries: -1, PoolSize: 1})
	defer bob1.Close()
	if err := bob1.Set(ctx, "b:1", "x", 0).Err(); err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
		t.Fatalf("bob (read only) writing: %v, want NOPERM", err)
	}
	if err := bob1.Get(ctx, "a:1").Err(); err != nil {
		t.Fatalf("bob reading: %v", err)
	}

	// DELUSER on n1 closes alice's open connection on n3; "off" on n2 closes bob's on n1.
	if err := admin1.Do(ctx, "ACL", "DELUSER", "alice").Err(); err != nil {
		t.Fatal(err)
	}
	if err := admin2.Do(ctx, "ACL", "SETUSER", "bob", "off").Err(); err != nil {
		t.Fatal(err)
	}
	revoked := time.Now()
	for _, c := range []*redis.Client{alice3, bob1} {
		eventuallyFor(t, 5*time.Second, "the revoked user's connection is closed", func() bool {
			err := c.Get(ctx, "a:1").Err()
			return err != nil && err != redis.Nil && !strings.HasPrefix(err.Error(), "NOPERM")
		})
	}
	if d := time.Since(revoked); d > 2*time.Second {
		t.Errorf("connections closed %v after the revocations, want within a second each", d)
	}
	if err := redis.NewClient(&redis.Options{Addr: n3.Addr(), Username: "alice", Password: "alice-pw", MaxRetries: -1}).Ping(ctx).Err(); err == nil ||
		!strings.HasPrefix(err.Error(), "WRONGPASS") {
		t.Fatalf("a deleted user authenticating on another node: %v", err)
	}

	// The default user gets a password: the admin endpoints now want an @admin user.
	if err := admin1.Do(ctx, "ACL", "SETUSER", "default", ">root-pw").Err(); err != nil {
		t.Fatal(err)
	}
	if err := admin1.Do(ctx, "ACL", "SETUSER", "carol", "on", ">carol-pw", "~*", "+@all", "-@admin").Err(); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		eventuallyFor(t, 5*time.Second, "carol reaches "+n.Host(), func() bool { return n.users.Snapshot().User("carol") != nil })
	}
	get := func(n *Node, user, pass string) int {
		req, _ := http.NewRequest(http.MethodGet, "http://"+n.AdminAddr()+"/cluster", nil)
		if user != "" {
			req.SetBasicAuth(user, pass)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, tc := range []struct {
		user, pass string
		want       int
	}{{"", "", 401}, {"default", "wrong", 401}, {"carol", "carol-pw", 403}, {"default", "root-pw", 200}} {
		if got := get(n3, tc.user, tc.pass); got != tc.want {
			t.Errorf("/cluster on n3 as %q: %d, want %d", tc.user, got, tc.want)
		}
	}
}

// At start-up the cluster's record of the users wins over --acl-file once it exists.
func TestClusterUsersWinOverTheACLFileAtRestart(t *testing.T) {
	cfg := clusterConfig(t, "h1", "")
	aclFile := filepath.Join(t.TempDir(), "users.acl")
	if err := os.WriteFile(aclFile, []byte("user default on nopass ~* +@all\nuser fromfile on >f ~* +@all\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg.ACLFile = aclFile
	n, err := Start(cfg, keptLog(t, "h1"))
	if err != nil {
		t.Fatal(err)
	}
	eventuallyFor(t, 60*time.Second, "the node is in its ring", func() bool { return ready(n, 1) })
	c := redis.NewClient(&redis.Options{Addr: n.Addr()})
	if err := c.Do(context.Background(), "ACL", "SETUSER", "fromlog", "on", ">l", "~*", "+@all").Err(); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if n.users.Snapshot().User("fromfile") == nil {
		t.Fatal("the first cluster change dropped the file's users it was made from")
	}
	if err := n.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The file changes while the node is down; the record wins.
	if err := os.WriteFile(aclFile, []byte("user default on nopass ~* +@all\nuser edited on >e ~* +@all\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg.Listen, cfg.AdminListen = "127.0.0.1:0", "127.0.0.1:0"
	n, err = Start(cfg, keptLog(t, "h1"))
	if err != nil {
		t.Fatal(err)
	}
	defer n.Shutdown(context.Background())
	s := n.users.Snapshot()
	if s.User("fromlog") == nil || s.User("fromfile") == nil || s.User("edited") != nil {
		t.Fatalf("after a restart with an edited file the users are %v; want the cluster's (fromlog, fromfile)", s.Users())
	}
}

// A node whose build reads no user records (meta entry version below 3) holds up
// cluster-wide user changes while it is a live member; a dead one or a non-member does not.
func TestUserChangesWaitForEveryLiveMemberToReadThem(t *testing.T) {
	st := &meta.State{Members: []meta.Member{{ID: "n1"}, {ID: "n2"}, {ID: "n3"}}}
	v := meta.EntryVersionUsers
	if old := oldUserReaders(st, []cluster.Member{{ID: "n1", Up: true, MetaVersion: v}, {ID: "n2", Up: true, MetaVersion: v},
		{ID: "n3", MetaVersion: meta.EntryVersionHandoffs}, {ID: "n9", Up: true}}); len(old) != 0 {
		t.Fatalf("a dead member and a non-member held changes up: %v", old)
	}
	if old := oldUserReaders(st, []cluster.Member{{ID: "n1", Up: true, MetaVersion: v}, {ID: "n2", Up: true, MetaVersion: meta.EntryVersionHandoffs}}); len(old) != 1 || old[0] != "n2" {
		t.Fatalf("a live member of an older build: %v, want n2", old)
	}
}
