package policy

// This file decides whether a cited proof SETS its key, read from the test's source. Rules:
//   - the source read is the test function (its closures and subtests included), the functions
//     and methods of the same package's _test.go files it calls, the package-level variables and
//     constants it names, to setDepth calls deep, and the files a "testdata/…" string names;
//   - a key is set by (a) a TOML assignment in a string literal: a line, or what follows a
//     quote or a written "\n" in one, that begins `key =` (a table key also `key.x =` or a
//     `[key]` / `[key.x]` header), or such a line in a named testdata file; (b) a policy.Config
//     composite literal naming the key's field; (c) an assignment to that field of a variable
//     bound to a Config (policy.Default(), a Config literal, a parameter of type Config) or of a
//     `.Config` selector;
//   - a comment is never read, and a string that is an argument of t.Error*, t.Fatal*, t.Log*,
//     t.Skip*, fmt.Errorf or the name of a t.Run subtest is a message, not a setting: neither
//     counts, however it is worded. Naming the key anywhere else without `=` does not count either.

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// setDepth bounds how many calls into same-package helpers are followed.
const setDepth = 4

// testPkg is one directory's _test.go files: its functions and methods by name, its
// package-level values by name.
type testPkg struct {
	dir   string
	funcs map[string][]*ast.FuncDecl
	vals  map[string][]ast.Node
}

func newTestPkg(dir string) *testPkg {
	return &testPkg{dir: dir, funcs: map[string][]*ast.FuncDecl{}, vals: map[string][]ast.Node{}}
}

// add indexes f's declarations.
func (p *testPkg) add(f *ast.File) {
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			p.funcs[d.Name.Name] = append(p.funcs[d.Name.Name], d)
		case *ast.GenDecl:
			for _, s := range d.Specs {
				if vs, ok := s.(*ast.ValueSpec); ok {
					for _, n := range vs.Names {
						p.vals[n.Name] = append(p.vals[n.Name], vs)
					}
				}
			}
		}
	}
}

// configField returns the name of the Config field key fills ("" for a key of no field, or one
// in a nested struct, which only a TOML assignment can set).
func configField(k *KeySpec) string {
	if k.field == nil {
		return ""
	}
	c := &Config{}
	addr := reflect.ValueOf(k.field(c)).Pointer()
	v := reflect.ValueOf(c).Elem()
	for i := 0; i < v.NumField(); i++ {
		if v.Field(i).Addr().Pointer() == addr && v.Field(i).Type().Size() > 0 {
			return v.Type().Field(i).Name
		}
	}
	return ""
}

// tomlSets returns the pattern of a TOML assignment of key at a line start, after a quote or a
// written "\n" (a shell printf), for a table key also a dotted key or table header.
func tomlSets(k *KeySpec) *regexp.Regexp {
	name := regexp.QuoteMeta(k.Name)
	alt := name + `\s*=`
	if k.Kind == KindStringMap || k.Kind == KindRoutes {
		alt += `|` + name + `\.[^\s=]+\s*=|\[\s*` + name + `\s*[\].]`
	}
	return regexp.MustCompile(`(?m)(?:^|\\n|['"])[ \t]*(?:` + alt + `)`)
}

// setFinder walks a test's source looking for one key being set.
type setFinder struct {
	pkg     *testPkg
	toml    *regexp.Regexp
	field   string
	seen    map[ast.Node]bool
	files   map[string]bool
	configs map[string]bool // identifiers bound to a Config
	found   string          // where the key is set, once found
	fset    *token.FileSet
}

// setsKey reports where the test fn of pkg sets k, or "" when it does not.
func setsKey(fset *token.FileSet, pkg *testPkg, fn *ast.FuncDecl, k *KeySpec) string {
	f := &setFinder{pkg: pkg, toml: tomlSets(k), field: configField(k), seen: map[ast.Node]bool{},
		files: map[string]bool{}, configs: map[string]bool{}, fset: fset}
	f.visit(fn, 0)
	return f.found
}

// visit walks n, reached depth calls from the test, and the helpers and package-level values it
// names while the depth allows; each node is walked once.
func (f *setFinder) visit(n ast.Node, depth int) {
	if n == nil || f.seen[n] || f.found != "" {
		return
	}
	f.seen[n] = true
	if fd, ok := n.(*ast.FuncDecl); ok {
		f.bindParams(fd.Type)
	}
	var walk func(n ast.Node) bool
	walk = func(n ast.Node) bool {
		if f.found != "" {
			return false
		}
		switch x := n.(type) {
		case *ast.FuncLit:
			f.bindParams(x.Type)
		case *ast.BasicLit:
			f.literal(x)
		case *ast.CompositeLit:
			f.composite(x)
		case *ast.AssignStmt:
			f.assign(x)
		case *ast.ValueSpec:
			f.valueSpec(x)
		case *ast.Ident:
			if depth < setDepth {
				for _, v := range f.pkg.vals[x.Name] {
					f.visit(v, depth+1)
				}
			}
		case *ast.CallExpr:
			if isMessage(x) {
				return false
			}
			if p := joinedTestdata(x); p != "" {
				f.testdata(x, filepath.Join(f.pkg.dir, p))
			}
			if isRun(x) {
				ast.Inspect(x.Fun, walk)
				ast.Inspect(x.Args[1], walk)
				return false
			}
			if depth < setDepth {
				for _, fd := range f.pkg.funcs[calleeName(x)] {
					f.visit(fd, depth+1)
				}
			}
		}
		return true
	}
	ast.Inspect(n, walk)
}

func (f *setFinder) at(n ast.Node, how string) {
	f.found = f.fset.Position(n.Pos()).String() + ": " + how
}

// literal checks a string literal for a TOML assignment, and reads the testdata it names.
func (f *setFinder) literal(x *ast.BasicLit) {
	if x.Kind != token.STRING {
		return
	}
	s, err := strconv.Unquote(x.Value)
	if err != nil {
		return
	}
	if f.toml.MatchString(s) {
		f.at(x, "TOML "+strconv.Quote(f.toml.FindString(s)))
		return
	}
	if strings.HasPrefix(s, "testdata/") && !strings.Contains(s, "..") {
		f.testdata(x, filepath.Join(f.pkg.dir, filepath.FromSlash(s)))
	}
}

// joinedTestdata returns the path a filepath.Join of string literals names under testdata/, or "".
func joinedTestdata(c *ast.CallExpr) string {
	if calleeName(c) != "Join" || len(c.Args) == 0 {
		return ""
	}
	var parts []string
	for _, a := range c.Args {
		lit, ok := a.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return ""
		}
		s, err := strconv.Unquote(lit.Value)
		if err != nil || strings.Contains(s, "..") {
			return ""
		}
		parts = append(parts, s)
	}
	if parts[0] != "testdata" {
		return ""
	}
	return filepath.Join(parts...)
}

// testdata reads the file, or the files of the directory, a literal names.
func (f *setFinder) testdata(x ast.Node, p string) {
	if f.files[p] {
		return
	}
	f.files[p] = true
	fi, err := os.Stat(p)
	if err != nil {
		return
	}
	paths := []string{p}
	if fi.IsDir() {
		ents, _ := os.ReadDir(p)
		paths = paths[:0]
		for _, e := range ents {
			if e.Type().IsRegular() {
				paths = append(paths, filepath.Join(p, e.Name()))
			}
		}
	}
	for _, q := range paths {
		if b, err := os.ReadFile(q); err == nil && f.toml.Match(b) {
			f.at(x, "TOML in "+q)
			return
		}
	}
}

// composite checks a Config literal for the key's field.
func (f *setFinder) composite(x *ast.CompositeLit) {
	if f.field == "" || !isConfigType(x.Type) {
		return
	}
	for _, e := range x.Elts {
		if kv, ok := e.(*ast.KeyValueExpr); ok {
			if id, ok := kv.Key.(*ast.Ident); ok && id.Name == f.field {
				f.at(kv, "Config{"+f.field+": …}")
				return
			}
		}
	}
}

// assign binds identifiers given a Config, and checks assignments to the key's field.
func (f *setFinder) assign(x *ast.AssignStmt) {
	if len(x.Lhs) == len(x.Rhs) {
		for i, l := range x.Lhs {
			if id, ok := l.(*ast.Ident); ok && isConfigValue(x.Rhs[i]) {
				f.configs[id.Name] = true
			}
		}
	}
	for _, l := range x.Lhs {
		sel, ok := l.(*ast.SelectorExpr)
		if !ok || f.field == "" || sel.Sel.Name != f.field {
			continue
		}
		switch r := sel.X.(type) {
		case *ast.Ident:
			if f.configs[r.Name] {
				f.at(x, r.Name+"."+f.field+" =")
			}
		case *ast.SelectorExpr:
			if r.Sel.Name == "Config" {
				f.at(x, "….Config."+f.field+" =")
			}
		}
	}
}

// valueSpec binds `var c policy.Config` and `var c = policy.Default()`.
func (f *setFinder) valueSpec(x *ast.ValueSpec) {
	for i, n := range x.Names {
		if isConfigType(x.Type) || i < len(x.Values) && isConfigValue(x.Values[i]) {
			f.configs[n.Name] = true
		}
	}
}

// bindParams binds parameters of type Config or *Config.
func (f *setFinder) bindParams(ft *ast.FuncType) {
	if ft == nil || ft.Params == nil {
		return
	}
	for _, p := range ft.Params.List {
		if isConfigType(p.Type) {
			for _, n := range p.Names {
				f.configs[n.Name] = true
			}
		}
	}
}

// isConfigType reports whether e is Config, policy.Config or a pointer to one.
func isConfigType(e ast.Expr) bool {
	if s, ok := e.(*ast.StarExpr); ok {
		e = s.X
	}
	switch t := e.(type) {
	case *ast.Ident:
		return t.Name == "Config"
	case *ast.SelectorExpr:
		id, ok := t.X.(*ast.Ident)
		return ok && id.Name == "policy" && t.Sel.Name == "Config"
	}
	return false
}

// isConfigValue reports whether e makes a Config: a literal, its address, or Default().
func isConfigValue(e ast.Expr) bool {
	if u, ok := e.(*ast.UnaryExpr); ok && u.Op == token.AND {
		e = u.X
	}
	switch v := e.(type) {
	case *ast.CompositeLit:
		return isConfigType(v.Type)
	case *ast.CallExpr:
		switch fn := v.Fun.(type) {
		case *ast.Ident:
			return fn.Name == "Default"
		case *ast.SelectorExpr:
			id, ok := fn.X.(*ast.Ident)
			return ok && id.Name == "policy" && fn.Sel.Name == "Default"
		}
	}
	return false
}

// calleeName is the name of the function or method a call calls.
func calleeName(c *ast.CallExpr) string {
	switch fn := c.Fun.(type) {
	case *ast.Ident:
		return fn.Name
	case *ast.SelectorExpr:
		return fn.Sel.Name
	}
	return ""
}

// messages are the methods whose string arguments report, never set: a test's t.Errorf
// naming "snapshot = auto" does not set it.
var messages = map[string]bool{"Error": true, "Errorf": true, "Fatal": true, "Fatalf": true,
	"Log": true, "Logf": true, "Skip": true, "Skipf": true}

// isMessage reports whether c reports or formats a message: its strings are not settings.
func isMessage(c *ast.CallExpr) bool {
	sel, ok := c.Fun.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	id, ok := sel.X.(*ast.Ident)
	if ok && (id.Name == "fmt" && sel.Sel.Name == "Errorf" || id.Name == "errors" && sel.Sel.Name == "New") {
		return true
	}
	return messages[sel.Sel.Name]
}

// isRun reports whether c is t.Run(name, body): its name is a message, its body is read.
func isRun(c *ast.CallExpr) bool {
	sel, ok := c.Fun.(*ast.SelectorExpr)
	return ok && sel.Sel.Name == "Run" && len(c.Args) == 2
}

// parseTestPkg parses one directory's _test.go files (for the detector's own tests).
func parseTestPkg(fset *token.FileSet, dir string, srcs map[string]string) (*testPkg, error) {
	p := newTestPkg(dir)
	for name, src := range srcs {
		f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		p.add(f)
	}
	return p, nil
}

// TestSetsKey: the detector counts a TOML assignment in a string (directly, in a helper two
// calls deep, in a package-level constant, in a subtest), a Config literal's field and an
// assignment to a Config's field; it does not count a comment, a message, a subtest's name, a
// string that only names the key, or the same field of a type that is not a Config.
func TestSetsKey(t *testing.T) {
	k := lookupKey("snapshots_keep")
	helpers := `
const keepConf = "golden = true\nsnapshots_keep = 2\n"
func write(t *testing.T, s string) {}
func twoDeep(t *testing.T) { oneDeep(t) }
func oneDeep(t *testing.T) { write(t, "snapshots_keep=1") }
type other struct{ SnapshotsKeep int }
`
	cases := map[string]bool{
		`write(t, "snapshots_keep = 2\n")`:                          true,
		`write(t, "golden = true\nsnapshots_keep = 2")`:             true,
		`write(t, fmt.Sprintf("snapshots_keep = %d\n", 2))`:         true,
		"write(t, `printf 'snapshots_keep = 2\\n' > .corral.toml`)": true,
		`twoDeep(t)`:         true,
		`write(t, keepConf)`: true,
		`t.Run("x", func(t *testing.T) { write(t, "snapshots_keep = 4") })`: true,
		`cfg := &policy.Config{SnapshotsKeep: 2}; use(cfg)`:                 true,
		`cfg := policy.Default(); cfg.SnapshotsKeep = 2`:                    true,
		`var cfg policy.Config; cfg.SnapshotsKeep = 2`:                      true,
		`o.Config.SnapshotsKeep = 2`:                                        true,
		`// snapshots_keep = 2
		write(t, "golden = true")`: false,
		`t.Fatalf("snapshots_keep = 2 kept %d", 3)`:                 false,
		`t.Errorf("want\nsnapshots_keep = 2")`:                      false,
		`t.Run("snapshots_keep = 2 prunes", func(t *testing.T) {})`: false,
		`write(t, "the snapshots_keep key")`:                        false,
		`write(t, "snapshots_keep")`:                                false,
		`write(t, "max_snapshots_keep = 2")`:                        false,
		`o := other{SnapshotsKeep: 2}; use(o)`:                      false,
		`o := other{}; o.SnapshotsKeep = 2`:                         false,
		`err := fmt.Errorf("snapshots_keep = %d", 2); use(err)`:     false,
	}
	for body, want := range cases {
		fset := token.NewFileSet()
		src := "package x\n" + helpers + "func TestX(t *testing.T) {\n" + body + "\n}\n"
		pkg, err := parseTestPkg(fset, t.TempDir(), map[string]string{"x_test.go": src})
		if err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		fn := pkg.funcs["TestX"][0]
		if got := setsKey(fset, pkg, fn, k); (got != "") != want {
			t.Errorf("%s: sets snapshots_keep = %q, want %v", body, got, want)
		}
	}
}

// TestSetsKeyTestdata: a TOML assignment in a testdata file the test names (a txtar script
// directory, as main.TestScripts runs) counts; the control names a directory without one.
func TestSetsKeyTestdata(t *testing.T) {
	dir := t.TempDir()
	for sub, body := range map[string]string{"script": "exec sh -c 'printf \"agent_min_age = \\\"0s\\\"\\n\" > $CORRAL_HOME/config.toml'\n", "other": "agent_min_age is read\n"} {
		if err := os.MkdirAll(filepath.Join(dir, "testdata", sub), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "testdata", sub, "a.txtar"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for sub, want := range map[string]bool{"script": true, "other": false} {
		fset := token.NewFileSet()
		src := "package x\nfunc TestX(t *testing.T) { run(t, filepath.Join(\"testdata\", \"" + sub + "\")) }\n"
		pkg, err := parseTestPkg(fset, dir, map[string]string{"x_test.go": src})
		if err != nil {
			t.Fatal(err)
		}
		if got := setsKey(fset, pkg, pkg.funcs["TestX"][0], lookupKey("agent_min_age")); (got != "") != want {
			t.Errorf("testdata/%s: sets agent_min_age = %q, want %v", sub, got, want)
		}
	}
}
