package suite

import (
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImportsMatchUpstream checks that imports.go imports every
// non-standard package that upstream's test/e2e/e2e_test.go imports, so
// that this module's go.sum holds what building e2e.test needs.
func TestImportsMatchUpstream(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "k8s.io/kubernetes").Output()
	if err != nil {
		t.Fatalf("go list -m k8s.io/kubernetes: %v", err)
	}
	upstream := imports(t, filepath.Join(strings.TrimSpace(string(out)), "test", "e2e", "e2e_test.go"))
	ours := imports(t, "imports.go")
	for path := range upstream {
		if !ours[path] && strings.Contains(strings.Split(path, "/")[0], ".") {
			t.Errorf("upstream's e2e_test.go imports %s; imports.go does not", path)
		}
	}
}

func imports(t *testing.T, file string) map[string]bool {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		out[path] = true
	}
	return out
}
