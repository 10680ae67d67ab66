package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/kuradb/kura/internal/cert"
	"github.com/kuradb/kura/internal/membership"
)

// devSecurity is what `kura dev --secure` gives its nodes: a CA and a node certificate
// per host, a gossip key and the default user's password, all kept in the cluster's data
// directory (devSecureDir) so that the same command restarts the same secure cluster.
type devSecurity struct {
	dir      string // certs/: ca.crt, ca.key, gossip.keys, password, hostN/node.crt
	password string
}

// devSecureDir is where kura dev --secure keeps its certificates, key and password.
const devSecureDir = "certs"

// devPasswordFile holds the default user's password, 0600.
const devPasswordFile = "password"

// prepareDevSecurity creates what is missing under the data directory's certs/ and sets
// this process's admin client (waitHealthy, waitRing, kura admin) to use it.
func prepareDevSecurity(dataDir string) (*devSecurity, error) {
	s := &devSecurity{dir: filepath.Join(devRoot(dataDir), devSecureDir)}
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return nil, fmt.Errorf("dev: %w", err)
	}
	if err := cert.CreateCA(s.dir, cert.Options{}); err != nil && !errors.Is(err, cert.ErrExists) {
		return nil, fmt.Errorf("dev: %w", err)
	}
	if err := writeNew(filepath.Join(s.dir, gossipKeyFile), membership.NewKey()+"\n"); err != nil {
		return nil, err
	}
	pw := make([]byte, 16)
	rand.Read(pw)
	if err := writeNew(filepath.Join(s.dir, devPasswordFile), hex.EncodeToString(pw)+"\n"); err != nil {
		return nil, err
	}
	b, err := os.ReadFile(filepath.Join(s.dir, devPasswordFile))
	if err != nil {
		return nil, fmt.Errorf("dev: %w", err)
	}
	s.password = strings.TrimSpace(string(b))
	adminCreds.user, adminCreds.password, adminCreds.caFile = "default", s.password, s.ca()
	adminCreds.client = nil
	return s, nil
}

// loadDevSecurity sets this process's admin client from a secure dev cluster's data
// directory, if it is one (for kura dev add and remove); nothing otherwise.
func loadDevSecurity(dataDir string) error {
	if _, err := os.Stat(filepath.Join(devRoot(dataDir), devSecureDir, devPasswordFile)); err != nil {
		return nil
	}
	_, err := prepareDevSecurity(dataDir)
	return err
}

// writeNew writes data to path, 0600, unless the file exists.
func writeNew(path, data string) error {
	if _, err := os.Stat(path); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		return fmt.Errorf("dev: %w", err)
	}
	return nil
}

func (s *devSecurity) ca() string { return filepath.Join(s.dir, cert.CAFile) }

// nodeFlags makes host's node certificate if it has none and returns the flags that turn
// every protection on for a node whose RESP port is client (host:port): clients over TLS
// only on that port, with the password and no client certificate asked; the admin
// endpoints over HTTPS behind the password; mutual TLS between nodes; encrypted gossip.
func (s *devSecurity) nodeFlags(host, client string) ([]string, error) {
	dir := filepath.Join(s.dir, host)
	if err := cert.CreateNode(dir, s.dir, host, []string{"127.0.0.1"}, cert.Options{}); err != nil && !errors.Is(err, cert.ErrExists) {
		return nil, fmt.Errorf("dev: %w", err)
	}
	port := client[strings.LastIndexByte(client, ':')+1:]
	return []string{"--tls-port", port, "--plaintext-clients=false", "--tls-auth-clients", "no",
		"--tls-cert-file", filepath.Join(dir, cert.NodeFile), "--tls-key-file", filepath.Join(dir, cert.NodeKeyFile),
		"--tls-ca-cert-file", s.ca(), "--tls-internode", "--admin-tls", "--password", s.password,
		"--gossip-keyring-file", filepath.Join(s.dir, gossipKeyFile)}, nil
}
