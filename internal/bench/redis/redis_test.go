package redis

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"net"
	"strings"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/kuradb/kura/internal/bench"
	"github.com/kuradb/kura/internal/engine/catalog"
	"github.com/kuradb/kura/internal/hlc"
	"github.com/kuradb/kura/internal/redistest"
	"github.com/kuradb/kura/internal/resp"
)

// startKura starts kura's Redis front end (a resp.Server, as a single node runs it) over
// the memory engine, with SCAN (scan_test.go), on loopback. A whole node is not needed here, and the benchmark
// client stays below the server in the import graph.
func startKura(t *testing.T) string {
	t.Helper()
	eng, err := catalog.Open("memory", t.TempDir(), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := resp.New(resp.Config{Store: scanningStore{eng}, Clock: hlc.New(nil)})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() {
		_ = srv.Shutdown(context.Background())
		_ = eng.Close()
	})
	return ln.Addr().String()
}

// startRedis starts a redis-server on a free loopback port, or skips when it is not
// installed.
func startRedis(t *testing.T) string { return redistest.Start(t) }

func TestWorkloadRunsCleanlyAgainstKuraAndRedis(t *testing.T) {
	for name, start := range map[string]func(*testing.T) string{"kura": startKura, "redis-server": startRedis} {
		for _, record := range []string{RecordHash, RecordString} {
			t.Run(name+"/"+record, func(t *testing.T) { runWorkloadA(t, start(t), record) })
		}
	}
}

func runWorkloadA(t *testing.T, addr, record string) {
	t.Helper()
	target, err := ParseURL("resp://" + addr + "?record=" + record)
	if err != nil {
		t.Fatal(err)
	}
	w, _ := bench.NamedWorkload("a")
	w.RecordCount = 500
	w.WriteAllFields = record == RecordString // a SET replaces the whole record
	ctx := context.Background()
	load, err := bench.Run(ctx, bench.Config{Workload: w, Phase: bench.PhaseLoad, Target: target, Threads: 4})
	if err != nil {
		t.Fatal(err)
	}
	run, err := bench.Run(ctx, bench.Config{Workload: w, Phase: bench.PhaseRun, Target: target,
		Threads: 4, Operations: 2000})
	if err != nil {
		t.Fatal(err)
	}
	read, _ := run.Op("READ")
	if load.Ops != 500 || load.Errors != 0 || run.Ops != 2000 || run.Errors != 0 || read.NotFound != 0 {
		t.Errorf("load %d ops %d errors; run %d ops %d errors, %d reads not found",
			load.Ops, load.Errors, run.Ops, run.Errors, read.NotFound)
	}
}

func TestReadsReportMissingRecordsAndFields(t *testing.T) {
	addr := startKura(t)
	target := &Target{Addrs: []string{addr}}
	ctx := context.Background()
	c, err := target.Open(ctx, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if found, err := c.Read(ctx, "user1", nil); err != nil || found {
		t.Fatalf("missing record: found=%v err=%v", found, err)
	}
	if err := c.Insert(ctx, "user1", []bench.Field{{Name: "field0", Value: []byte("v0")}}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		fields []string
		want   bool
	}{{nil, true}, {[]string{"field0"}, true}, {[]string{"field9"}, false}} {
		if found, err := c.Read(ctx, "user1", tc.fields); err != nil || found != tc.want {
			t.Errorf("read %v: found=%v err=%v, want %v", tc.fields, found, err, tc.want)
		}
	}
	if err := c.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Scan(ctx, "user1", 10, nil); err != nil {
		t.Errorf("scan: %v", err)
	}
}

// A string record is one value written with SET (blind on kura) and read whole with GET.
func TestStringRecordsAreOneValue(t *testing.T) {
	addr := startKura(t)
	target := &Target{Addrs: []string{addr}, Record: RecordString}
	ctx := context.Background()
	c, err := target.Open(ctx, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if found, err := c.Read(ctx, "user1", []string{"field0"}); err != nil || found {
		t.Fatalf("missing record: found=%v err=%v", found, err)
	}
	fields := []bench.Field{{Name: "field0", Value: []byte("v0")}, {Name: "field1", Value: []byte{0, 1, 0xff}}}
	if err := c.Insert(ctx, "user1", fields); err != nil {
		t.Fatal(err)
	}
	if found, err := c.Read(ctx, "user1", []string{"field1"}); err != nil || !found {
		t.Fatalf("read after insert: found=%v err=%v", found, err)
	}
	rdb := goredis.NewClient(&goredis.Options{Addr: addr})
	defer rdb.Close()
	v, err := rdb.Get(ctx, "user1").Bytes()
	if err != nil {
		t.Fatalf("GET user1: %v", err)
	}
	got, err := DecodeRecord(v)
	if err != nil || len(got) != 2 || got[1].Name != "field1" || !bytes.Equal(got[1].Value, fields[1].Value) {
		t.Fatalf("the stored value decodes to %v, %v; want %v", got, err, fields)
	}
}

func TestRecordEncodingRoundTrips(t *testing.T) {
	fields := []bench.Field{{Name: "field0", Value: []byte("abc")}, {Name: "", Value: nil},
		{Name: "f", Value: bytes.Repeat([]byte{0x80}, 300)}}
	b := EncodeRecord(nil, fields)
	got, err := DecodeRecord(b)
	if err != nil || len(got) != len(fields) {
		t.Fatalf("decoded %v, %v", got, err)
	}
	for i := range fields {
		if got[i].Name != fields[i].Name || !bytes.Equal(got[i].Value, fields[i].Value) {
			t.Errorf("field %d: %q=%q, want %q=%q", i, got[i].Name, got[i].Value, fields[i].Name, fields[i].Value)
		}
	}
	for cut := 1; cut < len(b); cut++ { // every truncation that splits a field is an error
		if _, err := DecodeRecord(b[:cut]); err == nil && !isFieldBoundary(b, cut) {
			t.Errorf("a record cut at %d of %d decoded", cut, len(b))
		}
	}
}

// isFieldBoundary reports whether cut falls between two whole fields of record b.
func isFieldBoundary(b []byte, cut int) bool {
	fields, _ := DecodeRecord(b)
	n := 0
	for _, f := range fields {
		n = len(EncodeRecord(nil, []bench.Field{f})) + n
		if n == cut {
			return true
		}
	}
	return false
}

func TestServerErrorKeepsTheConnectionAndUnknownConsistencyFailsOpen(t *testing.T) {
	addr := startKura(t)
	ctx := context.Background()
	c, err := (&Target{Addrs: []string{addr}}).Open(ctx, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cl := c.(*client)
	if _, err := cl.do(ctx, "SET", "s", "x"); err != nil {
		t.Fatal(err)
	}
	err = c.Update(ctx, "s", []bench.Field{{Name: "f", Value: []byte("v")}})
	var se *ServerError
	if !errors.As(err, &se) || !strings.HasPrefix(se.Msg, "WRONGTYPE") {
		t.Fatalf("HSET on a string: %v", err)
	}
	if cl.conn == nil {
		t.Fatal("a server error reply dropped the connection")
	}
	// Until kura has a cluster, a single node does not know KURA.CONSISTENCY: the run
	// must fail before it starts rather than measure errors.
	_, err = (&Target{Addrs: []string{addr}, Consistency: "QUORUM"}).Open(ctx, 0, 1)
	if err == nil || !strings.Contains(err.Error(), "KURA.CONSISTENCY") {
		t.Fatalf("unknown consistency command: %v", err)
	}
}

func TestClientReconnectsAfterTheConnectionBreaks(t *testing.T) {
	addr := startKura(t)
	ctx := context.Background()
	c, err := (&Target{Addrs: []string{addr}}).Open(ctx, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cl := c.(*client)
	cl.conn.nc.Close() // as if the server had dropped us
	if err := c.Ping(ctx); err == nil {
		t.Fatal("ping on a closed connection succeeded")
	}
	if err := c.Ping(ctx); err != nil {
		t.Fatalf("no reconnect: %v", err)
	}
}

func TestParseURL(t *testing.T) {
	tg, err := ParseURL("resp://a:1,b:2?consistency=quorum&password=pw&record=string")
	if err != nil || len(tg.Addrs) != 2 || tg.Consistency != "QUORUM" || tg.Password != "pw" || tg.Record != RecordString {
		t.Fatalf("%+v %v", tg, err)
	}
	if tg, err := ParseURL("127.0.0.1:6380"); err != nil || tg.Name() != "resp://127.0.0.1:6380" {
		t.Fatalf("bare address: %+v %v", tg, err)
	}
	if tg, err := ParseURL("rediss://a:1?user=u&password=p&servername=kura"); err != nil || tg.TLS == nil || tg.TLS.ServerName != "kura" ||
		tg.User != "u" || tg.Name() != "resps://a:1" {
		t.Fatalf("TLS target: %+v %v", tg, err)
	}
	for _, bad := range []string{"http://a:1", "resp://nohost", "resp://a:1?consistency=SOME", "resp://a:1?x=1", "resp://a:1?record=json",
		"resp://a:1?cacert=x", "resps://a:1?cacert=/no/such/file", "resps://a:1?cert=c.pem", "resp://a:1?user=u"} {
		if _, err := ParseURL(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestReplyDecoding(t *testing.T) {
	for _, tc := range []struct {
		in     string
		kind   byte
		nonNil int
		err    bool
	}{
		{"+OK\r\n", '+', 0, false},
		{":12\r\n", ':', 0, false},
		{"$3\r\nabc\r\n", '$', 0, false},
		{"*3\r\n$1\r\na\r\n$-1\r\n:1\r\n", '*', 2, false},
		{"*0\r\n", '*', 0, false},
		{"-ERR x\r\n", '-', 0, true},
		{"?\r\n", '?', 0, true},
		{"$5\r\nab\r\n", '$', 0, true},
		{"*1\r\n", '*', 0, true},
	} {
		c := &conn{r: bufio.NewReader(strings.NewReader(tc.in))}
		rep, err := c.readReply(0)
		if (err != nil) != tc.err || rep.kind != tc.kind || rep.nonNil != tc.nonNil {
			t.Errorf("%q: %+v %v", tc.in, rep, err)
		}
	}
}

func FuzzReplyDecoding(f *testing.F) {
	for _, s := range []string{"+OK\r\n", "*2\r\n$1\r\na\r\n$-1\r\n", "-ERR\r\n", ":1\r\n", "*1\r\n*1\r\n*1\r\n:1\r\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c := &conn{r: bufio.NewReaderSize(bytes.NewReader(b), 16)}
		_, _ = c.readReply(0) // must not panic or allocate without bound
	})
}
