package oda_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/odaflow/odaflow/oda"
	"github.com/odaflow/odaflow/webhook/conversion"
)

// The Canvas's three productcatalog examples (v1beta3, v1beta4, v1) describe
// the same component: once the older two are converted to v1 (as the
// conversion webhook serves them), they must give the same children.
func TestTheThreeExampleVersionsGiveTheSameChildren(t *testing.T) {
	children := map[string][]string{}
	for _, v := range []string{"v1beta3", "v1beta4", "v1"} {
		b, err := os.ReadFile(filepath.Join("..", "webhook", "testdata", "component-productcatalog-"+v+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		var obj map[string]any
		if err := yaml.Unmarshal(b, &obj); err != nil {
			t.Fatal(err)
		}
		if v != "v1" {
			if obj, err = conversion.Convert(obj, oda.APIVersion); err != nil {
				t.Fatalf("convert %s: %v", v, err)
			}
		}
		spec, _ := obj["spec"].(map[string]any)
		d, errs := oda.DesiredChildren("ctk-productcatalogmanagement", spec)
		if len(errs) > 0 {
			t.Fatalf("%s: %v", v, errs)
		}
		for _, c := range d.Children {
			children[v] = append(children[v], c.Kind+"/"+c.Name+"/"+string(c.Segment))
		}
	}
	for _, v := range []string{"v1beta3", "v1beta4"} {
		if diff := cmp.Diff(children["v1"], children[v]); diff != "" {
			t.Errorf("%s converted to v1 gives other children (-v1 +%s):\n%s", v, v, diff)
		}
	}
	if len(children["v1"]) < 5 {
		t.Errorf("v1 example gives only %v", children["v1"])
	}
}
