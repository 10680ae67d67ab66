package cert

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// The organizational units that tell kura's identities apart. Every certificate a kura
// CA signs carries one: a node's certificate serves and dials the internode port (and
// may serve clients), a client's only authenticates a client.
const (
	NodeOU   = "kura-node"
	ClientOU = "kura-client"
)

// The files CreateCA and CreateNode write in their directory.
const (
	CAFile      = "ca.crt"
	CAKeyFile   = "ca.key"
	NodeFile    = "node.crt"
	NodeKeyFile = "node.key"
)

// ClientFile and ClientKeyFile name the files CreateClient writes for user.
func ClientFile(user string) string    { return "client." + user + ".crt" }
func ClientKeyFile(user string) string { return "client." + user + ".key" }

// Errors of the issuing functions.
var (
	// ErrExists: a file to write exists and Options.Overwrite is false.
	ErrExists = errors.New("cert: file exists")
	// ErrBadName: an empty or unusable host label or user name.
	ErrBadName = errors.New("cert: bad name")
)

// Options tune the issuing functions. The zero value is a sensible default.
type Options struct {
	// Overwrite replaces existing files; by default an existing file is an ErrExists and
	// nothing is written.
	Overwrite bool
	// Validity is how long a certificate is valid from issue. Default: 10 years for a
	// CA, 5 years for a node or client certificate (CockroachDB's defaults).
	Validity time.Duration
	// Now is the issue time; default time.Now. Certificates are valid from an hour
	// before it, for clocks a little behind.
	Now func() time.Time
}

func (o Options) window(def time.Duration) (time.Time, time.Time) {
	now := time.Now()
	if o.Now != nil {
		now = o.Now()
	}
	v := o.Validity
	if v == 0 {
		v = def
	}
	return now.Add(-time.Hour), now.Add(v)
}

// CreateCA writes a new self-signed certificate authority (ECDSA P-256) to dir/ca.crt and
// its key to dir/ca.key (mode 0600), creating dir if needed. It is a development CA:
// production deployments may bring their own, as long as the certificates it signs
// follow the identity rules (docs/design/security.md).
func CreateCA(dir string, o Options) error {
	if err := checkFree(o, filepath.Join(dir, CAFile), filepath.Join(dir, CAKeyFile)); err != nil {
		return err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("cert: generate key: %w", err)
	}
	from, until := o.window(10 * 365 * 24 * time.Hour)
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{Organization: []string{"kura"}, CommonName: "kura CA"},
		NotBefore:             from,
		NotAfter:              until,
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}
	return issue(dir, CAFile, CAKeyFile, tmpl, key, nil, nil)
}

// CreateNode writes a node certificate signed by the CA in caDir to dir/node.crt and
// dir/node.key: usable as a server and as a client (the internode port is both), Subject
// OU kura-node, CN host (the node's --host label), and subject alternative names for
// host, localhost and each of addrs (an IP address or a DNS name; a host:port is taken
// for its host).
func CreateNode(dir, caDir, host string, addrs []string, o Options) error {
	if host == "" || strings.ContainsAny(host, "/\\ ") {
		return fmt.Errorf("%w: host label %q", ErrBadName, host)
	}
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{Organization: []string{"kura"}, OrganizationalUnit: []string{NodeOU}, CommonName: host},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	for _, a := range append([]string{host, "localhost"}, addrs...) {
		if h, _, err := net.SplitHostPort(a); err == nil {
			a = h
		}
		if a = strings.TrimSpace(a); a == "" {
			continue
		}
		if ip := net.ParseIP(a); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else if !slices.Contains(tmpl.DNSNames, a) {
			tmpl.DNSNames = append(tmpl.DNSNames, a)
		}
	}
	return issueSigned(dir, caDir, NodeFile, NodeKeyFile, tmpl, o)
}

// CreateClient writes a client certificate for user signed by the CA in caDir to
// dir/client.<user>.crt and .key: client authentication only, Subject OU kura-client,
// CN user.
func CreateClient(dir, caDir, user string, o Options) error {
	if user == "" || strings.ContainsAny(user, "/\\ ") {
		return fmt.Errorf("%w: user %q", ErrBadName, user)
	}
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{Organization: []string{"kura"}, OrganizationalUnit: []string{ClientOU}, CommonName: user},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	return issueSigned(dir, caDir, ClientFile(user), ClientKeyFile(user), tmpl, o)
}

// issueSigned signs tmpl with the CA in caDir and writes it to dir.
func issueSigned(dir, caDir, certName, keyName string, tmpl *x509.Certificate, o Options) error {
	if err := checkFree(o, filepath.Join(dir, certName), filepath.Join(dir, keyName)); err != nil {
		return err
	}
	ca, caKey, err := loadCA(caDir)
	if err != nil {
		return err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("cert: generate key: %w", err)
	}
	tmpl.NotBefore, tmpl.NotAfter = o.window(5 * 365 * 24 * time.Hour)
	if tmpl.NotAfter.After(ca.NotAfter) {
		tmpl.NotAfter = ca.NotAfter
	}
	return issue(dir, certName, keyName, tmpl, key, ca, caKey)
}

// issue signs tmpl (by itself when parent is nil) and writes the certificate and key.
func issue(dir, certName, keyName string, tmpl *x509.Certificate, key *ecdsa.PrivateKey, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) error {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return fmt.Errorf("cert: serial: %w", err)
	}
	tmpl.SerialNumber = serial
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		return fmt.Errorf("cert: sign %s: %w", certName, err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return fmt.Errorf("cert: encode key: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("cert: %w", err)
	}
	// The key first: a certificate without its key is useless, a key alone is harmless
	// to retry over with Overwrite.
	if err := writeFile(filepath.Join(dir, keyName), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return err
	}
	return writeFile(filepath.Join(dir, certName), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
}

// checkFree refuses to go on when one of paths exists and o does not allow overwriting.
func checkFree(o Options, paths ...string) error {
	if o.Overwrite {
		return nil
	}
	for _, p := range paths {
		if _, err := os.Stat(p); err == nil {
			return fmt.Errorf("%w: %s (pass overwrite to replace it)", ErrExists, p)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("cert: %w", err)
		}
	}
	return nil
}

// writeFile replaces path with data atomically (a temporary file renamed over it), so
// that a node reloading its files never reads half of one.
func writeFile(path string, data []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("cert: %w", err)
	}
	defer os.Remove(tmp.Name()) // after the rename, a no-op
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return fmt.Errorf("cert: %w", err)
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("cert: write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("cert: write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("cert: %w", err)
	}
	return nil
}

// loadCA reads the CA certificate and key in dir (the first certificate of ca.crt).
func loadCA(dir string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	certs, err := readCerts(filepath.Join(dir, CAFile))
	if err != nil {
		return nil, nil, err
	}
	keyPEM, err := os.ReadFile(filepath.Join(dir, CAKeyFile))
	if err != nil {
		return nil, nil, fmt.Errorf("cert: read CA key: %w", err)
	}
	b, _ := pem.Decode(keyPEM)
	if b == nil {
		return nil, nil, fmt.Errorf("cert: %s: no PEM block", filepath.Join(dir, CAKeyFile))
	}
	k, err := x509.ParsePKCS8PrivateKey(b.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("cert: parse CA key: %w", err)
	}
	key, ok := k.(*ecdsa.PrivateKey)
	if !ok {
		return nil, nil, fmt.Errorf("cert: CA key is a %T, want ECDSA", k)
	}
	if pub, ok := certs[0].PublicKey.(*ecdsa.PublicKey); !ok || !pub.Equal(&key.PublicKey) {
		return nil, nil, fmt.Errorf("cert: %s: the first certificate is not the key's", filepath.Join(dir, CAFile))
	}
	return certs[0], key, nil
}

// readCerts parses every certificate of a PEM file; it fails on a file with none.
func readCerts(path string) ([]*x509.Certificate, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cert: %w", err)
	}
	var out []*x509.Certificate
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("cert: parse %s: %w", path, err)
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("cert: %s holds no certificate", path)
	}
	return out, nil
}
