package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// exportedNames returns, by package name, the exported names declared in
// the non-test Go files under root: top-level constants, variables, types
// and functions, and the fields and methods of its types.
func exportedNames(t *testing.T, root string) map[string]map[string]bool {
	t.Helper()
	names := map[string]map[string]bool{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		pkg := names[f.Name.Name]
		if pkg == nil {
			pkg = map[string]bool{}
			names[f.Name.Name] = pkg
		}
		add := func(id *ast.Ident) {
			if id.IsExported() {
				pkg[id.Name] = true
			}
		}
		for _, decl := range f.Decls {
			switch decl := decl.(type) {
			case *ast.FuncDecl:
				add(decl.Name)
			case *ast.GenDecl:
				for _, spec := range decl.Specs {
					switch spec := spec.(type) {
					case *ast.ValueSpec:
						for _, id := range spec.Names {
							add(id)
						}
					case *ast.TypeSpec:
						add(spec.Name)
						if st, ok := spec.Type.(*ast.StructType); ok {
							for _, field := range st.Fields.List {
								for _, id := range field.Names {
									add(id)
								}
							}
						}
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

var (
	// qualifiedName is a Go name with its package: ops.MaxSchemaBytes,
	// store.Config.CacheBranches.
	qualifiedName = regexp.MustCompile(`^([a-z]+)((?:\.[A-Z][A-Za-z0-9]*)+)$`)
	// bareName is a Go name without its package: MaxAckPending.
	bareName = regexp.MustCompile(`^[A-Z][a-z][A-Za-z0-9]*$`)
)

// TestBoundsSettings fails when the setting column of docs/bounds.md names
// a Go constant, variable, type or field the code no longer declares, so
// that a renamed or moved bound is renamed here too.
func TestBoundsSettings(t *testing.T) {
	doc, err := os.ReadFile("bounds.md")
	if err != nil {
		t.Fatal(err)
	}
	names := exportedNames(t, "../pkg")
	all := map[string]bool{}
	for _, pkg := range names {
		for n := range pkg {
			all[n] = true
		}
	}
	checked := 0
	for _, l := range prose(string(doc)) {
		if !strings.HasPrefix(l.text, "| ") || strings.HasPrefix(l.text, "| ---") {
			continue
		}
		cells := strings.Split(strings.Trim(l.text, "| "), " | ")
		setting := cells[len(cells)-1]
		for _, m := range inlineCode.FindAllString(setting, -1) {
			name := strings.Trim(m, "`")
			if q := qualifiedName.FindStringSubmatch(name); q != nil {
				pkg, ok := names[q[1]]
				if !ok {
					t.Errorf("bounds.md line %d: %s: no package %s under pkg/", l.n, name, q[1])
					continue
				}
				checked++
				for _, part := range strings.Split(strings.TrimPrefix(q[2], "."), ".") {
					if !pkg[part] {
						t.Errorf("bounds.md line %d: %s: package %s declares no %s", l.n, name, q[1], part)
					}
				}
				continue
			}
			if bareName.MatchString(name) {
				checked++
				if !all[name] {
					t.Errorf("bounds.md line %d: %s: no package under pkg/ declares it", l.n, name)
				}
			}
		}
	}
	if checked < 40 {
		t.Fatalf("only %d Go names checked in bounds.md: the table's format changed", checked)
	}
}
