package oda

import (
	"os"
	"testing"

	"sigs.k8s.io/yaml"
)

// BenchmarkDesiredChildren decodes and normalises the Canvas's v1
// productcatalog Component, as the Component workflow does on every event.
func BenchmarkDesiredChildren(b *testing.B) {
	raw, err := os.ReadFile("testdata/component-productcatalog-v1.yaml")
	if err != nil {
		b.Fatal(err)
	}
	var obj struct {
		Metadata struct{ Name string }
		Spec     map[string]any
	}
	if err := yaml.Unmarshal(raw, &obj); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, errs := DesiredChildren("ctk-productcatalogmanagement", obj.Spec); len(errs) > 0 {
			b.Fatal(errs)
		}
	}
}
