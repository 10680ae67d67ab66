// Package lint holds tests that keep the tree's structural rules true (../shared/STYLE.md):
// pure packages stay free of the network, the wall clock's drivers and the node, and no
// package takes a name that says nothing.
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

// purePackages decide things and must be runnable inside a simulator: no sockets, no node.
var purePackages = []string{"internal/row", "internal/ring", "internal/coord", "internal/wire", "internal/cluster"}

// forbiddenInPure are imports a pure package must not have.
var forbiddenInPure = []string{"net", "net/http", "os/exec", "github.com/kuradb/kura/internal/node"}

func repoRoot(t *testing.T) string {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func TestPurePackagesImportNoNetworkOrNode(t *testing.T) {
	root := repoRoot(t)
	for _, pkg := range purePackages {
		fset := token.NewFileSet()
		pkgs, err := parser.ParseDir(fset, filepath.Join(root, pkg), func(fi os.FileInfo) bool {
			return !strings.HasSuffix(fi.Name(), "_test.go")
		}, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pkgs {
			for name, f := range p.Files {
				for _, imp := range f.Imports {
					path, _ := strconv.Unquote(imp.Path.Value)
					for _, bad := range forbiddenInPure {
						if path == bad {
							t.Errorf("%s imports %s; %s must stay pure", name, path, pkg)
						}
					}
				}
			}
		}
	}
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
		case ".git", "testdata":
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
