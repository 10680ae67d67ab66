package resp

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strings"
	"testing"

	"github.com/kuradb/kura/internal/row"
)

// nopStore answers every Get with one fixed row and drops writes, so that benchmarks see
// the handler's own cost.
type nopStore struct{ r row.Row }

func (s *nopStore) Apply([]row.Mutation) error        { return nil }
func (s *nopStore) Get([]byte) (row.Row, bool, error) { return s.r, true, nil }
func newNopStore(value []byte) *nopStore {
	return &nopStore{row.Row{Cells: []row.Cell{{Name: stringColumn, Value: value, Timestamp: 1}}}}
}

// BenchmarkHandler measures Do per command without a store; allocs/op should be 0.
func BenchmarkHandler(b *testing.B) {
	value := bytes.Repeat([]byte("v"), 100)
	h, err := NewHandler(Config{Store: newNopStore(value)})
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		args []string
	}{
		{"get", []string{"GET", "key:000000001"}},
		{"set", []string{"SET", "key:000000001", string(value)}},
		{"set-ex", []string{"set", "key:000000001", string(value), "EX", "100"}},
		{"hget", []string{"HGET", "key:000000001", "f"}},
		{"ping", []string{"PING"}},
	} {
		b.Run("cmd="+bc.name, func(b *testing.B) {
			args := make([][]byte, len(bc.args))
			for i, a := range bc.args {
				args[i] = []byte(a)
			}
			s := h.NewSession()
			out := make([]byte, 0, 4096)
			b.ReportAllocs()
			for b.Loop() {
				out = h.Do(out[:0], args, s)
			}
		})
	}
}

// BenchmarkServerPipeline drives the full server over loopback with the reference store:
// pipelines of SET or GET as redis-benchmark -P sends them.
func BenchmarkServerPipeline(b *testing.B) {
	for _, cmd := range []string{"SET", "GET"} {
		for _, depth := range []int{1, 16} {
			b.Run(fmt.Sprintf("cmd=%s/pipeline=%d", strings.ToLower(cmd), depth), func(b *testing.B) {
				benchPipeline(b, cmd, depth)
			})
		}
	}
}

func benchPipeline(b *testing.B, cmd string, depth int) {
	store := newMemStore()
	srv, err := New(Config{Store: store})
	if err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Close()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	br := bufio.NewReader(nc)
	// GET reads keys that exist, so every reply is two lines ("$3", "xxx").
	roundTrip := func(req []byte, linesPerReply int) {
		if _, err := nc.Write(req); err != nil {
			b.Fatal(err)
		}
		for range depth * linesPerReply {
			if _, err := br.ReadSlice('\n'); err != nil {
				b.Fatal(err)
			}
		}
	}
	sets, gets := pipelineRequests(depth)
	req, lines := sets, 1
	if cmd == "GET" {
		roundTrip(sets, 1)
		req, lines = gets, 2
	}
	b.ReportAllocs()
	for b.Loop() {
		roundTrip(req, lines)
	}
	b.ReportMetric(float64(b.N*depth)/b.Elapsed().Seconds(), "cmds/s")
}

// pipelineRequests encodes depth SETs and depth GETs of distinct keys.
func pipelineRequests(depth int) (sets, gets []byte) {
	var s, g bytes.Buffer
	for i := range depth {
		key := fmt.Sprintf("key:%012d", i)
		fmt.Fprintf(&s, "*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$3\r\nxxx\r\n", len(key), key)
		fmt.Fprintf(&g, "*2\r\n$3\r\nGET\r\n$%d\r\n%s\r\n", len(key), key)
	}
	return s.Bytes(), g.Bytes()
}

// TestRedisCLI talks to the server with the real redis-cli when it is installed.
func TestRedisCLI(t *testing.T) {
	path, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Skip("redis-cli not installed")
	}
	checkLeaks(t)
	ts := startServer(t, Config{})
	_, port, _ := net.SplitHostPort(ts.addr)
	cli := func(args ...string) string {
		out, err := exec.Command(path, append([]string{"-p", port}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("redis-cli %q: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	check(t, "set", cli("SET", "a", "hello"), "OK")
	check(t, "get", cli("GET", "a"), "hello")
	check(t, "hset", cli("HSET", "h", "f", "v"), "1")
	check(t, "hgetall", cli("HGETALL", "h"), "f\nv")
	check(t, "wrongtype", strings.Contains(cli("GET", "h"), "WRONGTYPE"), true)
	if !strings.Contains(cli("COMMAND", "DOCS", "get"), "summary") {
		t.Fatal("COMMAND DOCS has no summary")
	}
	// Commands read from stdin, as a script would pipe them.
	cmd := exec.Command(path, "-p", port)
	cmd.Stdin = strings.NewReader("SET b 2\nGET b\nDBSIZE\n")
	out, err := cmd.CombinedOutput()
	check(t, "stdin", strings.TrimSpace(string(out))+fmt.Sprint(err), "OK\n2\n3<nil>")
}

// TestRedisBenchmark runs a short redis-benchmark, pipelined, when it is installed.
func TestRedisBenchmark(t *testing.T) {
	path, err := exec.LookPath("redis-benchmark")
	if err != nil {
		t.Skip("redis-benchmark not installed")
	}
	checkLeaks(t)
	ts := startServer(t, Config{})
	_, port, _ := net.SplitHostPort(ts.addr)
	cmd := exec.Command(path, "-p", port, "-t", "set,get,mset,ping", "-n", "2000", "-P", "16", "-c", "4", "-q")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, io.Discard
	if err := cmd.Run(); err != nil {
		t.Fatalf("redis-benchmark: %v\n%s", err, out.String())
	}
	for _, want := range []string{"SET:", "GET:", "MSET"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("redis-benchmark output lacks %q:\n%s", want, out.String())
		}
	}
}
