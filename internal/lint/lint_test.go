// Package lint holds tests that keep the tree's structural rules true (../shared/STYLE.md).
//
// The main one is the purity check (checkPurity). STYLE.md section 1 asks for a
// deterministic core: the packages that decide things (placement, the coordinator, the
// internode messages, row merging) must run unchanged inside the cluster simulator, in
// virtual time and from one seed, so they may not read the wall clock, sleep or arm timers,
// draw from global randomness, start goroutines, or touch the operating system, the network,
// the storage engines or the node. The check parses the non-test files of every package on
// purePackages and reports, with file and line: an import of os, net, syscall or crypto/rand
// (or a package under them), of internal/engine or internal/node, of any other kura package
// not on the list, or of a third-party package not on allowedExternal; a use of time.Now,
// Since, Until, Sleep, After, AfterFunc, NewTimer, NewTicker or Tick; a use of a
// package-level function of math/rand or math/rand/v2 other than the seeded constructors;
// and any go statement. Fixtures under testdata/purity show each of these being reported.
//
// The other tests keep the load generator below the server (internal/bench imports nothing
// of internal/node), package names meaningful and CI running the README's test command.
package lint

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// modulePath is the module the pure packages belong to (go.mod).
const modulePath = "github.com/kuradb/kura"

// purePackages decide things and must run inside the simulator; see the package comment.
//
// Left off, on purpose:
//   - internal/hlc is the clock: New falls back to time.Now when no physical source is
//     injected. It is the thin driver-side wrapper around the wall clock, not core logic;
//     pure packages take timestamps or a clock function as inputs instead of importing it.
var purePackages = []string{
	"internal/row",
	"internal/ring",
	"internal/coord",
	"internal/route",
	"internal/machine",
	"internal/move",
	"internal/wire",
	"internal/cluster",
	"internal/sketch",
	"internal/access",
	"internal/scan",
	"internal/meta",
	"internal/topo",
	"internal/flowsim",
	"internal/movesim",
	"internal/repair",
	"internal/glob",
	"internal/acl",
}

// allowedExternal are the third-party packages a pure package may import, each with why it
// is safe: it must be a pure function of its inputs.
var allowedExternal = map[string]string{
	"github.com/cespare/xxhash/v2": "a pure hash function of its input (row digests, access sketches)",
	"golang.org/x/crypto/argon2":   "a pure key-derivation function of its inputs (ACL password hashes)",
}

func repoRoot(t *testing.T) string {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// TestPurePackagesPassThePurityCheck runs the purity check over the tree's pure packages.
func TestPurePackagesPassThePurityCheck(t *testing.T) {
	for _, v := range checkPurity(repoRoot(t), modulePath, purePackages, allowedExternal) {
		t.Errorf("%s (pure packages must run in the simulator: see internal/lint's package comment)", v)
	}
}

// TestBenchImportsNothingOfTheNode keeps the load generator below the server: no package
// under internal/bench, nor its tests, imports internal/node, directly or through other
// kura packages. A benchmark measures a server through its protocol; the types it shares
// with one (the admin API's) live in internal/admin.
func TestBenchImportsNothingOfTheNode(t *testing.T) {
	root := repoRoot(t)
	imports := moduleImports(t, root)
	const node = modulePath + "/internal/node"
	for pkg := range imports { // a package's files, or its test files
		if !strings.HasPrefix(pkg, modulePath+"/internal/bench") {
			continue
		}
		if path := importPath(imports, pkg, node); path != nil {
			t.Errorf("%s imports %s: %s", pkg, node, strings.Join(path, " -> "))
		}
	}
}

// moduleImports returns, for every package of the module that imports any, the module
// packages it imports: from its non-test files under the package's path, from its test
// files under the path with "_test" appended.
func moduleImports(t *testing.T, root string) map[string][]string {
	out := map[string][]string{}
	filepath.WalkDir(filepath.Join(root, "internal"), func(dir string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if d.Name() == "testdata" {
			return filepath.SkipDir
		}
		rel, _ := filepath.Rel(root, dir)
		pkg := modulePath + "/" + filepath.ToSlash(rel)
		fset := token.NewFileSet()
		files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		for _, f := range files {
			af, err := parser.ParseFile(fset, f, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			key := pkg
			if strings.HasSuffix(f, "_test.go") {
				key += "_test"
			}
			for _, imp := range af.Imports {
				if p, _ := strconv.Unquote(imp.Path.Value); strings.HasPrefix(p, modulePath+"/") {
					out[key] = append(out[key], p)
				}
			}
		}
		return nil
	})
	return out
}

// importPath returns a chain of imports from pkg to target, or nil when there is none.
func importPath(imports map[string][]string, pkg, target string) []string {
	seen := map[string]bool{}
	var walk func(p string) []string
	walk = func(p string) []string {
		if p == target {
			return []string{p}
		}
		if seen[p] {
			return nil
		}
		seen[p] = true
		for _, next := range imports[p] {
			if rest := walk(next); rest != nil {
				return append([]string{p}, rest...)
			}
		}
		return nil
	}
	return walk(pkg)
}

func TestNoMeaninglessPackageNames(t *testing.T) {
	root := repoRoot(t)
	filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		switch d.Name() {
		case "util", "utils", "common", "helpers", "misc":
			t.Errorf("package directory %s: name it after its one responsibility", path)
		case ".git", "testdata", "node_modules": // node_modules: the client matrix's npm packages
			return filepath.SkipDir
		}
		return nil
	})
}

// TestCIRunsTheREADMETestCommand keeps .ci/run honest: CI must run exactly the test command
// the README gives a newcomer.
func TestCIRunsTheREADMETestCommand(t *testing.T) {
	root := repoRoot(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	ci, err := os.ReadFile(filepath.Join(root, ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	var testCmd string
	for _, line := range strings.Split(string(readme), "\n") {
		if strings.HasPrefix(line, "go test ") {
			testCmd = line
			break
		}
	}
	if testCmd == "" {
		t.Fatal("README.md gives no `go test` command")
	}
	for _, line := range strings.Split(string(ci), "\n") {
		if line == testCmd {
			return
		}
	}
	t.Fatalf(".ci/run does not run the README's test command %q", testCmd)
}

// tlsPackages are the only packages whose non-test files may import crypto/tls: package
// cert builds every TLS configuration (versions, certificates, identity rules) and package
// listener applies them to sockets, so that a rule of docs/design/security.md is kept in
// one place and a listener cannot be opened with a configuration made elsewhere.
// The benchmark's Redis client is the exception: it dials servers kura does not run
// (redis-server with TLS too), with a configuration cert.ToolClientConfig makes.
var tlsPackages = map[string]bool{"internal/cert": true, "internal/listener": true, "internal/bench/redis": true}

func TestOnlyCertAndListenerImportCryptoTLS(t *testing.T) {
	root := repoRoot(t)
	for _, top := range []string{"internal", "cmd"} {
		filepath.WalkDir(filepath.Join(root, top), func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if d.Name() == "testdata" {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			rel, _ := filepath.Rel(root, filepath.Dir(path))
			if tlsPackages[filepath.ToSlash(rel)] {
				return nil
			}
			af, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range af.Imports {
				if p, _ := strconv.Unquote(imp.Path.Value); p == "crypto/tls" {
					t.Errorf("%s imports crypto/tls: TLS configurations come from internal/cert, sockets from internal/listener", path)
				}
			}
			return nil
		})
	}
}
