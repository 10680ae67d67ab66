package resp

import (
	"net"
	"os/exec"
	"strings"
	"testing"

	"github.com/kuradb/kura/internal/redistest"
)

// compatScript is a session whose replies must be byte for byte what redis-server sends,
// as redis-cli prints them: every reply type that differs between RESP2 and RESP3 (null,
// maps) and the commands whose null replies differ by position (MGET, HMGET, SET ... GET).
var compatScript = []string{
	"SET a hello", "GET a", "GET nope", "MGET a nope", "SET a x NX GET", "SET n w XX",
	"HSET h f1 v1 f2 v2", "HGETALL h", "HGETALL nope", "HMGET h f1 nope", "HGET h nope",
	"HGET h f2", "GET h", "CONFIG GET maxclients", "CONFIG GET nope", "CLIENT GETNAME",
	"EXPIRE a 100", "TTL a", "TTL nope", "DEL a n h", "EXISTS a",
}

// TestRedisCLIRepliesAsRedisServerDoes runs compatScript through the real redis-cli in
// RESP2 and RESP3 (-3) against kura and against a real redis-server, and compares what
// redis-cli prints.
func TestRedisCLIRepliesAsRedisServerDoes(t *testing.T) {
	path, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Skip("redis-cli not installed")
	}
	redisAddr := redistest.Start(t)
	checkLeaks(t)
	ts := startServer(t, Config{})
	for _, protocol := range []string{"-2", "-3"} {
		t.Run(protocol, func(t *testing.T) {
			want := runCLI(t, path, redisAddr, protocol)
			got := runCLI(t, path, ts.addr, protocol)
			for i := range compatScript {
				if got[i] != want[i] {
					t.Errorf("%s:\nkura:\n%s\nredis-server:\n%s", compatScript[i], got[i], want[i])
				}
			}
		})
	}
}

// runCLI runs each line of compatScript with its own redis-cli process (so that each
// output is one reply) and returns what redis-cli printed, formatted as on a terminal.
func runCLI(t *testing.T, path, addr, protocol string) []string {
	host, port, _ := net.SplitHostPort(addr)
	out := make([]string, len(compatScript))
	for i, line := range compatScript {
		args := append([]string{"-h", host, "-p", port, protocol, "--no-raw"}, strings.Fields(line)...)
		b, err := exec.Command(path, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("redis-cli %s against %s: %v\n%s", line, addr, err, b)
		}
		out[i] = string(b)
	}
	return out
}
