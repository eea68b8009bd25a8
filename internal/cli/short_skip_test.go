package cli

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// skipEndToEndIfShort skips an end-to-end test under -short, which is the
// race pass of scripts/test.sh: there the detector needs each goroutine
// path run once, not every long load again (the main pass runs them all).
// coveredBy names the tests that run the same paths under -short;
// TestShortSkipsNameRunningTests checks that they exist and do run.
func skipEndToEndIfShort(t *testing.T, what string, coveredBy ...string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("-short: %s; the same goroutines run under -short in %s", what, strings.Join(coveredBy, ", "))
	}
}

// Every test a -short skip names as covering it is a test of this package
// that itself runs under -short (it neither skips nor branches on -short).
func TestShortSkipsNameRunningTests(t *testing.T) {
	fset := token.NewFileSet()
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]bool{}
	type skip struct {
		in      string
		covered []string
	}
	var skips []skip
	// shortAware: tests that skip or change under -short, directly or
	// through buildKnee.
	shortAware := map[string]bool{}
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv != nil || !strings.HasPrefix(fd.Name.Name, "Test") {
				continue
			}
			tests[fd.Name.Name] = true
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				switch fun := call.Fun.(type) {
				case *ast.Ident:
					if fun.Name == "skipEndToEndIfShort" || fun.Name == "buildKnee" {
						shortAware[fd.Name.Name] = true
					}
					if fun.Name == "skipEndToEndIfShort" {
						s := skip{in: fd.Name.Name}
						for _, a := range call.Args[min(2, len(call.Args)):] {
							if lit, ok := a.(*ast.BasicLit); ok && lit.Kind == token.STRING {
								v, _ := strconv.Unquote(lit.Value)
								s.covered = append(s.covered, v)
							} else {
								t.Errorf("%s: skipEndToEndIfShort names its covering tests as string literals", fd.Name.Name)
							}
						}
						skips = append(skips, s)
					}
				case *ast.SelectorExpr:
					if x, ok := fun.X.(*ast.Ident); ok && x.Name == "testing" && fun.Sel.Name == "Short" {
						shortAware[fd.Name.Name] = true
					}
				}
				return true
			})
		}
	}
	if len(skips) == 0 {
		t.Fatal("found no skipEndToEndIfShort call: is the parser reading this package?")
	}
	for _, s := range skips {
		if len(s.covered) == 0 {
			t.Errorf("%s skips under -short naming no test that covers it", s.in)
		}
		for _, c := range s.covered {
			switch {
			case !tests[c]:
				t.Errorf("%s names %s as covering it under -short: no such test in this package", s.in, c)
			case shortAware[c]:
				t.Errorf("%s names %s as covering it under -short, but %s skips or changes under -short too", s.in, c, c)
			}
		}
	}
}
