package node

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/kuradb/kura/internal/acl"
	"github.com/kuradb/kura/internal/admin"
	"github.com/kuradb/kura/internal/cluster"
	"github.com/kuradb/kura/internal/meta"
	"github.com/kuradb/kura/internal/resp"
)

// Users in a cluster (docs/design/acl.md). With --ring-source=log the cluster's users are
// a record of the metadata log (meta.SetACL): ACL SETUSER, DELUSER and LOAD on any node
// propose the whole new user set, made from the record as it stands, and every node
// installs each new record as its log applies it, within a second of its commit on a
// healthy cluster. Until a first change is made the log holds none, and each node uses its
// own --acl-file or --password.
//
// At start-up the cluster's record wins over --acl-file once it exists: the file seeds the
// record (the first change is made from the proposing node's users) and ACL LOAD pushes a
// file to every node, but a node restarted with an edited file takes the record, and logs
// that it did. Otherwise two nodes with different files would serve different users.

// aclCommitTries bounds how often a change is made again after another node's change
// went first (meta.ErrACLChanged).
const aclCommitTries = 8

// commitACL is resp.Config.ACLCommit in a cluster with a metadata log: it proposes ch,
// applied to the cluster's users as they stand, and returns once this node has installed
// the result.
func (c *clusterNode) commitACL(ctx context.Context, ch acl.Change) error {
	rl := c.rl
	for range aclCommitTries {
		st := rl.state.Load()
		if old := oldUserReaders(st, c.gossip.Members()); len(old) > 0 {
			return fmt.Errorf("node: users cannot change cluster-wide until every node reads them (upgrade %v first)", old)
		}
		next, err := c.nextUsers(st, ch)
		if err != nil {
			return err
		}
		nst, err := rl.log.Propose(ctx, meta.SetACL{Base: st.ACLVersion, Users: next})
		switch {
		case errors.Is(err, meta.ErrACLChanged):
			// Another node's change went first; make this one again once this node's log
			// has applied it (until then its state would only be refused again).
			if err := c.awaitUsers(ctx, st.ACLVersion); err != nil {
				return err
			}
			continue
		case err != nil:
			return fmt.Errorf("node: propose the users: %w", err)
		}
		c.installUsers(nst) // read-your-writes on this connection; the log's apply does the same
		return nil
	}
	return fmt.Errorf("node: the users kept changing under %d tries; try again", aclCommitTries)
}

// awaitUsers waits until the node's metadata state holds users newer than version.
func (c *clusterNode) awaitUsers(ctx context.Context, version uint64) error {
	for c.rl.state.Load().ACLVersion <= version {
		c.rl.log.Poke() // a non-voter pulls the log's state now rather than at its next pull
		select {
		case <-ctx.Done():
			return fmt.Errorf("node: the users changed elsewhere and this node has not caught up: %w", ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil
}

// nextUsers is the encoded user set that ch makes of st's: from the record, or from
// this node's own users while the log holds none.
func (c *clusterNode) nextUsers(st *meta.State, ch acl.Change) ([]byte, error) {
	scratch, err := resp.NewACLRegistry("")
	if err != nil {
		return nil, err
	}
	base := st.ACL
	if st.ACLVersion == 0 {
		base = c.users.Snapshot().Encode()
	}
	if _, err := scratch.Restore(base); err != nil {
		return nil, fmt.Errorf("node: the cluster's users: %w", err)
	}
	s, err := scratch.Apply(ch)
	if err != nil {
		return nil, err
	}
	return s.Encode(), nil
}

// installUsers makes st's user record this node's users, if it is newer than what the
// node installed. The registry's subscribers close the connections of users deleted or
// turned off (package resp).
func (c *clusterNode) installUsers(st *meta.State) {
	if c.users == nil || st.ACLVersion == 0 {
		return
	}
	c.usersMu.Lock()
	defer c.usersMu.Unlock()
	if st.ACLVersion <= c.usersVersion {
		return
	}
	if _, err := c.users.Restore(st.ACL); err != nil {
		c.log.Error("the cluster's users do not decode; keeping the ones in use", "version", st.ACLVersion, "err", err)
		return
	}
	if c.usersVersion == 0 && c.cfg.ACLFile != "" {
		c.log.Info("the cluster's users replace --acl-file's (ACL LOAD pushes a file to every node)", "version", st.ACLVersion)
	}
	c.usersVersion = st.ACLVersion
}

// oldUserReaders lists the live members of st whose build does not read user records.
func oldUserReaders(st *meta.State, members []cluster.Member) []string {
	var old []string
	for _, g := range members {
		if _, ok := st.Member(g.ID); ok && g.Up && g.MetaVersion < meta.EntryVersionUsers {
			old = append(old, string(g.ID))
		}
	}
	return old
}

// adminAuth is the admin endpoints' check (admin.Config.Auth): the user's password, and
// its permission to run every command of the @admin category. A request without
// credentials passes while the default user is on and needs no password, as a RESP
// connection does: a node without users keeps its endpoints open.
func (n *Node) adminAuth() func(user, password, remote string) error {
	return func(user, password, remote string) error {
		if user == "" && password == "" {
			if d := n.users.Snapshot().User("default"); d != nil && d.Enabled && d.NoPass {
				return nil
			}
			return admin.ErrUnauthenticated
		}
		host, _, err := net.SplitHostPort(remote)
		if err != nil {
			host = remote
		}
		u, err := n.users.Authenticate(user, password, host, time.Since(n.started))
		if err != nil {
			var le *acl.LimitError
			if errors.As(err, &le) {
				return fmt.Errorf("%w: %s", admin.ErrUnauthenticated, le.Reply())
			}
			return admin.ErrUnauthenticated
		}
		cat := n.users.Catalog()
		for _, name := range cat.InCategory(acl.CatAdmin) {
			if id, ok := cat.ID(name, ""); ok && !u.CanRun(id) {
				return fmt.Errorf("admin: user %s may not run the @admin commands (%s)", user, name)
			}
		}
		return nil
	}
}
