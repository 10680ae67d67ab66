package lint

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// violation is one thing a pure package does that it must not.
type violation struct {
	File string // slash-separated, relative to the checked root
	Line int    // 0 when the violation is about a whole package
	Msg  string
}

func (v violation) String() string {
	if v.Line == 0 {
		return v.File + ": " + v.Msg
	}
	return fmt.Sprintf("%s:%d: %s", v.File, v.Line, v.Msg)
}

// bannedStdImports are standard-library packages a pure package must not import, each with
// the packages under it: they reach the operating system (files, processes, signals,
// sockets) or, for crypto/rand, the operating system's entropy, which is global randomness
// that no seed reproduces.
var bannedStdImports = []string{"os", "net", "syscall", "crypto/rand"}

// bannedModuleImports are the module's packages (relative to the module path, with the
// packages under them) a pure package must not import even if someone listed them as pure:
// the node is the driver that owns goroutines and sockets, and the engines own the disk.
var bannedModuleImports = []string{"internal/node", "internal/engine"}

// bannedTimeFuncs are the functions of package time that read the wall clock or wait on it.
// Everything else in time (Duration, Time and its methods, Date, Unix, ParseDuration) is
// arithmetic on values the caller passes in.
var bannedTimeFuncs = map[string]bool{
	"Now": true, "Since": true, "Until": true, "Sleep": true, "After": true,
	"AfterFunc": true, "NewTimer": true, "NewTicker": true, "Tick": true,
}

// randAllowed are the names of math/rand and math/rand/v2 a pure package may use: the types,
// and the constructors that take an explicit seed or source. Every other name is refused,
// so the check fails closed: a package-level function added to math/rand in a later Go
// release (they all draw from the global, unseeded source) is reported without editing
// this list.
var randAllowed = map[string]bool{
	// Types (Source64 is math/rand's; PCG and ChaCha8 are math/rand/v2's).
	"Rand": true, "Source": true, "Source64": true, "Zipf": true, "PCG": true, "ChaCha8": true,
	// Constructors from an explicit seed or source.
	"New": true, "NewSource": true, "NewZipf": true, "NewPCG": true, "NewChaCha8": true,
}

// checkPurity checks the packages in pure, directories relative to root that hold packages
// of the module modulePath, and returns what each does that a pure package must not, sorted
// by file and line. Only non-test files are checked: tests may use the clock and
// goroutines to drive the package.
//
// A pure package imports only the standard library (less bannedStdImports), other pure
// packages, and the third-party packages in allowedExternal (import path to the reason it
// is allowed). It checks only direct imports: every package on the pure list is checked
// itself, so a pure package that imports only pure packages has, by induction, only pure
// packages in its transitive imports. A pure package also neither starts goroutines nor
// uses the wall clock's functions of package time nor the package-level functions of
// math/rand and math/rand/v2.
func checkPurity(root, modulePath string, pure []string, allowedExternal map[string]string) []violation {
	isPure := make(map[string]bool)
	for _, p := range pure {
		isPure[p] = true
	}
	var vs []violation
	for _, pkg := range pure {
		vs = append(vs, checkPurePackage(root, modulePath, pkg, isPure, allowedExternal)...)
	}
	slices.SortFunc(vs, func(a, b violation) int {
		if c := strings.Compare(a.File, b.File); c != 0 {
			return c
		}
		if a.Line != b.Line {
			return a.Line - b.Line
		}
		return strings.Compare(a.Msg, b.Msg)
	})
	return vs
}

// checkPurePackage checks the non-test Go files of one directory. A directory with none is
// a violation, so that renaming a pure package without updating the list fails loudly
// instead of checking nothing.
func checkPurePackage(root, modulePath, pkg string, isPure map[string]bool, allowedExternal map[string]string) []violation {
	entries, err := os.ReadDir(filepath.Join(root, filepath.FromSlash(pkg)))
	if err != nil && !os.IsNotExist(err) {
		return []violation{{File: pkg, Msg: err.Error()}}
	}
	var vs []violation
	files := 0
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") ||
			strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
			continue
		}
		files++
		rel := pkg + "/" + name
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, filepath.Join(root, filepath.FromSlash(rel)), nil, 0)
		if err != nil {
			vs = append(vs, violation{File: rel, Msg: "does not parse: " + err.Error()})
			continue
		}
		fc := fileChecker{fset: fset, file: rel, modulePath: modulePath, isPure: isPure, allowedExternal: allowedExternal}
		fc.check(f)
		vs = append(vs, fc.vs...)
	}
	if files == 0 {
		vs = append(vs, violation{File: pkg, Msg: "pure package has no Go files (renamed? update the pure list)"})
	}
	return vs
}

// fileChecker collects the violations of one parsed file.
type fileChecker struct {
	fset            *token.FileSet
	file            string
	modulePath      string
	isPure          map[string]bool
	allowedExternal map[string]string
	vs              []violation
}

func (c *fileChecker) report(pos token.Pos, format string, args ...any) {
	c.vs = append(c.vs, violation{File: c.file, Line: c.fset.Position(pos).Line, Msg: fmt.Sprintf(format, args...)})
}

func (c *fileChecker) check(f *ast.File) {
	// watched maps the name a file refers to time, math/rand or math/rand/v2 by (its import
	// name, or the package's own name) to the import path.
	watched := make(map[string]string)
	for _, imp := range f.Imports {
		path, err := strconv.Unquote(imp.Path.Value)
		if err != nil {
			continue // the parser accepted it, so this cannot happen
		}
		c.checkImport(imp.Pos(), path)
		if path != "time" && path != "math/rand" && path != "math/rand/v2" {
			continue
		}
		name := "rand"
		if path == "time" {
			name = "time"
		}
		if imp.Name != nil {
			name = imp.Name.Name
		}
		switch name {
		case "_":
		case ".":
			// Unqualified Now() or IntN() cannot be told from a local function without
			// type-checking, so the dot-import itself is the violation.
			c.report(imp.Pos(), "dot-imports %s, which hides its banned functions from this check", path)
		default:
			watched[name] = path
		}
	}
	c.checkBody(f, watched)
}

// checkImport reports an import a pure package must not have.
func (c *fileChecker) checkImport(pos token.Pos, path string) {
	if rel, ok := c.moduleRelative(path); ok {
		switch {
		case underAny(rel, bannedModuleImports):
			c.report(pos, "imports %s, which a pure package must not", rel)
		case !c.isPure[rel]:
			c.report(pos, "imports %s, which is not pure", rel)
		}
		return
	}
	first, _, _ := strings.Cut(path, "/")
	if !strings.Contains(first, ".") { // the standard library
		if underAny(path, bannedStdImports) {
			c.report(pos, "imports %s, which a pure package must not", path)
		}
		return
	}
	if _, ok := c.allowedExternal[path]; !ok {
		c.report(pos, "imports %s, a third-party package not on the allowlist", path)
	}
}

// moduleRelative returns path relative to the module path, if it is one of the module's.
func (c *fileChecker) moduleRelative(path string) (string, bool) {
	if path == c.modulePath {
		return ".", true
	}
	return strings.CutPrefix(path, c.modulePath+"/")
}

// underAny reports whether path is one of prefixes or a package under one of them.
func underAny(path string, prefixes []string) bool {
	for _, p := range prefixes {
		if path == p || strings.HasPrefix(path, p+"/") {
			return true
		}
	}
	return false
}

// checkBody reports go statements and every use, called or not (a clock: time.Now field
// is as impure as a call), of a banned function of a watched package.
//
// A selector x.F refers to a watched package only if x is the import's name and the parser
// did not resolve x to a local declaration (ast.Ident.Obj): so t.After(u) on a time.Time,
// or rand.IntN(3) where rand is a *rand.Rand parameter, is not reported. ast.Object is
// deprecated in favour of go/types, but type-checking would need every import's source,
// which the fixtures do not have; a local name can only shadow an import inside a
// function, where the parser's resolution is exact.
func (c *fileChecker) checkBody(f *ast.File, watched map[string]string) {
	called := make(map[*ast.SelectorExpr]bool)
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.GoStmt:
			c.report(n.Pos(), "go statement")
		case *ast.CallExpr:
			if sel, ok := callee(n.Fun).(*ast.SelectorExpr); ok {
				called[sel] = true
			}
		case *ast.SelectorExpr:
			x, ok := n.X.(*ast.Ident)
			if !ok || x.Obj != nil {
				return true
			}
			path, ok := watched[x.Name]
			if !ok || !bannedFunc(path, n.Sel.Name) {
				return true
			}
			verb := "uses"
			if called[n] {
				verb = "calls"
			}
			c.report(n.Pos(), "%s %s.%s", verb, path, n.Sel.Name)
		}
		return true
	})
}

// callee strips parentheses and explicit type arguments (rand.N[time.Duration]) from a
// call's function expression.
func callee(fun ast.Expr) ast.Expr {
	for {
		switch e := fun.(type) {
		case *ast.ParenExpr:
			fun = e.X
		case *ast.IndexExpr:
			fun = e.X
		case *ast.IndexListExpr:
			fun = e.X
		default:
			return fun
		}
	}
}

// bannedFunc reports whether name, selected from the package at path (time, math/rand or
// math/rand/v2), is banned in a pure package.
func bannedFunc(path, name string) bool {
	if path == "time" {
		return bannedTimeFuncs[name]
	}
	return ast.IsExported(name) && !randAllowed[name]
}
