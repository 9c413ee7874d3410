// Package examples_test checks that every example is a program a user can
// copy into a module of their own: none of its non-test files imports a
// package that Go lets only this repository import (…/internal/…). The
// examples' tests may: they start a lab and hand its DSN to run.
package examples_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// internalImports returns the imports of a Go source file whose path has
// an internal element.
func internalImports(fset *token.FileSet, filename string, src any) ([]string, error) {
	f, err := parser.ParseFile(fset, filename, src, parser.ImportsOnly)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, imp := range f.Imports {
		path, err := strconv.Unquote(imp.Path.Value)
		if err != nil {
			return nil, err
		}
		if strings.Contains("/"+path+"/", "/internal/") {
			out = append(out, path)
		}
	}
	return out, nil
}

func TestExamplesImportNothingInternal(t *testing.T) {
	fset := token.NewFileSet()
	programs := map[string]bool{} // directories with a non-test file
	err := filepath.WalkDir(".", func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() {
			if name := e.Name(); path != "." && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		programs[filepath.Dir(path)] = true
		bad, err := internalImports(fset, path, nil)
		if err != nil {
			return err
		}
		for _, imp := range bad {
			t.Errorf("%s imports %s: a user's module cannot; take the connection from a flag or the environment (tests may use the lab)", path, imp)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The walk must have seen the examples, or it checked nothing.
	for _, dir := range []string{"dropin", "gorm", "quickstart", "sharding", "sqlmock", "sqlx"} {
		if !programs[dir] {
			t.Errorf("no non-test Go file found in %s", dir)
		}
	}
}

// The check itself finds what it must and nothing else.
func TestInternalImports(t *testing.T) {
	for _, c := range []struct {
		src  string
		want string
	}{
		{`package main; import "github.com/rwshard/rwshard/internal/lab"`, "github.com/rwshard/rwshard/internal/lab"},
		{`package main; import (l "github.com/rwshard/rwshard/internal/lab/labtest"; "fmt")`, "github.com/rwshard/rwshard/internal/lab/labtest"},
		{`package main; import "internal/poll"`, "internal/poll"},
		{`package main; import ("github.com/rwshard/rwshard"; "github.com/rwshard/rwshard/hint")`, ""},
		{`package main; import "example.com/internals/x"`, ""},
	} {
		got, err := internalImports(token.NewFileSet(), "x.go", c.src)
		if err != nil {
			t.Fatalf("%s: %v", c.src, err)
		}
		if strings.Join(got, " ") != c.want {
			t.Errorf("%s: internal imports %q, want %q", c.src, got, c.want)
		}
	}
}
