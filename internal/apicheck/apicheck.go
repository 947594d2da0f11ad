// Package apicheck lists the exported identifiers of a Go package, so
// that a test can hold a public package's surface to a list kept in the
// repository: the surface grows only when someone edits the list.
//
// It type-checks the package (go/types, against the export data of its
// imports from go list -export), so an alias of a type from an internal
// package lists the fields and methods users reach through it, and a type
// lists the methods it promotes from its embedded fields: what users can
// call, not what the files spell.
//
// Its tests also hold the README to what a newcomer runs: the two
// commands it opens with, its complete program (extracted and built), and
// its links.
package apicheck

import (
	"errors"
	"fmt"
	"go/ast"
	"go/build"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// Exported returns one line per exported identifier of the package in
// dir (its non-test files for this platform), sorted: "const X", "var X", "func X" and
// "type X"; for each exported type (an alias too) "field X.F" for each
// exported field of its struct and "method X.M" for each exported method
// of *X, promoted ones included, or of the interface X.
func Exported(dir string) ([]string, error) {
	bp, err := build.ImportDir(dir, 0)
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range bp.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, 0)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	lookup, err := exportData(dir)
	if err != nil {
		return nil, err
	}
	conf := types.Config{Importer: importer.ForCompiler(fset, "gc", lookup)}
	pkg, err := conf.Check(bp.Name, fset, files, nil)
	if err != nil {
		return nil, fmt.Errorf("apicheck: type-checking %s: %w", dir, err)
	}
	var out []string
	scope := pkg.Scope()
	for _, n := range scope.Names() {
		obj := scope.Lookup(n)
		if !obj.Exported() {
			continue
		}
		switch obj := obj.(type) {
		case *types.Const:
			out = append(out, "const "+n)
		case *types.Var:
			out = append(out, "var "+n)
		case *types.Func:
			out = append(out, "func "+n)
		case *types.TypeName:
			out = append(out, "type "+n)
			out = append(out, members(n, obj.Type())...)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// members lists the exported fields of the struct behind t and the
// exported methods of *t (or of the interface t), named under typ.
func members(typ string, t types.Type) []string {
	var out []string
	t = types.Unalias(t)
	if s, ok := t.Underlying().(*types.Struct); ok {
		for f := range s.Fields() {
			if f.Exported() {
				out = append(out, "field "+typ+"."+f.Name())
			}
		}
	}
	var ms *types.MethodSet
	if _, ok := t.Underlying().(*types.Interface); ok {
		ms = types.NewMethodSet(t)
	} else {
		ms = types.NewMethodSet(types.NewPointer(t))
	}
	for sel := range ms.Methods() {
		if sel.Obj().Exported() {
			out = append(out, "method "+typ+"."+sel.Obj().Name())
		}
	}
	return out
}

// exportData returns where the compiler's export data of the package in
// dir and of everything it imports is, as go list -export reports it:
// type-checking against export data from the build cache takes a fraction
// of the time of type-checking every dependency from source.
func exportData(dir string) (importer.Lookup, error) {
	cmd := exec.Command("go", "list", "-export", "-deps", "-f", "{{.ImportPath}}\t{{.Export}}", ".")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = fmt.Errorf("%w: %s", err, ee.Stderr)
		}
		return nil, fmt.Errorf("apicheck: go list -export in %s: %w", dir, err)
	}
	files := make(map[string]string)
	for line := range strings.Lines(string(out)) {
		path, file, _ := strings.Cut(strings.TrimSpace(line), "\t")
		files[path] = file
	}
	return func(path string) (io.ReadCloser, error) {
		file, ok := files[path]
		if !ok || file == "" {
			return nil, fmt.Errorf("apicheck: no export data for %s", path)
		}
		return os.Open(file)
	}, nil
}
