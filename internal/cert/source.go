package cert

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// ErrIdentity is wrapped by every refusal of a peer whose certificate, though signed by
// the CA, is not the identity expected: not a node's, or another host's.
var ErrIdentity = errors.New("cert: wrong identity")

// Files names a node's certificate, its key and the CA bundle (one or more PEM
// certificates) that peers' certificates must chain to.
type Files struct {
	Cert, Key, CA string
}

// SourceOptions tune a Source. The zero value is the default.
type SourceOptions struct {
	// CheckInterval is the least time between two looks at the files (a stat of each):
	// a handshake sooner after the last look uses what was loaded then. Default 1 s.
	CheckInterval time.Duration
	// Now reads the clock for CheckInterval; default time.Now. Tests advance their own.
	Now func() time.Time
	// Logger receives reloads and failed reloads. Default slog.Default().
	Logger *slog.Logger
}

// Source serves TLS configurations built from Files, and re-reads the files when they
// change, so that a renewed certificate or a changed CA bundle needs no restart: each
// handshake (through GetConfigForClient on a server, GetClientCertificate and
// VerifyConnection on a client) looks at the files' modification time, size and
// identity at most once per CheckInterval, and loads them again if any changed. A change
// that fails to load (a half-written file, a key that is not the certificate's) keeps
// the last good certificate and bundle, logs the error, and is tried again at the next
// change; Check returns it. Safe for concurrent use.
type Source struct {
	files    Files
	interval time.Duration
	now      func() time.Time
	log      *slog.Logger

	cur     atomic.Pointer[material]
	checked atomic.Int64 // when the files were last looked at, in Unix nanoseconds

	mu      sync.Mutex     // serializes looks at the files
	stats   [3]os.FileInfo // of Cert, Key and CA when last loaded or tried
	lastErr error          // of the last load tried
}

// material is one load of the files.
type material struct {
	cert tls.Certificate
	leaf *x509.Certificate
	pool *x509.CertPool
}

// NewSource loads f, which must load, and returns a Source serving it.
func NewSource(f Files, o SourceOptions) (*Source, error) {
	if f.Cert == "" || f.Key == "" || f.CA == "" {
		return nil, fmt.Errorf("cert: a TLS source needs a certificate, a key and a CA file (got %q, %q, %q)", f.Cert, f.Key, f.CA)
	}
	s := &Source{files: f, interval: o.CheckInterval, now: o.Now, log: o.Logger}
	if s.interval == 0 {
		s.interval = time.Second
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stats = s.stat()
	m, err := load(f)
	if err != nil {
		return nil, err
	}
	s.cur.Store(m)
	s.checked.Store(s.now().UnixNano())
	return s, nil
}

// Check looks at the files now, whatever CheckInterval, and loads them if they changed;
// it returns the error of the last load tried (nil when the files in use are the ones on
// disk).
func (s *Source) Check() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.checkLocked()
}

// checkLocked is Check with s.mu held.
func (s *Source) checkLocked() error {
	s.checked.Store(s.now().UnixNano())
	st := s.stat()
	if sameStats(st, s.stats) {
		return s.lastErr
	}
	s.stats = st
	m, err := load(s.files)
	s.lastErr = err
	if err != nil {
		s.log.Error("TLS files changed but do not load: serving the previous certificate and CA bundle",
			"cert", s.files.Cert, "ca", s.files.CA, "err", err)
		return err
	}
	s.cur.Store(m)
	s.log.Info("TLS files reloaded", "cert", s.files.Cert, "subject", m.leaf.Subject.String(),
		"not_after", m.leaf.NotAfter, "ca", s.files.CA)
	return nil
}

// material returns what to serve, looking at the files first when CheckInterval passed.
func (s *Source) material() *material {
	if s.due() {
		s.mu.Lock()
		if s.due() { // not looked at by a handshake that held the lock first
			s.checkLocked() // its error is logged; the previous material is kept
		}
		s.mu.Unlock()
	}
	return s.cur.Load()
}

func (s *Source) due() bool { return s.now().UnixNano()-s.checked.Load() >= int64(s.interval) }

// Certificate returns the certificate served now (it does not look at the files).
func (s *Source) Certificate() *x509.Certificate { return s.cur.Load().leaf }

func (s *Source) stat() [3]os.FileInfo {
	var out [3]os.FileInfo
	for i, p := range []string{s.files.Cert, s.files.Key, s.files.CA} {
		out[i], _ = os.Stat(p) // a missing file is a change too; its load reports it
	}
	return out
}

func sameStats(a, b [3]os.FileInfo) bool {
	for i := range a {
		switch {
		case a[i] == nil || b[i] == nil:
			if a[i] != b[i] {
				return false
			}
		case !os.SameFile(a[i], b[i]) || !a[i].ModTime().Equal(b[i].ModTime()) || a[i].Size() != b[i].Size():
			return false
		}
	}
	return true
}

// load reads and checks f.
func load(f Files) (*material, error) {
	c, err := tls.LoadX509KeyPair(f.Cert, f.Key)
	if err != nil {
		return nil, fmt.Errorf("cert: load %s and %s: %w", f.Cert, f.Key, err)
	}
	leaf := c.Leaf
	if leaf == nil {
		if leaf, err = x509.ParseCertificate(c.Certificate[0]); err != nil {
			return nil, fmt.Errorf("cert: parse %s: %w", f.Cert, err)
		}
	}
	cas, err := readCerts(f.CA)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	for _, ca := range cas {
		pool.AddCert(ca)
	}
	return &material{cert: c, leaf: leaf, pool: pool}, nil
}

// minVersion: TLS 1.2 and 1.3 only.
const minVersion = tls.VersionTLS12

// ClientAuth is what a client-facing server asks of clients' certificates.
type ClientAuth int

// Client certificate policies, Redis's tls-auth-clients.
const (
	// RequireClientCert: a client must present a certificate that chains to the CA
	// bundle (Redis's "yes", its default).
	RequireClientCert ClientAuth = iota
	// OptionalClientCert: a client may present one, which must then chain to the bundle.
	OptionalClientCert
	// NoClientCert: no certificate is asked for.
	NoClientCert
)

// ParseClientAuth reads Redis's tls-auth-clients values: yes, optional or no.
func ParseClientAuth(s string) (ClientAuth, error) {
	switch s {
	case "yes":
		return RequireClientCert, nil
	case "optional":
		return OptionalClientCert, nil
	case "no":
		return NoClientCert, nil
	}
	return 0, fmt.Errorf("cert: client auth %q: want yes, optional or no", s)
}

// ServerConfig is the configuration of the client-facing (RESP) TLS listener. Any
// certificate chaining to the CA bundle authenticates a client: which user it is, is
// for the access rules to say.
func (s *Source) ServerConfig(auth ClientAuth) *tls.Config {
	mode := tls.RequireAndVerifyClientCert
	switch auth {
	case OptionalClientCert:
		mode = tls.VerifyClientCertIfGiven
	case NoClientCert:
		mode = tls.NoClientCert
	}
	return s.serverConfig(mode, nil)
}

// NodeServerConfig is the configuration of the internode listener: a peer must present
// a node certificate (OU kura-node) chaining to the CA bundle; a client certificate of
// the same CA is refused.
func (s *Source) NodeServerConfig() *tls.Config {
	return s.serverConfig(tls.RequireAndVerifyClientCert, func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return fmt.Errorf("%w: the peer sent no certificate", ErrIdentity)
		}
		return isNode(cs.PeerCertificates[0])
	})
}

func (s *Source) serverConfig(mode tls.ClientAuthType, verify func(tls.ConnectionState) error) *tls.Config {
	return &tls.Config{
		MinVersion: minVersion,
		// A configuration per handshake, from the files as they are now: a tls.Config's
		// ClientCAs cannot change once it is in use.
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			m := s.material()
			return &tls.Config{MinVersion: minVersion, Certificates: []tls.Certificate{m.cert},
				ClientAuth: mode, ClientCAs: m.pool, VerifyConnection: verify}, nil
		},
	}
}

// NodeClientConfig is the configuration a node dials another node's internode port with:
// it presents the node certificate, and requires the peer's to chain to the CA bundle, to
// be a node certificate (OU kura-node) and, when host is not empty, to name host (its
// CN), the peer's host label as this node's ring has it.
func (s *Source) NodeClientConfig(host string) *tls.Config {
	return s.clientConfig("", func(leaf *x509.Certificate) error {
		if err := isNode(leaf); err != nil {
			return err
		}
		if host != "" && leaf.Subject.CommonName != host {
			return fmt.Errorf("%w: the peer's certificate is for host %q, but the ring says the node at this address is on host %q",
				ErrIdentity, leaf.Subject.CommonName, host)
		}
		return nil
	})
}

// ClientConfig is the configuration of a client of a kura server (a tool, a test): it
// presents the source's certificate when asked and requires the server's to chain to the
// CA bundle and, when serverName is not empty, to be valid for it.
func (s *Source) ClientConfig(serverName string) *tls.Config {
	return s.clientConfig(serverName, func(*x509.Certificate) error { return nil })
}

func (s *Source) clientConfig(serverName string, check func(leaf *x509.Certificate) error) *tls.Config {
	return &tls.Config{
		MinVersion: minVersion,
		ServerName: serverName,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return &s.material().cert, nil
		},
		// A tls.Config's RootCAs cannot change once it is in use, so the chain is
		// verified here, against the bundle as it is now, instead of by crypto/tls.
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return fmt.Errorf("%w: the server sent no certificate", ErrIdentity)
			}
			opts := x509.VerifyOptions{Roots: s.material().pool, Intermediates: x509.NewCertPool(),
				KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, DNSName: serverName}
			for _, c := range cs.PeerCertificates[1:] {
				opts.Intermediates.AddCert(c)
			}
			if _, err := cs.PeerCertificates[0].Verify(opts); err != nil {
				return fmt.Errorf("cert: verify the server's certificate: %w", err)
			}
			return check(cs.PeerCertificates[0])
		},
	}
}

// isNode checks that c is a node certificate.
func isNode(c *x509.Certificate) error {
	if !slices.Contains(c.Subject.OrganizationalUnit, NodeOU) {
		return fmt.Errorf("%w: the peer's certificate (%s) is not a node certificate (OU %s)", ErrIdentity, c.Subject, NodeOU)
	}
	return nil
}

// ToolClientConfig is the configuration of a tool that connects to servers it does not
// run (kura bench against kura or Redis, kura admin): the server's certificate must chain
// to the CA bundle in caFile (the system's roots when empty) and be valid for serverName
// (each address's host when empty); certFile and keyFile, when set, are the client
// certificate it presents. Read once: a tool's run is short. Sessions are cached, so that
// a new connection to a server already met resumes its session (an abbreviated handshake,
// no signature) as a Redis client with a session cache does; kura's servers issue
// tickets (crypto/tls's default, with the listener's own keys).
func ToolClientConfig(caFile, certFile, keyFile, serverName string) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: minVersion, ServerName: serverName, ClientSessionCache: tls.NewLRUClientSessionCache(256)}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("cert: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("cert: %s holds no PEM certificate", caFile)
		}
	}
	if (certFile == "") != (keyFile == "") {
		return nil, errors.New("cert: a client certificate and its key go together")
	}
	if certFile != "" {
		c, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("cert: %w", err)
		}
		cfg.Certificates = []tls.Certificate{c}
	}
	return cfg, nil
}
