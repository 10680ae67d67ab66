package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// `kura dev --secure` serves clients over TLS only, behind the password it keeps in
// certs/password: go-redis and redis-cli with the CA connect and work (while go-redis
// writes, every acknowledged write is read back from another node), a client without the
// password or with a wrong one gets Redis's errors, a plain-text client gets nothing, and
// the admin endpoints refuse a request without credentials.
func TestDevSecureServesTLSClientsWithThePassword(t *testing.T) {
	base := freeBasePort(t, 3)
	dataDir := logsOnFailure(t, t.TempDir())
	_, nodes := startDev(t, "--hosts", "3", "--engines", "lsm", "--data-dir", dataDir, "--base-port", strconv.Itoa(base), "--secure")
	if len(nodes) != 3 {
		t.Fatalf("kura dev --secure printed %d nodes", len(nodes))
	}
	certs := filepath.Join(dataDir, devSecureDir)
	pwb, err := os.ReadFile(filepath.Join(certs, devPasswordFile))
	if err != nil {
		t.Fatal(err)
	}
	pw := strings.TrimSpace(string(pwb))
	caPEM, err := os.ReadFile(filepath.Join(certs, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	client := func(name, pass string) *redis.Client {
		c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + nodes[name].port, Password: pass, MaxRetries: -1,
			TLSConfig: &tls.Config{RootCAs: roots, ServerName: "localhost", MinVersion: tls.VersionTLS12}})
		t.Cleanup(func() { c.Close() })
		return c
	}
	ctx := context.Background()

	// Two writers on two nodes at QUORUM, then every acknowledged write read back at ALL
	// from the third.
	var mu sync.Mutex
	acked := map[string]string{}
	var wg sync.WaitGroup
	for w, name := range []string{"host1-lsm", "host2-lsm"} {
		c := client(name, pw)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				k, v := fmt.Sprintf("w%d-k%d", w, i), fmt.Sprintf("v%d", i)
				if err := c.Set(ctx, k, v, 0).Err(); err == nil {
					mu.Lock()
					acked[k] = v
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if len(acked) < 300 {
		t.Fatalf("only %d of 400 writes over TLS were acknowledged", len(acked))
	}
	reader := client("host3-lsm", pw)
	if err := reader.Do(ctx, "KURA.CONSISTENCY", "ALL").Err(); err != nil {
		t.Fatal(err)
	}
	for k, v := range acked {
		if got, err := reader.Get(ctx, k).Result(); err != nil || got != v {
			t.Fatalf("acknowledged %s=%s read back as %q, %v", k, v, got, err)
		}
	}

	// Redis's errors without the password and with a wrong one.
	if err := client("host1-lsm", "").Get(ctx, "w0-k1").Err(); err == nil || !strings.HasPrefix(err.Error(), "NOAUTH") {
		t.Fatalf("without a password: %v, want NOAUTH", err)
	}
	if err := client("host1-lsm", "wrong").Ping(ctx).Err(); err == nil || !strings.HasPrefix(err.Error(), "WRONGPASS") {
		t.Fatalf("a wrong password: %v, want WRONGPASS", err)
	}
	// Plain text on the client port gets no reply.
	nc, err := net.DialTimeout("tcp", "127.0.0.1:"+nodes["host1-lsm"].port, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	nc.SetDeadline(time.Now().Add(5 * time.Second))
	nc.Write([]byte("*1\r\n$4\r\nPING\r\n"))
	if n, err := nc.Read(make([]byte, 64)); err == nil && n > 0 {
		t.Fatalf("a plain-text PING got %d bytes back", n)
	}
	nc.Close()

	if path, err := exec.LookPath("redis-cli"); err == nil {
		out, err := exec.Command(path, "-p", nodes["host2-lsm"].port, "--tls", "--cacert", filepath.Join(certs, "ca.crt"),
			"--pass", pw, "--no-auth-warning", "get", "w0-k7").CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != "v7" {
			t.Fatalf("redis-cli --tls: %q, %v", out, err)
		}
	} else if os.Getenv("CI") == "true" {
		t.Fatal("redis-cli is not installed")
	}

	// The admin endpoints: https, and a request without credentials is refused.
	saved := *adminCreds
	t.Cleanup(func() { *adminCreds = saved })
	*adminCreds = adminAuth{caFile: filepath.Join(certs, "ca.crt")}
	if _, err := fetchStatus(ctx, nodes["host1-lsm"].admin); err == nil || !strings.Contains(err.Error(), "authentication required") {
		t.Fatalf("admin status without credentials: %v", err)
	}
	*adminCreds = adminAuth{caFile: filepath.Join(certs, "ca.crt"), user: "default", password: pw}
	st, err := fetchStatus(ctx, nodes["host1-lsm"].admin)
	if err != nil {
		t.Fatalf("admin status with the password: %v", err)
	}
	if len(st.Members) != 3 {
		t.Fatalf("admin status with the password: %d members", len(st.Members))
	}
}
