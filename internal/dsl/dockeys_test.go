package dsl

import (
	"go/ast"
	goparser "go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// acceptedKeys reads this package's source for the key lists its strict
// parser accepts: every package-level []string variable named *Keys and
// every list literal passed to unknownKey (the function that refuses any
// other key). Keys added to the parser are found here without a test edit.
func acceptedKeys(t *testing.T) map[string][]string {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	strs := func(e ast.Expr) []string {
		cl, ok := e.(*ast.CompositeLit)
		if !ok {
			return nil
		}
		var out []string
		for _, el := range cl.Elts {
			if bl, ok := el.(*ast.BasicLit); ok && bl.Kind == token.STRING {
				s, _ := strconv.Unquote(bl.Value)
				out = append(out, s)
			}
		}
		return out
	}
	keys := map[string][]string{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := goparser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(af, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.ValueSpec:
				for i, name := range n.Names {
					if strings.HasSuffix(name.Name, "Keys") && i < len(n.Values) {
						if ks := strs(n.Values[i]); ks != nil {
							keys[name.Name] = ks
						}
					}
				}
			case *ast.CallExpr:
				if sel, ok := n.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "unknownKey" && len(n.Args) == 3 {
					if ks := strs(n.Args[1]); ks != nil {
						where := fset.Position(n.Pos()).String()
						if bl, ok := n.Args[2].(*ast.BasicLit); ok {
							where, _ = strconv.Unquote(bl.Value)
						}
						keys[where] = ks
					}
				}
			}
			return true
		})
	}
	return keys
}

// TestDSLReferenceNamesEveryKey: docs/dsl.md, the key-by-key reference,
// names every key the DSL's strict parser accepts (as `key` or `key:`), so
// a key added to the parser without documentation fails here.
func TestDSLReferenceNamesEveryKey(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "dsl.md"))
	if err != nil {
		t.Fatal(err)
	}
	keys := acceptedKeys(t)
	if len(keys) < 8 {
		t.Fatalf("found only %d key lists in the parser: %v", len(keys), keys)
	}
	var where []string
	for w := range keys {
		where = append(where, w)
	}
	sort.Strings(where)
	n := 0
	for _, w := range where {
		for _, k := range keys[w] {
			n++
			re := regexp.MustCompile("`" + regexp.QuoteMeta(k) + "(:[^`]*)?`")
			if !re.Match(doc) {
				t.Errorf("docs/dsl.md does not name key %s (accepted in %s)", k, w)
			}
		}
	}
	t.Logf("%d keys in %d lists checked", n, len(keys))
}
