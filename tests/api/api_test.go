// Package api keeps the exported API of each published module in a
// golden file (api/MODULE.txt at the repository's root), so that a
// change to it is a reviewed change: this test fails on any difference,
// and `go test ./api -update` in the tests module rewrites the files.
package api

import (
	"bytes"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// modules are the published library modules, by directory; the CLI's is
// a command, without an API.
var modules = map[string]string{
	".":       "github.com/rwshard/rwshard",
	"shard":   "github.com/rwshard/rwshard/shard",
	"metrics": "github.com/rwshard/rwshard/metrics",
	"otel":    "github.com/rwshard/rwshard/otel",
}

func TestAPI(t *testing.T) {
	root := filepath.Join("..", "..")
	for dir, mod := range modules {
		name := strings.ReplaceAll(strings.TrimPrefix(mod, "github.com/rwshard/"), "/", "-")
		golden := filepath.Join(root, "api", name+".txt")
		got := apiOf(t, filepath.Join(root, dir), mod)
		if *update {
			if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(golden, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatalf("%s: %v (go test ./api -update in the tests module writes it)", mod, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("the exported API of %s changed; review it, then go test ./api -update in the tests module:\n%s",
				mod, diff(string(want), string(got)))
		}
	}
}

// apiOf lists the exported API of every package of the module in dir,
// one declaration a line, sorted: no bodies, values or comments, no
// unexported fields or methods.
func apiOf(t *testing.T, dir, mod string) []byte {
	var lines []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		base := d.Name()
		if rel != "." {
			if base == "internal" || base == "testdata" || strings.HasPrefix(base, ".") || strings.HasPrefix(base, "_") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
				return filepath.SkipDir // another module
			}
		}
		pkgPath := path.Join(mod, filepath.ToSlash(rel))
		lines = append(lines, packageAPI(t, p, pkgPath)...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(lines)
	return []byte(strings.Join(lines, "\n") + "\n")
}

// packageAPI is the API of the package in dir, each line prefixed with
// its import path.
func packageAPI(t *testing.T, dir, pkgPath string) []string {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, func(fi fs.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for name, pkg := range pkgs {
		if name == "main" {
			continue
		}
		for _, f := range pkg.Files {
			for _, decl := range f.Decls {
				for _, s := range declAPI(fset, decl) {
					out = append(out, pkgPath+": "+s)
				}
			}
		}
	}
	return out
}

func declAPI(fset *token.FileSet, decl ast.Decl) []string {
	switch d := decl.(type) {
	case *ast.FuncDecl:
		if !d.Name.IsExported() || d.Recv != nil && !exportedRecv(d.Recv) {
			return nil
		}
		fn := *d
		fn.Doc, fn.Body = nil, nil
		if d.Recv != nil { // the receiver's name is no part of the API
			recv := *d.Recv.List[0]
			recv.Names = nil
			fn.Recv = &ast.FieldList{List: []*ast.Field{&recv}}
		}
		return []string{show(fset, &fn)}
	case *ast.GenDecl:
		var out []string
		for _, spec := range d.Specs {
			switch s := spec.(type) {
			case *ast.TypeSpec:
				if !s.Name.IsExported() {
					continue
				}
				ts := *s
				ts.Doc, ts.Comment = nil, nil
				ts.Type = exportedOnly(s.Type)
				out = append(out, "type "+show(fset, &ts))
			case *ast.ValueSpec:
				for _, n := range s.Names {
					if !n.IsExported() {
						continue
					}
					line := d.Tok.String() + " " + n.Name
					if s.Type != nil {
						line += " " + show(fset, s.Type)
					}
					out = append(out, line)
				}
			}
		}
		return out
	}
	return nil
}

// exportedRecv reports a method whose receiver's type is exported.
func exportedRecv(recv *ast.FieldList) bool {
	typ := recv.List[0].Type
	if star, ok := typ.(*ast.StarExpr); ok {
		typ = star.X
	}
	switch x := typ.(type) {
	case *ast.Ident:
		return x.IsExported()
	case *ast.IndexExpr:
		id, ok := x.X.(*ast.Ident)
		return ok && id.IsExported()
	case *ast.IndexListExpr:
		id, ok := x.X.(*ast.Ident)
		return ok && id.IsExported()
	}
	return false
}

// exportedOnly is a struct or interface type without its unexported
// fields and methods (embedded ones are kept: they promote exported
// ones), and any other type as it is.
func exportedOnly(e ast.Expr) ast.Expr {
	var fields *ast.FieldList
	switch x := e.(type) {
	case *ast.StructType:
		c := *x
		fields, c.Fields = x.Fields, &ast.FieldList{}
		e = &c
		defer func() { c.Fields.List = keep(fields) }()
	case *ast.InterfaceType:
		c := *x
		fields, c.Methods = x.Methods, &ast.FieldList{}
		e = &c
		defer func() { c.Methods.List = keep(fields) }()
	}
	return e
}

func keep(fl *ast.FieldList) []*ast.Field {
	var out []*ast.Field
	for _, f := range fl.List {
		g := *f
		g.Doc, g.Comment, g.Tag = nil, nil, nil
		if len(f.Names) == 0 {
			out = append(out, &g) // embedded
			continue
		}
		g.Names = nil
		for _, n := range f.Names {
			if n.IsExported() {
				g.Names = append(g.Names, n)
			}
		}
		if len(g.Names) > 0 {
			g.Type = exportedOnly(f.Type)
			out = append(out, &g)
		}
	}
	return out
}

// show prints node on one line.
func show(fset *token.FileSet, node any) string {
	var b bytes.Buffer
	if err := (&printer.Config{Mode: printer.RawFormat}).Fprint(&b, token.NewFileSet(), node); err != nil {
		return fmt.Sprintf("<%v>", err)
	}
	return strings.Join(strings.Fields(b.String()), " ")
}

// diff lists the lines only in want (-) and only in got (+).
func diff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for _, l := range w {
		if !slices.Contains(g, l) {
			b.WriteString("- " + l + "\n")
		}
	}
	for _, l := range g {
		if !slices.Contains(w, l) {
			b.WriteString("+ " + l + "\n")
		}
	}
	return b.String()
}
