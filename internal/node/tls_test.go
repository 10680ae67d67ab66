package node

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/kuradb/kura/internal/cert"
	"github.com/kuradb/kura/internal/config"
	"github.com/kuradb/kura/internal/transport"
	"github.com/kuradb/kura/internal/wire"
)

// testCerts is a CA, and the certificate directories made from it.
type testCerts struct {
	t  *testing.T
	ca string
}

func newTestCerts(t *testing.T) testCerts {
	ca := t.TempDir()
	if err := cert.CreateCA(ca, cert.Options{}); err != nil {
		t.Fatal(err)
	}
	return testCerts{t: t, ca: ca}
}

// node makes a node certificate for host, with the CA as its bundle, and returns its
// directory.
func (c testCerts) node(host string) string {
	dir := c.t.TempDir()
	if err := cert.CreateNode(dir, c.ca, host, []string{"127.0.0.1"}, cert.Options{}); err != nil {
		c.t.Fatal(err)
	}
	ca, err := os.ReadFile(filepath.Join(c.ca, cert.CAFile))
	if err != nil {
		c.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, cert.CAFile), ca, 0o644); err != nil {
		c.t.Fatal(err)
	}
	return dir
}

// useTLS points cfg's TLS options at the certificate directory dir.
func useTLS(cfg *config.Config, dir string) {
	cfg.TLSCertFile = filepath.Join(dir, cert.NodeFile)
	cfg.TLSKeyFile = filepath.Join(dir, cert.NodeKeyFile)
	cfg.TLSCACertFile = filepath.Join(dir, cert.CAFile)
}

// clientTLS is what a RESP client brings: the CA to verify the node with and, unless
// user is empty, a client certificate for user. served receives the certificate each
// handshake met.
func (c testCerts) clientTLS(user string, served chan<- *x509.Certificate) *tls.Config {
	pem, err := os.ReadFile(filepath.Join(c.ca, cert.CAFile))
	if err != nil {
		c.t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pem)
	cfg := &tls.Config{RootCAs: roots, ServerName: "localhost", MinVersion: tls.VersionTLS12}
	if user != "" {
		dir := c.t.TempDir()
		if err := cert.CreateClient(dir, c.ca, user, cert.Options{}); err != nil {
			c.t.Fatal(err)
		}
		pair, err := tls.LoadX509KeyPair(filepath.Join(dir, cert.ClientFile(user)), filepath.Join(dir, cert.ClientKeyFile(user)))
		if err != nil {
			c.t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	if served != nil {
		cfg.VerifyConnection = func(cs tls.ConnectionState) error {
			served <- cs.PeerCertificates[0]
			return nil
		}
	}
	return cfg
}

// startTLSNode starts a single node serving RESP over TLS on a free port.
func startTLSNode(t *testing.T, certDir string) *Node {
	t.Helper()
	cfg := testConfig(t, "memory")
	useTLS(&cfg, certDir)
	cfg.TLSPort = 1 // on; the hook below picks a free port instead
	n, err := startNode(cfg, keptLog(t, "tls"), hooks{tlsListen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Shutdown(context.Background()) })
	return n
}

func TestNodeServesRESPOverTLSBesideThePlainPort(t *testing.T) {
	certs := newTestCerts(t)
	n := startTLSNode(t, certs.node("h1"))
	if n.TLSAddr() == "" || n.TLSAddr() == n.Addr() {
		t.Fatalf("TLSAddr %q beside Addr %q", n.TLSAddr(), n.Addr())
	}
	if m := n.member(); m.ClientTLSAddr != n.TLSAddr() || m.ClientAddr != n.Addr() {
		t.Fatalf("the member announces client addresses %q and %q, want %q and %q", m.ClientAddr, m.ClientTLSAddr, n.Addr(), n.TLSAddr())
	}
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: n.TLSAddr(), TLSConfig: certs.clientTLS("alice", nil)})
	defer c.Close()
	if err := c.Set(ctx, "k", "over tls", 0).Err(); err != nil {
		t.Fatal(err)
	}
	plain := redis.NewClient(&redis.Options{Addr: n.Addr()})
	defer plain.Close()
	if got, err := plain.Get(ctx, "k").Result(); err != nil || got != "over tls" {
		t.Fatalf("GET on the plain port: %q %v", got, err)
	}
	// --tls-auth-clients yes (the default): no client certificate, no service.
	anon := redis.NewClient(&redis.Options{Addr: n.TLSAddr(), TLSConfig: certs.clientTLS("", nil), MaxRetries: -1})
	defer anon.Close()
	if err := anon.Ping(ctx).Err(); err == nil {
		t.Fatal("a TLS client without a certificate was served with --tls-auth-clients yes")
	}
	// Nor does plain text get an answer on the TLS port.
	wrong := redis.NewClient(&redis.Options{Addr: n.TLSAddr(), MaxRetries: -1, ReadTimeout: 2 * time.Second})
	defer wrong.Close()
	if err := wrong.Ping(ctx).Err(); err == nil {
		t.Fatal("a plain client was served on the TLS port")
	}
}

// redisCLI returns redis-cli's path; it skips the test when redis-cli is not installed,
// except under CI=true, where it fails it.
func redisCLI(t *testing.T) string {
	path, err := exec.LookPath("redis-cli")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI is set and redis-cli is not installed: %v", err)
		}
		t.Skip("redis-cli not installed")
	}
	return path
}

func TestRedisCLITalksToTheTLSPort(t *testing.T) {
	cli := redisCLI(t)
	certs := newTestCerts(t)
	n := startTLSNode(t, certs.node("h1"))
	dir := t.TempDir()
	if err := cert.CreateClient(dir, certs.ca, "alice", cert.Options{}); err != nil {
		t.Fatal(err)
	}
	host, port := splitAddr(t, n.TLSAddr())
	run := func(args ...string) (string, error) {
		base := []string{"--tls", "--cacert", filepath.Join(certs.ca, cert.CAFile),
			"--cert", filepath.Join(dir, cert.ClientFile("alice")), "--key", filepath.Join(dir, cert.ClientKeyFile("alice")),
			"-h", host, "-p", port}
		out, err := exec.Command(cli, append(base, args...)...).CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	if out, err := run("SET", "cli", "v"); err != nil || out != "OK" {
		t.Fatalf("redis-cli SET: %q %v", out, err)
	}
	if out, err := run("GET", "cli"); err != nil || out != "v" {
		t.Fatalf("redis-cli GET: %q %v", out, err)
	}
	// Without --cert, the node refuses it (redis-cli prints the error and exits 0 or 1
	// depending on the version: the reply is what counts).
	out, _ := exec.Command(cli, "--tls", "--cacert", filepath.Join(certs.ca, cert.CAFile), "-h", host, "-p", port, "GET", "cli").CombinedOutput()
	if strings.TrimSpace(string(out)) == "v" {
		t.Fatal("redis-cli without a client certificate was served")
	}
}

func splitAddr(t *testing.T, addr string) (string, string) {
	i := strings.LastIndex(addr, ":")
	if i < 0 {
		t.Fatalf("address %q", addr)
	}
	return addr[:i], addr[i+1:]
}

func TestRenewedCertificateIsServedWithoutRestart(t *testing.T) {
	certs := newTestCerts(t)
	dir := certs.node("h1")
	n := startTLSNode(t, dir)
	served := make(chan *x509.Certificate, 100)
	ping := func() *x509.Certificate {
		t.Helper()
		c := redis.NewClient(&redis.Options{Addr: n.TLSAddr(), TLSConfig: certs.clientTLS("alice", served), MaxRetries: -1})
		defer c.Close()
		if err := c.Ping(context.Background()).Err(); err != nil {
			t.Fatal(err)
		}
		return <-served
	}
	first := ping()
	if err := cert.CreateNode(dir, certs.ca, "h1", []string{"127.0.0.1"}, cert.Options{Overwrite: true}); err != nil {
		t.Fatal(err)
	}
	pair, err := tls.LoadX509KeyPair(filepath.Join(dir, cert.NodeFile), filepath.Join(dir, cert.NodeKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	// The node looks at its files at most once a second.
	eventually(t, "a new connection meets the renewed certificate", func() bool {
		got := ping()
		if !got.Equal(first) && !got.Equal(pair.Leaf) {
			t.Fatalf("served serial %v, neither the first nor the renewed certificate", got.SerialNumber)
		}
		return got.Equal(pair.Leaf)
	})
}

// A three-node cluster whose internode port (transport and Raft) is mutual TLS
// replicates writes and agrees on its ring, and a fourth node joins it, streaming its
// ranges over TLS; each node's certificate names its host.
func TestThreeNodeClusterWithTLSInternode(t *testing.T) {
	certs := newTestCerts(t)
	start := func(host, seed string) *Node {
		return startMember(t, host, seed, func(cfg *config.Config) {
			useTLS(cfg, certs.node(host))
			cfg.TLSInternode = true
		})
	}
	n1 := start("h1", "")
	n2 := start("h2", n1.GossipAddr())
	n3 := start("h3", n1.GossipAddr())
	for _, n := range []*Node{n1, n2, n3} {
		eventuallyFor(t, 60*time.Second, "every node sees three normal members", func() bool { return ready(n, 3) })
	}
	ctx := context.Background()
	c1 := redis.NewClient(&redis.Options{Addr: n1.Addr()})
	defer c1.Close()
	c3 := redis.NewClient(&redis.Options{Addr: n3.Addr()})
	defer c3.Close()
	for i := range 20 {
		k := "k" + string(rune('a'+i))
		if err := c1.Set(ctx, k, i, 0).Err(); err != nil {
			t.Fatalf("SET %s through n1: %v", k, err)
		}
		if got, err := c3.Get(ctx, k).Int(); err != nil || got != i {
			t.Fatalf("GET %s through n3: %d %v", k, got, err)
		}
	}
	n4 := start("h4", n1.GossipAddr())
	eventuallyFor(t, 60*time.Second, "the fourth node joined and its change finished", func() bool {
		st := n4.cluster.rl.state.Load()
		return ready(n4, 4) && st.Change == nil && n4.cluster.machine.Epoch() == st.Epoch
	})
	// No key was written after n4 joined: the rows it holds were streamed to it, over TLS.
	it, err := n4.cluster.handler.Engine.NewIterator(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	rows := 0
	for it.Next() {
		rows++
	}
	it.Close()
	t.Logf("n4 holds %d rows (20 keys, RF 3, 4 nodes), all streamed", rows)
	if rows == 0 {
		t.Fatal("n4 joined with no rows: nothing was streamed to it")
	}
	// The internode port speaks TLS alone: a plain call gets nowhere.
	plain, err := transport.NewClient(n2.cluster.ln.Addr().String(), transport.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := plain.Call(cctx, wire.MethodMeta, nil); err == nil {
		t.Fatal("a plain internode call was served with --tls-internode")
	}
}

func TestStartWithUnreadableTLSFilesFailsAndLeavesNothingRunning(t *testing.T) {
	cfg := testConfig(t, "memory")
	useTLS(&cfg, t.TempDir()) // no files there
	cfg.TLSPort = 1
	if _, err := startNode(cfg, quiet(), hooks{tlsListen: "127.0.0.1:0"}); err == nil || !strings.Contains(err.Error(), "node.crt") {
		t.Fatalf("Start with missing certificate files: %v, want an error naming node.crt", err)
	}
	// The data directory was unlocked: a node starts on it once the files exist.
	useTLS(&cfg, newTestCerts(t).node("h1"))
	n, err := startNode(cfg, quiet(), hooks{tlsListen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	n.Shutdown(context.Background())
}
