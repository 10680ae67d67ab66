package clients

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/redistest"
)

// A client is one program of the matrix.
type client struct {
	name     string
	variants []string // as the program names them: the protocol first (resp2, resp3)
	checks   []string // the checks it prints, each a line of testdata/expected.txt
	// ready returns why the client cannot run on this machine, naming what installs it.
	ready func() error
	// run runs the program against the server at addr (other: another node of the same
	// cluster, or addr again) with keys under prefix, and returns what it printed.
	run func(ctx context.Context, addr, other, prefix string) ([]byte, error)
}

var common = []string{"proto", "strings", "set_options", "hashes", "ttl", "scan", "counters", "pipeline"}

var matrix = []client{
	{
		name: "go-redis", variants: []string{"resp3-default", "resp2"}, checks: slices.Concat(common, []string{"multi"}),
		ready: func() error { return nil },
		run: func(ctx context.Context, addr, other, prefix string) ([]byte, error) {
			var b bytes.Buffer
			goRedis(ctx, &b, addr, other, prefix)
			return b.Bytes(), nil
		},
	},
	{
		name: "redis-py", variants: []string{"resp3-default", "resp3", "resp2"}, checks: slices.Concat(common, []string{"multi"}),
		ready: pythonReady, run: program("python", "python3", "check.py"),
	},
	{
		name: "node-redis", variants: []string{"resp3-default", "resp2"}, checks: common,
		ready: nodeReady, run: program("node", "node", "check.mjs"),
	},
	{
		name: "jedis", variants: []string{"resp2-default", "resp3"}, checks: common,
		ready: javaReady, run: javaProgram("jedis"),
	},
	{
		name: "lettuce", variants: []string{"resp3-default", "resp2"}, checks: common,
		ready: javaReady, run: javaProgram("lettuce"),
	},
	{
		name: "redis-cli", variants: []string{"resp2", "resp3"},
		checks: []string{"proto", "strings", "set_options", "hashes", "ttl", "scan", "counters", "pipe", "redis-benchmark"},
		ready:  cliReady, run: program("cli", "bash", "check.sh"),
	},
}

// TestClientMatrix runs every client's program against a three-node `kura dev` cluster
// and against redis-server, and requires each check's line to be the one in
// testdata/expected.txt against both. Every variant and check is a subtest of its own
// (TestClientMatrix/CLIENT/VARIANT/CHECK), so one missing command fails its checks only.
// A client whose runtime or library is missing is skipped, except under CI=true, where
// it fails: .ci/run installs them all (clients/install.sh).
func TestClientMatrix(t *testing.T) {
	if testing.Short() {
		t.Skip("the client matrix starts a cluster and seven programs; not in -short")
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		need(t, errors.New("redis-server is not installed (apt-get install redis-server)"))
	}
	expected := readExpected(t)
	start := time.Now()
	redisAddr := redistest.Start(t)
	kura := startKura(t)
	t.Logf("redis-server and a 3-node kura dev cluster ready in %v", time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() { t.Logf("client matrix: %v in all", time.Since(start).Round(time.Millisecond)) })

	t.Run("clients", func(t *testing.T) {
		for _, c := range matrix {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				need(t, c.ready())
				began := time.Now()
				var outK, outR runOutput
				var wg sync.WaitGroup
				wg.Go(func() { outK = runClient(c, kura[0], kura[1]) })
				wg.Go(func() { outR = runClient(c, redisAddr, redisAddr) })
				wg.Wait()
				t.Logf("%s ran in %v against both servers", c.name, time.Since(began).Round(time.Millisecond))
				compare(t, c, expected, outK, outR)
			})
		}
	})
}

// need skips the test for the reason err gives, or fails it under CI, where a skipped
// client would hide a missing install behind a green run.
func need(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%v; CI must install it: .ci/run runs clients/install.sh", err)
	}
	t.Skipf("%v; clients/install.sh installs it", err)
}

// runOutput is what one program printed against one server: its lines by variant and
// check, and everything else it said, for the failure messages.
type runOutput struct {
	lines map[string]string // "variant check" -> the rest of the line
	raw   string
	err   error
}

func runClient(c client, addr, other string) runOutput {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := c.run(ctx, addr, other, "matrix:"+c.name)
	o := runOutput{lines: map[string]string{}, raw: string(out), err: err}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.SplitN(sc.Text(), " ", 3)
		if len(f) == 3 {
			o.lines[f[0]+" "+f[1]] = f[2]
		}
	}
	return o
}

// compare checks every variant's and check's line against both servers.
func compare(t *testing.T, c client, expected map[string]string, kura, redis runOutput) {
	for _, v := range c.variants {
		t.Run(v, func(t *testing.T) {
			for _, check := range c.checks {
				t.Run(check, func(t *testing.T) {
					want := strings.ReplaceAll(expected[check], "{proto}", v[len("resp"):len("resp")+1])
					for _, s := range []struct {
						server string
						out    runOutput
					}{{"redis-server", redis}, {"kura", kura}} {
						got, ok := s.out.lines[v+" "+check]
						switch {
						case !ok:
							t.Errorf("%s: the program printed no line for this check (exit: %v); it printed:\n%s",
								s.server, s.out.err, tail(s.out.raw, 2000))
						case got != want:
							t.Errorf("%s: %s\n  got  %s\n  want %s", s.server, fieldDiff(got, want), got, want)
						}
					}
				})
			}
		})
	}
}

// fieldDiff names the name=value fields in which got and want differ.
func fieldDiff(got, want string) string {
	if strings.HasPrefix(got, "ERROR ") {
		return got
	}
	g, w := strings.Fields(got), strings.Fields(want)
	var d []string
	for i := range max(len(g), len(w)) {
		gi, wi := "(none)", "(none)"
		if i < len(g) {
			gi = g[i]
		}
		if i < len(w) {
			wi = w[i]
		}
		if gi != wi {
			d = append(d, gi+" (want "+wi+")")
		}
	}
	return strings.Join(d, ", ")
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// readExpected reads testdata/expected.txt: the line every client prints for each check.
func readExpected(t *testing.T) map[string]string {
	b, err := os.ReadFile(filepath.Join("testdata", "expected.txt"))
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, l := range strings.Split(string(b), "\n") {
		if name, rest, ok := strings.Cut(l, " "); ok && !strings.HasPrefix(l, "#") {
			m[name] = rest
		}
	}
	for _, c := range matrix {
		for _, check := range c.checks {
			if _, ok := m[check]; !ok {
				t.Fatalf("testdata/expected.txt has no line for %s's check %s", c.name, check)
			}
		}
	}
	return m
}

// program runs `name args... ADDR OTHER PREFIX` in the directory dir.
func program(dir, name string, args ...string) func(ctx context.Context, addr, other, prefix string) ([]byte, error) {
	return func(ctx context.Context, addr, other, prefix string) ([]byte, error) {
		cmd := exec.CommandContext(ctx, name, append(args, addr, other, prefix)...)
		cmd.Dir = dir
		cmd.WaitDelay = 5 * time.Second
		return cmd.CombinedOutput()
	}
}

// javaProgram runs java/Check.java for one client with the JDK's source launcher, on the
// classpath clients/install.sh had Maven resolve. C1 alone: the program is short-lived.
func javaProgram(which string) func(ctx context.Context, addr, other, prefix string) ([]byte, error) {
	return func(ctx context.Context, addr, other, prefix string) ([]byte, error) {
		cp, err := javaClasspath()
		if err != nil {
			return nil, err
		}
		return program("java", "java", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-cp", cp,
			"Check.java", which)(ctx, addr, other, prefix)
	}
}

const javaClasspathFile = "java/target/classpath.txt"

func javaClasspath() (string, error) {
	b, err := os.ReadFile(javaClasspathFile)
	if err != nil {
		return "", fmt.Errorf("Jedis and Lettuce are not resolved (%s: %w)", javaClasspathFile, err)
	}
	return strings.TrimSpace(string(b)), nil
}

func javaReady() error {
	if _, err := exec.LookPath("java"); err != nil {
		return errors.New("java is not installed (apt-get install default-jdk-headless)")
	}
	cp, err := javaClasspath()
	if err != nil {
		return err
	}
	for _, jar := range filepath.SplitList(cp) {
		if _, err := os.Stat(jar); err != nil {
			return fmt.Errorf("a jar of %s is missing (%w)", javaClasspathFile, err)
		}
	}
	return nil
}

func pythonReady() error {
	b, err := os.ReadFile("python/requirements.txt")
	if err != nil {
		return err
	}
	want := strings.TrimPrefix(strings.TrimSpace(string(b)), "redis==")
	out, err := exec.Command("python3", "-c", "import redis; print(redis.__version__)").CombinedOutput()
	if err != nil {
		return fmt.Errorf("python3 cannot import redis-py (%v: %s)", err, bytes.TrimSpace(out))
	}
	if got := strings.TrimSpace(string(out)); got != want {
		return fmt.Errorf("python3 has redis-py %s, the matrix pins %s", got, want)
	}
	return nil
}

var nodeMajor = regexp.MustCompile(`^v(\d+)\.`)

func nodeReady() error {
	out, err := exec.Command("node", "--version").Output()
	if err != nil {
		return fmt.Errorf("node is not installed (%w)", err)
	}
	if m := nodeMajor.FindSubmatch(out); m == nil || atoi(string(m[1])) < 20 {
		return fmt.Errorf("node %s is too old: node-redis 6 needs 20 or later", bytes.TrimSpace(out))
	}
	var pkg, lib struct {
		Version      string
		Dependencies map[string]string
	}
	if err := readJSON("node/package.json", &pkg); err != nil {
		return err
	}
	if err := readJSON("node/node_modules/@redis/client/package.json", &lib); err != nil {
		return fmt.Errorf("node-redis is not installed (%w)", err)
	}
	if want := pkg.Dependencies["@redis/client"]; lib.Version != want {
		return fmt.Errorf("node/node_modules has @redis/client %s, package.json pins %s", lib.Version, want)
	}
	return nil
}

func cliReady() error {
	for _, b := range []string{"redis-cli", "redis-benchmark", "bash"} {
		if _, err := exec.LookPath(b); err != nil {
			return fmt.Errorf("%s is not installed (apt-get install redis-tools)", b)
		}
	}
	return nil
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
