package cql

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
)

func TestParseConfigFillsDefaults(t *testing.T) {
	cfg, err := ParseConfig("cql://127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	want := Config{
		Hosts:             []string{"127.0.0.1:9042"},
		Keyspace:          "ycsb",
		Table:             "usertable",
		ReadConsistency:   "ONE",
		WriteConsistency:  "ONE",
		ConnectTimeout:    5 * time.Second,
		RequestTimeout:    12 * time.Second,
		FieldCount:        10,
		ReplicationFactor: 1,
		ConnsPerHost:      2,
	}
	if !reflect.DeepEqual(cfg, want) {
		t.Fatalf("got  %+v\nwant %+v", cfg, want)
	}
}

func TestParseConfigReadsEveryParameter(t *testing.T) {
	cfg, err := ParseConfig("cql://host1:9043,host2,[::1]:9044/bench?readconsistency=quorum" +
		"&writeconsistency=ALL&table=t1&connecttimeout=2s&timeout=3s&fieldcount=4" +
		"&replicationfactor=3&conns=8&coalesce=100us&createschema=true")
	if err != nil {
		t.Fatal(err)
	}
	want := Config{
		Hosts:             []string{"host1:9043", "host2:9042", "[::1]:9044"},
		Keyspace:          "bench",
		Table:             "t1",
		ReadConsistency:   "quorum",
		WriteConsistency:  "ALL",
		ConnectTimeout:    2 * time.Second,
		RequestTimeout:    3 * time.Second,
		FieldCount:        4,
		ReplicationFactor: 3,
		CreateSchema:      true,
		ConnsPerHost:      8,
		WriteCoalesce:     100 * time.Microsecond,
	}
	if !reflect.DeepEqual(cfg, want) {
		t.Fatalf("got  %+v\nwant %+v", cfg, want)
	}
}

func TestParseConfigConsistencySetsBothLevels(t *testing.T) {
	cfg, err := ParseConfig("cql://h/ks?consistency=LOCAL_QUORUM")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ReadConsistency != "LOCAL_QUORUM" || cfg.WriteConsistency != "LOCAL_QUORUM" {
		t.Fatalf("got read %q write %q, want LOCAL_QUORUM for both", cfg.ReadConsistency, cfg.WriteConsistency)
	}
}

func TestParseConfigRejectsBadSpecs(t *testing.T) {
	for _, spec := range []string{
		"resp://127.0.0.1:6379",
		"127.0.0.1:9042",
		"cql://",
		"cql:///ycsb",
		"cql://h:0/ycsb",
		"cql://h:99999",
		"cql://h:port",
		"cql://:9042",
		"cql://h1,,h2",
		"cql://h/ycsb;DROP",
		"cql://h/1ycsb",
		"cql://h/ycsb?table=user-table",
		"cql://h?consistency=MOST",
		"cql://h?consistency=SERIAL",
		"cql://h?readconsistency=ANY",
		"cql://h?readconsistency=EACH_QUORUM",
		"cql://h?timeout=5",
		"cql://h?fieldcount=ten",
		"cql://h?fieldcount=-1",
		"cql://h?createschema=maybe",
		"cql://h?consistancy=ONE",
		"cql://h?%zz",
	} {
		cfg, err := ParseConfig(spec)
		if err == nil {
			t.Errorf("ParseConfig(%q) = %+v, want an error", spec, cfg)
			continue
		}
		if !errors.Is(err, ErrBadConfig) {
			t.Errorf("ParseConfig(%q) error %v does not wrap ErrBadConfig", spec, err)
		}
		if !strings.HasPrefix(err.Error(), "cql: ") {
			t.Errorf("ParseConfig(%q) error %q lacks the package prefix", spec, err)
		}
	}
}

func TestNameParsesBackToTheSameConfig(t *testing.T) {
	for _, spec := range []string{
		"cql://127.0.0.1:9042",
		"cql://a:1,b:2/ks?consistency=quorum",
		"cql://a/ks?readconsistency=ONE&writeconsistency=ALL&table=t",
	} {
		cfg, err := ParseConfig(spec)
		if err != nil {
			t.Fatal(err)
		}
		tg, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		again, err := ParseConfig(tg.Name())
		if err != nil {
			t.Fatalf("ParseConfig(Name() = %q): %v", tg.Name(), err)
		}
		cfg.ReadConsistency = strings.ToUpper(cfg.ReadConsistency)
		cfg.WriteConsistency = strings.ToUpper(cfg.WriteConsistency)
		if !reflect.DeepEqual(again, cfg) {
			t.Errorf("%s: Name() = %q parses to %+v, want %+v", spec, tg.Name(), again, cfg)
		}
	}
}

func TestNameShowsHostsKeyspaceAndConsistency(t *testing.T) {
	tg, err := New(Config{Hosts: []string{"127.0.0.1"}, ReadConsistency: "quorum", WriteConsistency: "QUORUM"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := tg.Name(), "cql://127.0.0.1:9042/ycsb?consistency=QUORUM"; got != want {
		t.Fatalf("Name() = %q, want %q", got, want)
	}
}

func TestParseConsistency(t *testing.T) {
	for _, tc := range []struct {
		name  string
		write bool
		want  gocql.Consistency
		ok    bool
	}{
		{"ONE", false, gocql.One, true},
		{"one", true, gocql.One, true},
		{"Two", false, gocql.Two, true},
		{"THREE", false, gocql.Three, true},
		{"QUORUM", false, gocql.Quorum, true},
		{"ALL", true, gocql.All, true},
		{"LOCAL_QUORUM", false, gocql.LocalQuorum, true},
		{"LOCAL_ONE", false, gocql.LocalOne, true},
		{"ANY", true, gocql.Any, true},
		{"ANY", false, 0, false},
		{"EACH_QUORUM", true, gocql.EachQuorum, true},
		{"EACH_QUORUM", false, 0, false},
		{"SERIAL", true, 0, false},
		{"LOCAL_SERIAL", false, 0, false},
		{"", false, 0, false},
		{"LOCAL QUORUM", false, 0, false},
	} {
		got, err := ParseConsistency(tc.name, tc.write)
		if (err == nil) != tc.ok {
			t.Errorf("ParseConsistency(%q, write=%v) error = %v, want ok=%v", tc.name, tc.write, err, tc.ok)
			continue
		}
		if err != nil && !errors.Is(err, ErrBadConfig) {
			t.Errorf("ParseConsistency(%q) error %v does not wrap ErrBadConfig", tc.name, err)
		}
		if tc.ok && got != tc.want {
			t.Errorf("ParseConsistency(%q) = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestNewRejectsConfigWithoutHosts(t *testing.T) {
	if _, err := New(Config{}); !errors.Is(err, ErrBadConfig) {
		t.Fatalf("New(Config{}) error = %v, want ErrBadConfig", err)
	}
}

func TestParseURLReturnsAnUnconnectedTarget(t *testing.T) {
	tg, err := ParseURL("cql://127.0.0.1:9042/ks?consistency=QUORUM")
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	if tg.session != nil {
		t.Fatal("ParseURL connected")
	}
	if got, want := tg.Name(), "cql://127.0.0.1:9042/ks?consistency=QUORUM"; got != want {
		t.Fatalf("Name() = %q, want %q", got, want)
	}
	if _, err := ParseURL("cql://h?consistency=MOST"); !errors.Is(err, ErrBadConfig) {
		t.Fatalf("ParseURL with a bad level: error = %v, want ErrBadConfig", err)
	}
}
