package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func parse(t *testing.T, file string, args ...string) (Config, error) {
	t.Helper()
	c := Default()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	c.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	path := ""
	if file != "" {
		path = filepath.Join(t.TempDir(), "kura.yaml")
		if err := os.WriteFile(path, []byte(file), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	err := c.Load(path, fs)
	return c, err
}

func TestDefaultsAreValid(t *testing.T) {
	c, err := parse(t, "")
	if err != nil {
		t.Fatal(err)
	}
	if c.Listen != "127.0.0.1:6380" || c.Engine != "lsm" || c.Durability != "sync" {
		t.Fatalf("unexpected defaults: %+v", c)
	}
}

func TestFlagsOverrideFileOverridesDefaults(t *testing.T) {
	c, err := parse(t, "engine: btree\nlisten: 127.0.0.1:7000\nsync_interval: 250ms\n", "--listen", "127.0.0.1:7001")
	if err != nil {
		t.Fatal(err)
	}
	if c.Engine != "btree" {
		t.Errorf("file did not set engine: %q", c.Engine)
	}
	if c.Listen != "127.0.0.1:7001" {
		t.Errorf("flag did not override file: %q", c.Listen)
	}
	if c.SyncInterval.Milliseconds() != 250 {
		t.Errorf("duration from file: %v", c.SyncInterval)
	}
	if c.DataDir != Default().DataDir {
		t.Errorf("default lost: %q", c.DataDir)
	}
}

func TestUnknownKeyInFileIsAnError(t *testing.T) {
	if _, err := parse(t, "engin: lsm\n"); !errors.Is(err, ErrInvalid) {
		t.Fatalf("got %v, want ErrInvalid", err)
	}
}

func TestEmptyFileMeansDefaults(t *testing.T) {
	if _, err := parse(t, "\n"); err != nil {
		t.Fatal(err)
	}
}

func TestValidateAcceptsTieredStorage(t *testing.T) {
	c, err := parse(t, "", "--fast-dir", "/ssd", "--slow-dir", "/hdd", "--fast-budget-bytes", "1000")
	if err != nil {
		t.Fatal(err)
	}
	if !c.Tiered() || c.TierWindow != 10*time.Second || c.TierMinReads != 1 || !c.TierCountWrites {
		t.Errorf("tiered %v, window %v, K %d, count writes %v: want tiered, the paper's 10s and 1, reads and writes", c.Tiered(), c.TierWindow, c.TierMinReads, c.TierCountWrites)
	}
	if c, err = parse(t, "tier_count_writes: false\n", "--fast-dir", "/ssd", "--fast-budget-bytes", "1000"); err != nil || c.TierCountWrites {
		t.Errorf("tier_count_writes: false in the file: %v, count writes %v", err, c.TierCountWrites)
	}
}

func TestValidateRejectsBadValues(t *testing.T) {
	bad := [][]string{
		{"--engine", "rocks"}, {"--durability", "never"}, {"--listen", "nohostport"},
		{"--max-key-bytes", "70000"}, {"--max-connections", "0"}, {"--log-format", "xml"},
		{"--sync-interval", "0s"},
		{"--fast-dir", "/ssd"}, // no budget
		{"--fast-dir", "/ssd", "--fast-budget-bytes", "1000", "--engine", "btree"},
		{"--fast-dir", "/ssd", "--fast-budget-bytes", "1000", "--lsm-wal-dir", "/wal"},
		{"--fast-dir", "/ssd", "--fast-budget-bytes", "1000", "--tier-min-reads", "0"},
		{"--fast-dir", "/ssd", "--fast-budget-bytes", "1000", "--tier-fast-cache-share", "1"},
		{"--fast-dir", "/ssd", "--fast-budget-bytes", "1000", "--tier-fast-cache-share", "0"},
		{"--slow-write-log", "-1s"}, {"--read-fallback-after", "-1ms"},
		{"--read-fallback-percentile", "100"}, {"--read-fallback-percentile", "-5"},
		{"--read-fallback-percentile", "95", "--read-fallback-after", "0s"},
		{"--slow-dir", "/hdd"}, {"--tier-fast-page-cache=false"}, // without a fast one
		{"--lsm-second-dir", "/hdd"}, {"--lsm-second-dir", "/hdd", "--lsm-second-dir-policy", "round-robin"},
		{"--lsm-second-dir", "/hdd", "--lsm-second-dir-policy", "free-space", "--engine", "btree"},
		{"--lsm-block-size-bytes", "512"}, {"--lsm-block-size-bytes", "2097152"}, {"--lsm-block-size-bytes", "-1"},
		{"--slowlog-max-len", "0"}, {"--slowlog-max-len", "65537"},
		{"--tls-port", "6390"}, // no certificate files
		{"--tls-internode", "--tls-cert-file", "n.crt", "--tls-key-file", "n.key"}, // no CA
		{"--tls-port", "70000", "--tls-cert-file", "n.crt", "--tls-key-file", "n.key", "--tls-ca-cert-file", "ca.crt"},
		{"--tls-auth-clients", "maybe"},
	}
	for _, args := range bad {
		if _, err := parse(t, "", args...); !errors.Is(err, ErrInvalid) {
			t.Errorf("%v: got %v, want ErrInvalid", args, err)
		}
	}
}

// TestEveryFieldHasAFlag keeps the option table complete: each Config field is reachable
// from a flag whose name maps to the field's YAML key.
func TestEveryFieldHasAFlag(t *testing.T) {
	c := Default()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	c.BindFlags(fs)
	keys := map[string]bool{}
	fs.VisitAll(func(f *pflag.Flag) { keys[YAMLKey(f.Name)] = true })
	typ := reflect.TypeOf(c)
	for i := 0; i < typ.NumField(); i++ {
		tag := typ.Field(i).Tag.Get("yaml")
		if !keys[tag] {
			t.Errorf("field %s (yaml %q) has no flag", typ.Field(i).Name, tag)
		}
		delete(keys, tag)
	}
	for k := range keys {
		t.Errorf("flag for %q has no Config field", k)
	}
}

func TestConfigurationDocIsCurrent(t *testing.T) {
	path := filepath.Join("..", "..", "docs", "configuration.md")
	want := Markdown()
	if os.Getenv("KURA_REWRITE") != "" {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Fatalf("docs/configuration.md is stale; run KURA_REWRITE=1 go test ./internal/config\n%s", firstDiff(string(got), want))
	}
}

func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(al) && i < len(bl); i++ {
		if al[i] != bl[i] {
			return "doc:  " + al[i] + "\ncode: " + bl[i]
		}
	}
	return "lengths differ"
}

func TestGCPercentIsTightenedForTheMemoryEngineUnlessToldOtherwise(t *testing.T) {
	cases := []struct {
		engine string
		flag   int
		env    string
		want   int
	}{
		{"memory", 0, "", MemoryEngineGCPercent},
		{"lsm", 0, "", 0},
		{"memory", 0, "200", 0}, // GOGC in the environment: the runtime already has it
		{"memory", 50, "200", 50},
		{"btree", 80, "", 80},
	}
	for _, tc := range cases {
		c := Default()
		c.Engine, c.GCPercent = tc.engine, tc.flag
		if got := c.EffectiveGCPercent(tc.env); got != tc.want {
			t.Errorf("engine %s, gc_percent %d, GOGC %q: got %d, want %d", tc.engine, tc.flag, tc.env, got, tc.want)
		}
	}
}

func TestClusterOptionsAreCheckedOnlyInClusterMode(t *testing.T) {
	c := Default()
	c.Placement = "nowhere" // ignored: no gossip_listen, a single node
	if err := c.Validate(); err != nil || c.Clustered() {
		t.Fatalf("single node with an unused bad option: %v", err)
	}
	c.GossipListen = "127.0.0.1:7946"
	if err := c.Validate(); !errors.Is(err, ErrInvalid) {
		t.Fatalf("bad placement in cluster mode: %v", err)
	}
	c.Placement = "rack-aware"
	c.Seeds = " 127.0.0.1:7947, 127.0.0.1:7948 ,"
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if got := c.SeedList(); len(got) != 2 || got[1] != "127.0.0.1:7948" {
		t.Errorf("seeds %q", got)
	}
	for _, bad := range []func(*Config){
		func(c *Config) { c.Seeds = "nohostport" },
		func(c *Config) { c.ReplicationFactor = 0 },
		func(c *Config) { c.Consistency = "SOME" },
		func(c *Config) { c.NumTokens = 1000 },
		func(c *Config) { c.MaxClockOffset = -time.Millisecond },
		func(c *Config) { c.RingSource = "raft" },
		func(c *Config) { c.RingSource, c.Join = "log", "later" },
		func(c *Config) { c.RingSource, c.StreamLimit = "log", -1 },
		func(c *Config) { c.RingSource, c.JoinBatchWindow = "log", -time.Second },
		func(c *Config) { c.RingSource, c.Replace = "gossip", "n1" },  // needs the log
		func(c *Config) { c.RingSource, c.Join = "gossip", "staged" }, // needs the log
	} {
		d := c
		bad(&d)
		if err := d.Validate(); !errors.Is(err, ErrInvalid) {
			t.Errorf("accepted %+v", d)
		}
	}
}

func TestTLSPortServesOnTheListenHost(t *testing.T) {
	c, err := parse(t, "", "--listen", "10.0.0.7:6380", "--tls-port", "6390", "--tls-cert-file", "n.crt",
		"--tls-key-file", "n.key", "--tls-ca-cert-file", "ca.crt", "--insecure")
	if err != nil {
		t.Fatal(err)
	}
	if !c.TLS() || c.TLSListen() != "10.0.0.7:6390" || c.TLSAuthClients != "yes" {
		t.Fatalf("TLS %v, TLSListen %q, auth %q; want on, 10.0.0.7:6390, yes (Redis's default)", c.TLS(), c.TLSListen(), c.TLSAuthClients)
	}
	if d := Default(); d.TLS() {
		t.Fatal("TLS is on by default")
	}
}

// A node asked to listen beyond loopback with any listener unprotected refuses to start,
// naming each listener and what to set; --insecure lets it, and so does protecting every
// listener. Loopback, the default, needs nothing.
func TestNonLoopbackStartNeedsProtectionOrInsecure(t *testing.T) {
	cluster := []string{"--gossip-listen", "10.0.0.7:7946", "--internode-listen", "10.0.0.7:7000", "--admin-listen", "10.0.0.7:9380"}
	_, err := parse(t, "", append([]string{"--listen", "10.0.0.7:6380"}, cluster...)...)
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("an open networked node started: %v", err)
	}
	for _, want := range []string{"RESP listens on 10.0.0.7:6380 in plain text", "admin endpoints on 10.0.0.7:9380",
		"internode port 10.0.0.7:7000 needs --tls-internode", "gossip on 10.0.0.7:7946 needs --gossip-keyring-file", "--insecure"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal does not say %q:\n%v", want, err)
		}
	}
	if _, err := parse(t, "", append([]string{"--listen", "10.0.0.7:6380", "--insecure"}, cluster...)...); err != nil {
		t.Fatalf("--insecure: %v", err)
	}
	secure := append([]string{"--listen", "10.0.0.7:6380", "--plaintext-clients=false", "--tls-port", "6390",
		"--tls-cert-file", "n.crt", "--tls-key-file", "n.key", "--tls-ca-cert-file", "ca.crt", "--password", "pw",
		"--admin-tls", "--tls-internode", "--gossip-keyring-file", "gossip.keys"}, cluster...)
	if _, err := parse(t, "", secure...); err != nil {
		t.Fatalf("every listener protected: %v", err)
	}
	// Each protection missing alone is named.
	for i, drop := range []string{"--password", "--admin-tls", "--tls-internode"} {
		var args []string
		for j := 0; j < len(secure); j++ {
			if secure[j] == drop {
				if drop == "--password" {
					j++ // and its value
				}
				continue
			}
			args = append(args, secure[j])
		}
		if _, err := parse(t, "", args...); !errors.Is(err, ErrInvalid) {
			t.Errorf("case %d: without %s the node started", i, drop)
		}
	}
	if _, err := parse(t, "", "--listen", "localhost:6380", "--admin-listen", "[::1]:9380"); err != nil {
		t.Fatalf("loopback: %v", err)
	}
	if _, err := parse(t, "", "--plaintext-clients=false"); !errors.Is(err, ErrInvalid) {
		t.Fatalf("no way in for clients: %v", err)
	}
}
