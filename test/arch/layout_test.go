package arch

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// rooms are the top-level folders: ARCHITECTURE.md's rooms, internal/ for
// the plumbing no one outside the project uses, and what is not Go.
var rooms = []string{"agent", "api", "charts", "cmd", "controlplane", "docs", "examples", "internal", "manifests", "policies", "proxy", "sidecar", "test", "webhook"}

// maxFunctionLines bounds every function of the product (tests and
// generated code aside), from its func line to its closing brace.
const maxFunctionLines = 80

// TestTopLevelIsTheRooms: `ls` reads like the architecture. A new folder is
// either a room of docs/architecture.md or belongs under internal/.
func TestTopLevelIsTheRooms(t *testing.T) {
	entries, err := os.ReadDir("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") && !slices.Contains(rooms, e.Name()) && e.Name() != "bin" {
			t.Errorf("top-level folder %s/ is not one of the rooms %v: move plumbing under internal/, or add the room to docs/architecture.md and this list", e.Name(), rooms)
		}
	}
}

// TestRoomsSayWhatTheyOwn: each room holding Go opens its doc.go with what
// it owns and what it must never import, in three lines.
func TestRoomsSayWhatTheyOwn(t *testing.T) {
	for _, room := range rooms {
		if _, err := os.Stat(filepath.Join("../..", room)); err != nil {
			continue
		}
		if !holdsGo(t, filepath.Join("../..", room)) {
			continue
		}
		t.Run(room, func(t *testing.T) {
			f, err := parser.ParseFile(token.NewFileSet(), filepath.Join("../..", room, "doc.go"), nil, parser.ParseComments|parser.PackageClauseOnly)
			if err != nil {
				t.Fatalf("%s/doc.go: %v (each room says what it owns and what it must never import)", room, err)
			}
			if f.Doc == nil {
				t.Fatalf("%s/doc.go has no package comment", room)
			}
			lines := strings.SplitN(f.Doc.Text(), "\n", 4)
			if len(lines) < 3 {
				t.Fatalf("%s/doc.go: the package comment has %d lines, want three that say what it owns and what it must never import", room, len(lines))
			}
			opening := strings.Join(lines[:3], " ")
			if !strings.Contains(opening, " owns ") || !strings.Contains(opening, "never") {
				t.Errorf("%s/doc.go opens with %q: want what it owns and what it must never import", room, opening)
			}
		})
	}
}

func holdsGo(t *testing.T, dir string) bool {
	t.Helper()
	found := false
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || found {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") {
			found = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// TestNoLongFunctions: no function of the product is over maxFunctionLines;
// a longer one is named steps waiting to be written.
func TestNoLongFunctions(t *testing.T) {
	forEachProductFile(t, func(fset *token.FileSet, path string, f *ast.File) {
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			if n := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1; n > maxFunctionLines {
				t.Errorf("%s: %s is %d lines, over %d: split it into named steps", fset.Position(fn.Pos()), fn.Name.Name, n, maxFunctionLines)
			}
		}
	})
}

// TestOneValidateSignature: every options type of a command validates the
// same way, Validate() error, every fault joined.
func TestOneValidateSignature(t *testing.T) {
	forEachProductFile(t, func(fset *token.FileSet, path string, f *ast.File) {
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv == nil || fn.Name.Name != "Validate" || !strings.HasSuffix(receiverType(fn), "Options") {
				continue
			}
			res := fn.Type.Results
			if fn.Type.Params.NumFields() != 0 || res == nil || len(res.List) != 1 || len(res.List[0].Names) > 1 || !isIdent(res.List[0].Type, "error") {
				t.Errorf("%s: (%s).Validate: want Validate() error, as every command's options", fset.Position(fn.Pos()), receiverType(fn))
			}
		}
	})
}

func receiverType(fn *ast.FuncDecl) string {
	e := fn.Recv.List[0].Type
	if s, ok := e.(*ast.StarExpr); ok {
		e = s.X
	}
	if id, ok := e.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}

// forEachProductFile parses every Go file that ships: not tests, not
// generated code, nothing under test/.
func forEachProductFile(t *testing.T, visit func(*token.FileSet, string, *ast.File)) {
	t.Helper()
	fset := token.NewFileSet()
	err := filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if rel, _ := filepath.Rel("../..", path); rel == "test" || rel != "." && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || strings.HasSuffix(path, ".pb.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		if ast.IsGenerated(f) {
			return nil
		}
		visit(fset, path, f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
