package testkit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/odaflow/odaflow/internal/localstack"
)

// TestDocumentedAPIFields keeps docs/testkit.md complete: every field of
// every ExposedAPI and DependentAPI the test-kit charts use must have its
// row there (as `path` at the start of a table row).
func TestDocumentedAPIFields(t *testing.T) {
	root, err := localstack.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "testkit.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]bool{}
	for _, line := range strings.Split(string(doc), "\n") {
		if rest, ok := strings.CutPrefix(line, "| `"); ok {
			if i := strings.Index(rest, "`"); i > 0 {
				rows[rest[:i]] = true
			}
		}
	}
	used := map[string][]string{}
	for _, c := range Charts(t) {
		r := MustRender(t, c, Release, Namespace)
		for _, comp := range r.Components() {
			for _, f := range APIFields(comp.Object) {
				used[f] = append(used[f], c.Name)
			}
		}
	}
	if len(used) == 0 {
		t.Fatal("the charts use no API field: the walk is broken")
	}
	for f, charts := range used {
		if !rows[f] {
			t.Errorf("docs/testkit.md has no row for `%s` (used by %s)", f, strings.Join(charts, ", "))
		}
	}
}
