package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/kuradb/kura/internal/cert"
)

// A kura server asked to listen beyond loopback refuses to start while a listener is
// unprotected, saying what to set; it starts with --insecure, and with TLS and a password.
func TestNonLoopbackServerStartsOnlyProtectedOrInsecure(t *testing.T) {
	ctx := context.Background()
	out, err := exec.Command(kuraBin, "server", "--listen", "0.0.0.0:0", "--admin-listen", "", "--data-dir", t.TempDir()).CombinedOutput()
	if err == nil {
		t.Fatal("an unprotected node started on 0.0.0.0")
	}
	for _, want := range []string{"refusing to listen on a network unprotected", "RESP listens on 0.0.0.0:0 in plain text", "--insecure"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the refusal does not say %q:\n%s", want, out)
		}
	}

	p := startKuraAt(t, "0.0.0.0:0", "", "--data-dir", t.TempDir(), "--insecure")
	_, port, _ := net.SplitHostPort(p.addr)
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + port})
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("--insecure node: %v", err)
	}
	c.Close()

	certs := t.TempDir()
	if err := cert.CreateCA(certs, cert.Options{}); err != nil {
		t.Fatal(err)
	}
	if err := cert.CreateNode(certs, certs, "h1", []string{"127.0.0.1"}, cert.Options{}); err != nil {
		t.Fatal(err)
	}
	tlsPort := freeBasePort(t, 1)
	p = startKuraAt(t, "0.0.0.0:0", "", "--data-dir", t.TempDir(), "--plaintext-clients=false", "--tls-port", strconv.Itoa(tlsPort),
		"--tls-auth-clients", "no", "--password", "pw", "--tls-cert-file", filepath.Join(certs, cert.NodeFile),
		"--tls-key-file", filepath.Join(certs, cert.NodeKeyFile), "--tls-ca-cert-file", filepath.Join(certs, cert.CAFile))
	m := regexp.MustCompile(`tls_listen=(\S+)`).FindStringSubmatch(p.logs())
	if m == nil || !strings.HasSuffix(m[1], ":"+strconv.Itoa(tlsPort)) {
		t.Fatalf("no TLS listener on %d in the ready line:\n%s", tlsPort, p.logs())
	}
	ca, err := os.ReadFile(filepath.Join(certs, cert.CAFile))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca)
	c = redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(tlsPort), Password: "pw", DialTimeout: 5 * time.Second,
		TLSConfig: &tls.Config{RootCAs: roots, ServerName: "localhost"}})
	defer c.Close()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("a protected node over TLS: %v", err)
	}
}
