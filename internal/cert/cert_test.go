package cert_test

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/kuradb/kura/internal/cert"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// clock is a settable clock for a Source's CheckInterval.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// newCA creates a CA in a new directory.
func newCA(t *testing.T) string {
	dir := t.TempDir()
	must(t, cert.CreateCA(dir, cert.Options{}))
	return dir
}

// nodeDir creates a node's certificate directory: node.crt and node.key for host from
// the CA in caDir, and ca.crt, the bundle, holding caDir's CA.
func nodeDir(t *testing.T, caDir, host string) string {
	dir := t.TempDir()
	must(t, cert.CreateNode(dir, caDir, host, []string{"127.0.0.1"}, cert.Options{}))
	setBundle(t, dir, caDir)
	return dir
}

// setBundle makes dir/ca.crt the concatenation of the CAs in caDirs.
func setBundle(t *testing.T, dir string, caDirs ...string) {
	var b []byte
	for _, d := range caDirs {
		pem, err := os.ReadFile(filepath.Join(d, cert.CAFile))
		must(t, err)
		b = append(b, pem...)
	}
	tmp := filepath.Join(dir, "ca.tmp")
	must(t, os.WriteFile(tmp, b, 0o644))
	must(t, os.Rename(tmp, filepath.Join(dir, cert.CAFile)))
}

func source(t *testing.T, dir string, clk *clock) *cert.Source {
	t.Helper()
	o := cert.SourceOptions{Logger: quiet()}
	if clk != nil {
		o.Now = clk.now
	}
	s, err := cert.NewSource(cert.Files{Cert: filepath.Join(dir, cert.NodeFile), Key: filepath.Join(dir, cert.NodeKeyFile),
		CA: filepath.Join(dir, cert.CAFile)}, o)
	must(t, err)
	return s
}

func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(path, strings.TrimSuffix(path, ".crt")+".key")
	must(t, err)
	return pair.Leaf
}

// handshake runs a TLS handshake between server and client configurations over a real
// loopback connection, and returns each side's error, after each side has tried to read
// (with TLS 1.3 the client learns the server refused its certificate only then).
func handshake(t *testing.T, server, client *tls.Config) (serverErr, clientErr error, served *x509.Certificate) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	defer ln.Close()
	done := make(chan error, 1)
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			done <- err
			return
		}
		defer nc.Close()
		sc := tls.Server(nc, server)
		if err := sc.Handshake(); err != nil {
			done <- err
			return
		}
		_, err = sc.Write([]byte{1})
		done <- err
	}()
	nc, err := net.Dial("tcp", ln.Addr().String())
	must(t, err)
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	cc := tls.Client(nc, client)
	clientErr = cc.Handshake()
	if clientErr == nil {
		if pc := cc.ConnectionState().PeerCertificates; len(pc) > 0 {
			served = pc[0]
		}
		_, clientErr = cc.Read(make([]byte, 1))
	}
	cc.Close()
	return <-done, clientErr, served
}

func TestCreateWritesPrivateKeysAndRefusesToOverwrite(t *testing.T) {
	ca := newCA(t)
	for _, f := range []string{cert.CAKeyFile, cert.CAFile} {
		fi, err := os.Stat(filepath.Join(ca, f))
		must(t, err)
		if want := map[string]os.FileMode{cert.CAKeyFile: 0o600, cert.CAFile: 0o644}[f]; fi.Mode().Perm() != want {
			t.Errorf("%s mode %v, want %v", f, fi.Mode().Perm(), want)
		}
	}
	before, err := os.ReadFile(filepath.Join(ca, cert.CAFile))
	must(t, err)
	if err := cert.CreateCA(ca, cert.Options{}); !errors.Is(err, cert.ErrExists) {
		t.Fatalf("CreateCA over an existing CA: %v, want ErrExists", err)
	}
	if after, _ := os.ReadFile(filepath.Join(ca, cert.CAFile)); string(after) != string(before) {
		t.Fatal("a refused CreateCA changed ca.crt")
	}
	dir := nodeDir(t, ca, "h1")
	if err := cert.CreateNode(dir, ca, "h1", nil, cert.Options{}); !errors.Is(err, cert.ErrExists) {
		t.Fatalf("CreateNode over an existing node.crt: %v, want ErrExists", err)
	}
	must(t, cert.CreateNode(dir, ca, "h1", nil, cert.Options{Overwrite: true}))
	must(t, cert.CreateClient(dir, ca, "alice", cert.Options{}))
	fi, err := os.Stat(filepath.Join(dir, cert.ClientKeyFile("alice")))
	must(t, err)
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("client key mode %v, want 0600", fi.Mode().Perm())
	}
	if err := cert.CreateClient(dir, ca, "", cert.Options{}); !errors.Is(err, cert.ErrBadName) {
		t.Errorf("CreateClient with no user: %v, want ErrBadName", err)
	}
}

func TestCertificatesCarryKuraIdentities(t *testing.T) {
	ca := newCA(t)
	dir := t.TempDir()
	must(t, cert.CreateNode(dir, ca, "h1", []string{"10.0.0.7", "db1.example", "10.0.0.8:7380"}, cert.Options{}))
	must(t, cert.CreateClient(dir, ca, "alice", cert.Options{}))
	n := readCert(t, filepath.Join(dir, cert.NodeFile))
	if n.Subject.CommonName != "h1" || !slices.Equal(n.Subject.OrganizationalUnit, []string{cert.NodeOU}) {
		t.Errorf("node subject %v", n.Subject)
	}
	if !slices.Equal(n.DNSNames, []string{"h1", "localhost", "db1.example"}) {
		t.Errorf("node DNS names %v", n.DNSNames)
	}
	var ips []string
	for _, ip := range n.IPAddresses {
		ips = append(ips, ip.String())
	}
	if !slices.Equal(ips, []string{"10.0.0.7", "10.0.0.8"}) {
		t.Errorf("node IP addresses %v", ips)
	}
	if !slices.Equal(n.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}) {
		t.Errorf("node key usages %v", n.ExtKeyUsage)
	}
	c := readCert(t, filepath.Join(dir, cert.ClientFile("alice")))
	if c.Subject.CommonName != "alice" || !slices.Equal(c.Subject.OrganizationalUnit, []string{cert.ClientOU}) ||
		!slices.Equal(c.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}) {
		t.Errorf("client certificate %v %v", c.Subject, c.ExtKeyUsage)
	}
	roots := x509.NewCertPool()
	roots.AddCert(readCert(t, filepath.Join(ca, cert.CAFile)))
	if _, err := n.Verify(x509.VerifyOptions{Roots: roots, DNSName: "db1.example"}); err != nil {
		t.Errorf("node certificate does not verify against its CA: %v", err)
	}
}

func TestInternodeServerTakesOnlyNodeCertificates(t *testing.T) {
	ca := newCA(t)
	srv := source(t, nodeDir(t, ca, "h1"), nil)
	peer := source(t, nodeDir(t, ca, "h2"), nil)
	if serr, cerr, _ := handshake(t, srv.NodeServerConfig(), peer.NodeClientConfig("h1")); serr != nil || cerr != nil {
		t.Fatalf("node to node: server %v, client %v", serr, cerr)
	}

	// No client certificate.
	noCert := peer.NodeClientConfig("h1")
	noCert.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &tls.Certificate{}, nil }
	if serr, cerr, _ := handshake(t, srv.NodeServerConfig(), noCert); serr == nil || cerr == nil {
		t.Errorf("a peer without a certificate was served: server %v, client %v", serr, cerr)
	}

	// A client certificate of the same CA.
	dir := t.TempDir()
	must(t, cert.CreateClient(dir, ca, "alice", cert.Options{}))
	alice, err := tls.LoadX509KeyPair(filepath.Join(dir, cert.ClientFile("alice")), filepath.Join(dir, cert.ClientKeyFile("alice")))
	must(t, err)
	withClient := peer.NodeClientConfig("h1")
	withClient.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &alice, nil }
	serr, cerr, _ := handshake(t, srv.NodeServerConfig(), withClient)
	if !errors.Is(serr, cert.ErrIdentity) || cerr == nil {
		t.Errorf("a kura-client certificate on the internode port: server %v, client %v; want ErrIdentity", serr, cerr)
	}

	// A node certificate of another CA.
	other := source(t, nodeDir(t, newCA(t), "h2"), nil)
	if serr, cerr, _ := handshake(t, srv.NodeServerConfig(), other.NodeClientConfig("h1")); serr == nil || cerr == nil {
		t.Errorf("a node of another CA was served: server %v, client %v", serr, cerr)
	}
}

func TestNodeDialerChecksThePeersHostLabel(t *testing.T) {
	ca := newCA(t)
	srv := source(t, nodeDir(t, ca, "h1"), nil)
	peer := source(t, nodeDir(t, ca, "h2"), nil)
	_, cerr, _ := handshake(t, srv.NodeServerConfig(), peer.NodeClientConfig("h3"))
	if !errors.Is(cerr, cert.ErrIdentity) || !strings.Contains(cerr.Error(), `"h1"`) || !strings.Contains(cerr.Error(), `"h3"`) {
		t.Fatalf("dialing h3 and meeting h1: %v; want ErrIdentity naming both hosts", cerr)
	}
	// Unknown host: any node certificate of the CA will do.
	if serr, cerr, _ := handshake(t, srv.NodeServerConfig(), peer.NodeClientConfig("")); serr != nil || cerr != nil {
		t.Fatalf("dialing an unknown host: server %v, client %v", serr, cerr)
	}
	// A server presenting a client certificate is not a node (nor a server at all).
	dir := nodeDir(t, ca, "h4")
	must(t, cert.CreateClient(dir, ca, "h1", cert.Options{}))
	must(t, os.Rename(filepath.Join(dir, cert.ClientFile("h1")), filepath.Join(dir, cert.NodeFile)))
	must(t, os.Rename(filepath.Join(dir, cert.ClientKeyFile("h1")), filepath.Join(dir, cert.NodeKeyFile)))
	fake := source(t, dir, nil)
	if _, cerr, _ := handshake(t, fake.ServerConfig(cert.NoClientCert), peer.NodeClientConfig("h1")); cerr == nil {
		t.Fatal("a server with a client certificate was taken for node h1")
	}
}

func TestClientFacingServerAppliesItsClientAuthPolicy(t *testing.T) {
	ca := newCA(t)
	srv := source(t, nodeDir(t, ca, "h1"), nil)
	cli := source(t, nodeDir(t, ca, "h2"), nil)
	anonymous := cli.ClientConfig("localhost")
	anonymous.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &tls.Certificate{}, nil }
	for _, tc := range []struct {
		auth      string
		anonymous bool // served without a certificate
	}{{"yes", false}, {"optional", true}, {"no", true}} {
		auth, err := cert.ParseClientAuth(tc.auth)
		must(t, err)
		if serr, cerr, _ := handshake(t, srv.ServerConfig(auth), cli.ClientConfig("localhost")); serr != nil || cerr != nil {
			t.Errorf("auth %s, with a certificate: server %v, client %v", tc.auth, serr, cerr)
		}
		serr, cerr, _ := handshake(t, srv.ServerConfig(auth), anonymous)
		if got := serr == nil && cerr == nil; got != tc.anonymous {
			t.Errorf("auth %s, without a certificate: served %v, want %v (server %v, client %v)", tc.auth, got, tc.anonymous, serr, cerr)
		}
	}
	if _, err := cert.ParseClientAuth("maybe"); err == nil {
		t.Error("ParseClientAuth took maybe")
	}
	// A client verifying the name finds it in the node's SANs, or refuses.
	if _, cerr, _ := handshake(t, srv.ServerConfig(cert.NoClientCert), cli.ClientConfig("elsewhere.example")); cerr == nil {
		t.Error("a certificate for h1, localhost and 127.0.0.1 passed for elsewhere.example")
	}
}

func TestOnlyTLS12AndLaterAreServed(t *testing.T) {
	ca := newCA(t)
	srv := source(t, nodeDir(t, ca, "h1"), nil)
	cli := source(t, nodeDir(t, ca, "h2"), nil)
	old := cli.ClientConfig("")
	old.MinVersion, old.MaxVersion = tls.VersionTLS10, tls.VersionTLS11
	if serr, _, _ := handshake(t, srv.ServerConfig(cert.NoClientCert), old); serr == nil {
		t.Error("a TLS 1.1 client was served")
	}
	for _, v := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
		c := cli.NodeClientConfig("h1")
		c.MinVersion, c.MaxVersion = v, v
		if serr, cerr, _ := handshake(t, srv.NodeServerConfig(), c); serr != nil || cerr != nil {
			t.Errorf("TLS %x: server %v, client %v", v, serr, cerr)
		}
	}
}

func TestReloadedCertificateIsServedWithoutRestart(t *testing.T) {
	ca := newCA(t)
	dir := nodeDir(t, ca, "h1")
	clk := &clock{t: time.Unix(1e9, 0)}
	srv := source(t, dir, clk)
	cli := source(t, nodeDir(t, ca, "h2"), nil)
	_, _, first := handshake(t, srv.NodeServerConfig(), cli.NodeClientConfig("h1"))
	must(t, cert.CreateNode(dir, ca, "h1", nil, cert.Options{Overwrite: true}))
	onDisk := readCert(t, filepath.Join(dir, cert.NodeFile))

	clk.add(500 * time.Millisecond) // within CheckInterval: the files are not looked at
	if _, _, got := handshake(t, srv.NodeServerConfig(), cli.NodeClientConfig("h1")); !got.Equal(first) {
		t.Fatal("the files were read again within CheckInterval")
	}
	clk.add(600 * time.Millisecond)
	if _, _, got := handshake(t, srv.NodeServerConfig(), cli.NodeClientConfig("h1")); !got.Equal(onDisk) {
		t.Fatalf("after CheckInterval the server still presents serial %v, want the new %v", got.SerialNumber, onDisk.SerialNumber)
	}
	if !srv.Certificate().Equal(onDisk) {
		t.Fatal("Certificate() is not the reloaded one")
	}
}

func TestUnloadableChangeKeepsTheLastGoodCertificate(t *testing.T) {
	ca := newCA(t)
	dir := nodeDir(t, ca, "h1")
	srv := source(t, dir, nil)
	cli := source(t, nodeDir(t, ca, "h2"), nil)
	good := srv.Certificate()
	must(t, os.WriteFile(filepath.Join(dir, cert.NodeFile), []byte("-----BEGIN CERTIFICATE-----\ngarbage\n"), 0o644))
	if err := srv.Check(); err == nil {
		t.Fatal("Check of a garbled certificate file returned nil")
	}
	if serr, cerr, got := handshake(t, srv.NodeServerConfig(), cli.NodeClientConfig("h1")); serr != nil || cerr != nil || !got.Equal(good) {
		t.Fatalf("after a bad change: server %v, client %v; want the last good certificate served", serr, cerr)
	}
	must(t, os.WriteFile(filepath.Join(dir, cert.CAFile), []byte("no PEM here"), 0o644))
	if err := srv.Check(); err == nil {
		t.Fatal("Check of an empty CA bundle returned nil")
	}
	if serr, cerr, _ := handshake(t, srv.NodeServerConfig(), cli.NodeClientConfig("h1")); serr != nil || cerr != nil {
		t.Fatalf("after a bad CA bundle: server %v, client %v; want the last good bundle used", serr, cerr)
	}
	must(t, cert.CreateNode(dir, ca, "h1", nil, cert.Options{Overwrite: true}))
	setBundle(t, dir, ca)
	if err := srv.Check(); err != nil || srv.Certificate().Equal(good) {
		t.Fatalf("a good change after a bad one: %v", err)
	}
}

// The rolling change of CA in docs/design/security.md, step by step, with both nodes
// serving and dialing each other after every step and no restart.
func TestRollingChangeOfCA(t *testing.T) {
	oldCA, nextCA := newCA(t), newCA(t)
	a, b := nodeDir(t, oldCA, "ha"), nodeDir(t, oldCA, "hb")
	sa, sb := source(t, a, nil), source(t, b, nil)
	talk := func(step string) {
		t.Helper()
		must(t, sa.Check())
		must(t, sb.Check())
		for _, p := range [][2]*cert.Source{{sa, sb}, {sb, sa}} {
			host := p[0].Certificate().Subject.CommonName
			if serr, cerr, _ := handshake(t, p[0].NodeServerConfig(), p[1].NodeClientConfig(host)); serr != nil || cerr != nil {
				t.Fatalf("%s: dialing %s: server %v, client %v", step, host, serr, cerr)
			}
		}
	}
	talk("start")
	// 1. Add the new CA to every node's bundle.
	setBundle(t, a, oldCA, nextCA)
	setBundle(t, b, oldCA, nextCA)
	talk("both CAs trusted")
	// 2. Reissue the node certificates from the new CA, one node at a time.
	must(t, cert.CreateNode(a, nextCA, "ha", nil, cert.Options{Overwrite: true}))
	talk("a reissued")
	must(t, cert.CreateNode(b, nextCA, "hb", nil, cert.Options{Overwrite: true}))
	talk("b reissued")
	// 3. Drop the old CA.
	setBundle(t, a, nextCA)
	setBundle(t, b, nextCA)
	talk("old CA dropped")
	// A node still on the old CA is now refused both ways.
	stale := source(t, nodeDir(t, oldCA, "hc"), nil)
	if serr, _, _ := handshake(t, sa.NodeServerConfig(), stale.NodeClientConfig("ha")); serr == nil {
		t.Error("a node certificate of the dropped CA was served")
	}
	if _, cerr, _ := handshake(t, stale.NodeServerConfig(), sa.NodeClientConfig("hc")); cerr == nil {
		t.Error("a server with a certificate of the dropped CA was dialed")
	}
	// Skipping step 1 breaks: a node reissued from a CA its peer does not trust yet.
	c, d := nodeDir(t, oldCA, "hc"), nodeDir(t, oldCA, "hd")
	sc, sd := source(t, c, nil), source(t, d, nil)
	must(t, cert.CreateNode(c, nextCA, "hc", nil, cert.Options{Overwrite: true}))
	must(t, sc.Check())
	if serr, _, _ := handshake(t, sd.NodeServerConfig(), sc.NodeClientConfig("hd")); serr == nil {
		t.Error("a node reissued from a CA not yet in its peer's bundle was served")
	}
}

// A tool's second connection to a client-facing listener resumes the first's session:
// the listener's per-handshake configurations share its ticket keys.
func TestToolConnectionsResumeTheirSession(t *testing.T) {
	ca := newCA(t)
	srv := source(t, nodeDir(t, ca, "h1"), nil)
	cfg, err := cert.ToolClientConfig(filepath.Join(ca, cert.CAFile), "", "", "localhost")
	must(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	tl := tls.NewListener(ln, srv.ServerConfig(cert.NoClientCert))
	defer tl.Close()
	go func() {
		for {
			nc, err := tl.Accept()
			if err != nil {
				return
			}
			go func() {
				defer nc.Close()
				nc.(*tls.Conn).Handshake()
				nc.Read(make([]byte, 1)) // until the client closes: it reads the ticket first
			}()
		}
	}()
	dial := func() bool {
		c, err := tls.Dial("tcp", ln.Addr().String(), cfg)
		must(t, err)
		defer c.Close()
		// A TLS 1.3 ticket arrives after the handshake: a read lets the client take it.
		c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		c.Read(make([]byte, 1))
		return c.ConnectionState().DidResume
	}
	if dial() {
		t.Fatal("the first connection resumed a session")
	}
	if !dial() {
		t.Fatal("the second connection did not resume the first's session")
	}
}
