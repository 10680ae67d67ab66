package clients

import (
	"bufio"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// devReady bounds how long `kura dev` may take to bring its ring up: race-built nodes on
// a loaded 2-core machine have taken tens of seconds (cmd/kura's tests say the same). It
// is a limit for a hung start, not a measure of a slow one.
const devReady = 150 * time.Second

var devNodeLine = regexp.MustCompile(`host\d+-lsm\s+redis-cli -p (\d+)`)

// startKura builds kura and runs `kura dev` with three lsm nodes on three hosts (its
// defaults: replication factor 3, QUORUM), and returns the nodes' RESP addresses once
// the ring is ready. The cluster is stopped when the test ends.
func startKura(t *testing.T) []string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "kura")
	// -race, as every package of `go test -race ./...` is built: the build then reuses
	// their compiled packages and only links.
	build := exec.Command("go", "build", "-race", "-o", bin, "github.com/kuradb/kura/cmd/kura")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build kura: %v\n%s", err, out)
	}
	dataDir := t.TempDir()
	cmd := exec.Command(bin, "dev", "--hosts", "3", "--engines", "lsm", "--data-dir", dataDir,
		"--base-port", strconv.Itoa(freeBasePort(t, 3)), "--ready-timeout", devReady.String(),
		"--stop-timeout", "10s")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGINT)
		_ = cmd.Wait()
		if t.Failed() {
			logs, _ := exec.Command("sh", "-c", "tail -n 20 "+dataDir+"/*.log").CombinedOutput()
			t.Logf("kura node logs:\n%s", logs)
		}
	})
	addrs := make(chan []string, 1)
	go func() {
		var found []string
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := devNodeLine.FindStringSubmatch(sc.Text()); m != nil {
				found = append(found, "127.0.0.1:"+m[1])
			}
			if strings.HasPrefix(sc.Text(), "Ctrl-C stops") {
				addrs <- found
				break
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case a := <-addrs:
		if len(a) != 3 {
			t.Fatalf("kura dev printed %d nodes, want 3", len(a))
		}
		return a
	case <-time.After(devReady + 30*time.Second):
		t.Fatalf("kura dev was not ready after %v", devReady+30*time.Second)
	}
	return nil
}

// freeBasePort returns a --base-port for `kura dev` whose four ranges of n ports (RESP,
// admin, gossip, internode: base, base+1000, ...) are free now, below the kernel's
// ephemeral range, where an outgoing connection cannot take one first.
func freeBasePort(t *testing.T, n int) int {
	t.Helper()
	ephemeral := 32768 // Linux's default lower bound
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if lo, err := strconv.Atoi(strings.Fields(string(b))[0]); err == nil {
			ephemeral = lo
		}
	}
	const lowest = 10000
	if ephemeral-3000-n <= lowest {
		t.Fatalf("the ephemeral port range starts at %d: no room below it for a dev cluster", ephemeral)
	}
search:
	for range 50 {
		base := lowest + rand.IntN(ephemeral-3000-n-lowest)
		for off := 0; off <= 3000; off += 1000 {
			for k := range n {
				ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(base+off+k))
				if err != nil {
					continue search
				}
				ln.Close()
			}
		}
		return base
	}
	t.Fatal("no free range of ports for kura dev")
	return 0
}
