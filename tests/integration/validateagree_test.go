package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/odaflow/odaflow/internal/localstack"
	"github.com/odaflow/odaflow/oda"
	"github.com/odaflow/odaflow/tests/testkit"
	"github.com/odaflow/odaflow/validate"
)

// TestValidateAgreesWithTheAPIServer feeds every test-kit chart (rendered)
// and every manifest of validate/testdata/refused to `odaflow validate`'s
// code and to the real apiserver (a dry-run create with strict field
// validation, as kubectl apply --validate=strict sends it), and asserts that
// they agree, case by case: refused by both, at the same field, or
// accepted by both.
func TestValidateAgreesWithTheAPIServer(t *testing.T) {
	const ns = "validate-agree"
	createNamespace(t, ns)
	type input struct {
		name string
		obj  map[string]any
	}
	var inputs []input
	for _, c := range testkit.Charts(t) {
		comps := testkit.MustRender(t, c, testkit.Release, ns).Components()
		if len(comps) != 1 {
			t.Fatalf("%s renders %d Components", c.Name, len(comps))
		}
		inputs = append(inputs, input{"testkit/" + c.Name, comps[0].Object})
	}
	root, err := localstack.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(root, "validate", "testdata", "refused", "*.yaml"))
	if len(files) == 0 {
		t.Fatal("no refused corpus")
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		objs, err := validate.Decode(data)
		if err != nil || len(objs) != 1 {
			t.Fatalf("%s: %v", f, err)
		}
		inputs = append(inputs, input{"refused/" + filepath.Base(f), objs[0]})
	}
	var table []string
	for _, in := range inputs {
		u := &unstructured.Unstructured{Object: in.obj}
		u.SetNamespace(ns)
		rep := validate.Component(u.Object, ns)
		var paths []string
		for _, p := range rep.Problems {
			if strings.HasPrefix(p.Message, "the apiserver refuses it") {
				paths = append(paths, p.Path)
			}
		}
		gvr := oda.KindComponent.GVR()
		gvr.Version = u.GroupVersionKind().Version
		_, apiErr := stack.dyn.Resource(gvr).Namespace(ns).Create(context.Background(), u, metav1.CreateOptions{
			DryRun: []string{metav1.DryRunAll}, FieldValidation: "Strict",
		})
		validateRefuses, apiRefuses := len(paths) > 0, apiErr != nil
		row := fmt.Sprintf("%-50s apiserver refuses: %-5t validate refuses: %-5t %v", in.name, apiRefuses, validateRefuses, paths)
		table = append(table, row)
		switch {
		case apiRefuses != validateRefuses:
			t.Errorf("%s: they disagree: apiserver %v; validate %+v", in.name, apiErr, rep.Problems)
		case apiRefuses:
			// Each field validate names, the apiserver names too (it
			// writes a list index as [0], as validate does).
			for _, p := range paths {
				if p != "apiVersion" && !strings.Contains(apiErr.Error(), p) {
					t.Errorf("%s: validate refuses %s; the apiserver says %v", in.name, p, apiErr)
				}
			}
		}
	}
	t.Logf("validate vs the apiserver:\n%s", strings.Join(table, "\n"))
}
