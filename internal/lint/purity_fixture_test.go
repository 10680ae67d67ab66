package lint

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// fixtureModule is the module path the fixtures under testdata/purity import each other
// by. It is not kura's, so that a checker which ignored its modulePath argument would fail.
const fixtureModule = "example.com/fixture"

// fixtureRoot holds one small package per case; the go tool ignores testdata, so they need
// not build, but they are valid, gofmt-clean Go.
var fixtureRoot = filepath.Join("testdata", "purity")

// TestPurityCheckerOnFixtures runs the checker on each fixture package and requires that
// it reports exactly what the fixture's `// want "message"` comments say, on their lines:
// each banned construct is found where it is, and its allowed look-alikes are not. The
// table names, for each case, the messages its fixture must demonstrate, so that a fixture
// losing its want comments cannot pass by reporting nothing.
func TestPurityCheckerOnFixtures(t *testing.T) {
	tests := []struct {
		dir  string
		pure []string // the pure list besides dir itself
		must []string // messages the fixture's want comments must include
	}{
		{dir: "time_now", must: []string{"calls time.Now", "uses time.Now"}},
		{dir: "time_since", must: []string{"calls time.Since"}},
		{dir: "time_until", must: []string{"calls time.Until"}},
		{dir: "time_sleep", must: []string{"calls time.Sleep"}},
		{dir: "time_after", must: []string{"calls time.After"}},
		{dir: "time_afterfunc", must: []string{"calls time.AfterFunc"}},
		{dir: "time_newtimer", must: []string{"calls time.NewTimer"}},
		{dir: "time_newticker", must: []string{"calls time.NewTicker"}},
		{dir: "time_tick", must: []string{"calls time.Tick"}},
		{dir: "time_dotimport", must: []string{"dot-imports time, which hides its banned functions from this check"}},
		{dir: "rand_v1", must: []string{"calls math/rand.Intn", "calls math/rand.Shuffle"}},
		{dir: "rand_v2", must: []string{"calls math/rand/v2.IntN", "calls math/rand/v2.N", "uses math/rand/v2.Uint64"}},
		{dir: "go_stmt", must: []string{"go statement"}},
		{dir: "import_os", must: []string{"imports os, which a pure package must not"}},
		{dir: "import_dot_os", must: []string{"imports os, which a pure package must not"}},
		{dir: "import_os_exec", must: []string{"imports os/exec, which a pure package must not"}},
		{dir: "import_net", must: []string{"imports net, which a pure package must not"}},
		{dir: "import_net_http", must: []string{"imports net/http, which a pure package must not"}},
		{dir: "import_syscall", must: []string{"imports syscall, which a pure package must not"}},
		{dir: "import_crypto_rand", must: []string{"imports crypto/rand, which a pure package must not"}},
		{dir: "import_engine", must: []string{"imports internal/engine, which a pure package must not"}},
		{dir: "import_engine_sub", must: []string{"imports internal/engine/lsm, which a pure package must not"}},
		{dir: "import_node", must: []string{"imports internal/node, which a pure package must not"}},
		{dir: "import_impure", must: []string{"imports internal/hint, which is not pure"}},
		{dir: "import_third_party", must: []string{"imports github.com/redis/go-redis/v9, a third-party package not on the allowlist"}},
		// Every allowed look-alike, importing a pure sibling and an allowlisted package,
		// with a test file that uses the clock and a goroutine: nothing may be reported.
		{dir: "clean", pure: []string{"clean/inner"}},
	}
	for _, tt := range tests {
		t.Run(tt.dir, func(t *testing.T) {
			want := fixtureWants(t, tt.dir)
			var wantMsgs []string
			for _, w := range want {
				wantMsgs = append(wantMsgs, w.Msg)
			}
			for _, m := range tt.must {
				if !slices.Contains(wantMsgs, m) {
					t.Errorf("fixture %s has no `// want %q` comment; the table says it demonstrates that", tt.dir, m)
				}
			}
			if len(tt.must) == 0 && len(want) > 0 {
				t.Errorf("fixture %s must be clean but has want comments: %v", tt.dir, want)
			}

			pure := append([]string{tt.dir}, tt.pure...)
			got := checkPurity(fixtureRoot, fixtureModule, pure, allowedExternal)
			missing, unexpected := diffViolations(want, got)
			for _, v := range missing {
				t.Errorf("not reported: %s", v)
			}
			for _, v := range unexpected {
				t.Errorf("reported but not wanted: %s", v)
			}
		})
	}
}

// TestPurityCheckerReportsAMissingPurePackage: a pure list entry with no Go files is a
// violation, so that renaming a pure package cannot silently switch its check off.
func TestPurityCheckerReportsAMissingPurePackage(t *testing.T) {
	got := checkPurity(fixtureRoot, fixtureModule, []string{"no_such_package"}, allowedExternal)
	want := []violation{{File: "no_such_package", Msg: "pure package has no Go files (renamed? update the pure list)"}}
	if !slices.Equal(got, want) {
		t.Errorf("checkPurity on a missing package = %v, want %v", got, want)
	}
}

// wantComment matches a `// want "message"` comment; the message is a Go string literal.
var wantComment = regexp.MustCompile(`^//\s*want\s+("(?:[^"\\]|\\.)*")\s*$`)

// fixtureWants returns the violations the want comments in the non-test files of a
// fixture's directory tree announce, each on the comment's line. Test files must not have
// any: the checker skips them.
func fixtureWants(t *testing.T, dir string) []violation {
	t.Helper()
	var want []violation
	err := filepath.WalkDir(filepath.Join(fixtureRoot, dir), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
			return err
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(fixtureRoot, path)
		if err != nil {
			return err
		}
		for _, c := range allComments(f) {
			m := wantComment.FindStringSubmatch(c.Text)
			if m == nil {
				continue
			}
			msg, err := strconv.Unquote(m[1])
			if err != nil {
				t.Fatalf("%s: bad want comment %s: %v", fset.Position(c.Pos()), c.Text, err)
			}
			if strings.HasSuffix(path, "_test.go") {
				t.Fatalf("%s: want comment in a test file, which the checker skips", fset.Position(c.Pos()))
			}
			want = append(want, violation{File: filepath.ToSlash(rel), Line: fset.Position(c.Pos()).Line, Msg: msg})
		}
		return nil
	})
	if err != nil {
		t.Fatalf("reading fixture %s: %v", dir, err)
	}
	return want
}

func allComments(f *ast.File) []*ast.Comment {
	var cs []*ast.Comment
	for _, g := range f.Comments {
		cs = append(cs, g.List...)
	}
	return cs
}

// diffViolations returns the violations in want but not got, and in got but not want.
func diffViolations(want, got []violation) (missing, unexpected []violation) {
	for _, w := range want {
		if !slices.Contains(got, w) {
			missing = append(missing, w)
		}
	}
	for _, g := range got {
		if !slices.Contains(want, g) {
			unexpected = append(unexpected, g)
		}
	}
	return missing, unexpected
}
