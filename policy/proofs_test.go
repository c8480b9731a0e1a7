package policy

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// pendingProofs are the proofs other branches write in parallel (issue #20): each may be
// missing from this tree until the lead merges them, and then this list is emptied. Nothing
// else may go here; a key with no proof at all is never pending.
var pendingProofs = map[string]bool{}

// unprovenKeys are keys whose effect no test of this tree proves yet, named here so that the
// gap is visible rather than silent; each says what would prove it. The list only shrinks.
var unprovenKeys = map[string]string{
	"packages": "a box with packages = [...] has them installed (e2e)",
	// The light tier's keys: its owner names the sandbox tests proving each (sandbox package).
	"sandbox.env.pass": "sandbox", "sandbox.exec.allow": "sandbox", "sandbox.fs.read": "sandbox",
	"sandbox.fs.write": "sandbox", "sandbox.limits.cpu": "sandbox", "sandbox.limits.memory": "sandbox",
	"sandbox.limits.output": "sandbox", "sandbox.limits.pids": "sandbox", "sandbox.limits.scratch": "sandbox",
	"sandbox.limits.timeout": "sandbox", "sandbox.network.allow": "sandbox",
}

// ciEnv are the variables CI sets (scripts/test-suites.sh): a skip behind another one is a skip
// in CI.
var ciEnv = map[string]bool{"CORRAL_E2E": true}

// TestEveryKeyHasAProof: every key of the table names tests proving its effect, each named test
// exists in the repository, CI runs it (no unconditional skip, no skip behind a variable CI
// does not set) and it sets the key (proofsets_test.go: a TOML assignment or the key's Config
// field, in the test or the helpers it calls, never a comment or a message). A key nobody
// proves fails here; remove it from the table or write its test.
func TestEveryKeyHasAProof(t *testing.T) {
	fset := token.NewFileSet()
	tests := repoTests(t, fset)
	for _, k := range Keys() {
		proof := k.Proof()
		if _, ok := unprovenKeys[k.Name]; ok {
			if len(proof) > 0 {
				t.Errorf("key %s has proofs %v: remove it from unprovenKeys", k.Name, proof)
			}
			continue
		}
		if len(proof) == 0 {
			t.Errorf("key %s names no test proving its effect (proofs.go)", k.Name)
		}
		for _, name := range proof {
			fn, ok := tests[name]
			switch {
			case !ok && pendingProofs[name]:
			case !ok:
				t.Errorf("key %s: proof %s does not exist", k.Name, name)
			default:
				if why := skippedInCI(fn.fn); why != "" {
					t.Errorf("key %s: proof %s is skipped in CI: %s", k.Name, name, why)
				}
				if at := setsKey(fset, fn.pkg, fn.fn, &k); at != "" {
					t.Logf("key %s: %s sets it at %s", k.Name, name, at)
				} else {
					t.Errorf("key %s: proof %s (%s) never sets %s: write it as TOML (%s = …) or set Config.%s in the test or a helper it calls, then assert its effect",
						k.Name, name, fset.Position(fn.fn.Pos()), k.Name, k.Name, cmpOr(configField(&k), "<field>"))
				}
			}
		}
	}
	for name := range proofs {
		if lookupKey(name) == nil {
			t.Errorf("proofs.go names %q, which is not a key", name)
		}
	}
}

// proofTest is one test function of the repository and the package it belongs to.
type proofTest struct {
	fn  *ast.FuncDecl
	pkg *testPkg
}

// repoTests parses every _test.go file of the repository: "package.TestName" → its declaration
// and package.
func repoTests(t *testing.T, fset *token.FileSet) map[string]proofTest {
	t.Helper()
	out := map[string]proofTest{}
	pkgs := map[string]*testPkg{}
	err := filepath.WalkDir("..", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && p != ".." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		dir := filepath.Dir(p)
		if pkgs[dir] == nil {
			pkgs[dir] = newTestPkg(dir)
		}
		pkgs[dir].add(f)
		for _, decl := range f.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok && fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Test") {
				out[strings.TrimSuffix(f.Name.Name, "_test")+"."+fn.Name.Name] = proofTest{fn: fn, pkg: pkgs[dir]}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 50 {
		t.Fatalf("found only %d tests: the walk is broken", len(out))
	}
	return out
}

// cmpOr returns s, or def when s is empty.
func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// skippedInCI says why fn would be skipped in CI, or "": a t.Skip among its top-level
// statements, or one inside a top-level if whose condition reads a variable CI does not set.
func skippedInCI(fn *ast.FuncDecl) string {
	for _, st := range fn.Body.List {
		switch s := st.(type) {
		case *ast.ExprStmt:
			if isSkip(s.X) {
				return "unconditional t.Skip"
			}
		case *ast.IfStmt:
			if !containsSkip(s.Body) {
				continue
			}
			for _, v := range append(envReads(s.Init), envReads(s.Cond)...) {
				if !ciEnv[v] {
					return "t.Skip unless " + v + " is set, which CI does not set"
				}
			}
		}
	}
	return ""
}

// isSkip reports whether e is a call of t.Skip, t.Skipf or t.SkipNow.
func isSkip(e ast.Expr) bool {
	call, ok := e.(*ast.CallExpr)
	if !ok {
		return false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	return ok && strings.HasPrefix(sel.Sel.Name, "Skip")
}

func containsSkip(n ast.Node) bool {
	found := false
	ast.Inspect(n, func(n ast.Node) bool {
		if e, ok := n.(ast.Expr); ok && isSkip(e) {
			found = true
		}
		return !found
	})
	return found
}

// envReads lists the variables os.Getenv or os.LookupEnv read in n (which may be nil).
func envReads(n ast.Node) []string {
	var out []string
	if n == nil {
		return nil
	}
	ast.Inspect(n, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || len(call.Args) != 1 {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok || (sel.Sel.Name != "Getenv" && sel.Sel.Name != "LookupEnv") {
			return true
		}
		if lit, ok := call.Args[0].(*ast.BasicLit); ok && lit.Kind == token.STRING {
			if v, err := strconv.Unquote(lit.Value); err == nil {
				out = append(out, v)
			}
		}
		return true
	})
	return out
}

// TestSkippedInCI: the skip detector flags what CI skips and only that (controls: a skip behind
// CORRAL_E2E, which CI sets, and a test with no skip).
func TestSkippedInCI(t *testing.T) {
	cases := map[string]bool{
		`t.Skip("later")`: true,
		`if os.Getenv("CORRAL_SLOW") == "" { t.Skip("slow") }`:      true,
		`if _, ok := os.LookupEnv("X"); !ok { t.SkipNow() }`:        true,
		`if os.Getenv("CORRAL_E2E") != "1" { t.Skip("no e2e") }`:    false,
		`if os.Getenv("CORRAL_SLOW") == "" { t.Log("fast") }`:       false,
		`t.Run("x", func(t *testing.T) {}); if false { t.Fatal() }`: false,
	}
	for body, want := range cases {
		f, err := parser.ParseFile(token.NewFileSet(), "x_test.go", "package x\nfunc TestX(t *testing.T) {\n"+body+"\n}\n", 0)
		if err != nil {
			t.Fatal(err)
		}
		if got := skippedInCI(f.Decls[0].(*ast.FuncDecl)) != ""; got != want {
			t.Errorf("%s: skipped %v, want %v", body, got, want)
		}
	}
}
