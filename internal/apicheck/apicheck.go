// Package apicheck lists the exported identifiers of a Go package, so
// that a test can hold a public package's surface to a list kept in the
// repository: the surface grows only when someone edits the list.
package apicheck

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"slices"
	"strings"
)

// Exported returns one line per exported identifier that the package in
// dir declares in its non-test files, sorted: "const X", "var X",
// "func X", "type X", "method T.M" for exported methods of exported
// types, "field T.F" for exported fields of exported struct types and
// "method T.M" for the methods of exported interfaces.
func Exported(dir string) ([]string, error) {
	fset := token.NewFileSet()
	notTest := func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }
	pkgs, err := parser.ParseDir(fset, dir, notTest, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	if len(pkgs) != 1 {
		return nil, fmt.Errorf("apicheck: %s holds %d packages, want 1", dir, len(pkgs))
	}
	var out []string
	for _, p := range pkgs {
		for _, f := range p.Files {
			for _, d := range f.Decls {
				out = append(out, declared(d)...)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

func declared(d ast.Decl) []string {
	var out []string
	switch d := d.(type) {
	case *ast.FuncDecl:
		if !d.Name.IsExported() {
			break
		}
		if d.Recv == nil {
			return []string{"func " + d.Name.Name}
		}
		if recv := typeName(d.Recv.List[0].Type); ast.IsExported(recv) {
			return []string{"method " + recv + "." + d.Name.Name}
		}
	case *ast.GenDecl:
		for _, s := range d.Specs {
			switch s := s.(type) {
			case *ast.ValueSpec:
				for _, n := range s.Names {
					if n.IsExported() {
						out = append(out, d.Tok.String()+" "+n.Name)
					}
				}
			case *ast.TypeSpec:
				if s.Name.IsExported() {
					out = append(out, "type "+s.Name.Name)
					out = append(out, members(s.Name.Name, s.Type)...)
				}
			}
		}
	}
	return out
}

// typeName is the name of a method's receiver type or of an embedded
// type: T for T, *T, T[P], *T[P] and pkg.T.
func typeName(e ast.Expr) string {
	for {
		switch t := e.(type) {
		case *ast.StarExpr:
			e = t.X
		case *ast.IndexExpr:
			e = t.X
		case *ast.IndexListExpr:
			e = t.X
		case *ast.SelectorExpr:
			return t.Sel.Name
		case *ast.Ident:
			return t.Name
		default:
			return ""
		}
	}
}

// members lists the exported fields of a struct type and the methods of
// an interface type.
func members(typ string, e ast.Expr) []string {
	var list *ast.FieldList
	kind := "field "
	switch t := e.(type) {
	case *ast.StructType:
		list = t.Fields
	case *ast.InterfaceType:
		list, kind = t.Methods, "method "
	default:
		return nil
	}
	var out []string
	for _, f := range list.List {
		names := f.Names
		if len(names) == 0 { // embedded: named by its type
			if n := typeName(f.Type); ast.IsExported(n) {
				out = append(out, kind+typ+"."+n)
			}
			continue
		}
		for _, n := range names {
			if n.IsExported() {
				out = append(out, kind+typ+"."+n.Name)
			}
		}
	}
	return out
}
