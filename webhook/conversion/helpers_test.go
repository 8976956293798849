package conversion

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"
)

const testdata = "../testdata"

// fixture loads webhook/testdata/component-productcatalog-<version>.yaml. The
// v1beta3, v1beta4 and v1 files are the Canvas examples rendered by
// webhook/testdata/render; the v1beta2 one is hand-made.
func fixture(t testing.TB, apiVersion string) map[string]any {
	t.Helper()
	name := "component-productcatalog-" + filepath.Base(apiVersion) + ".yaml"
	data, err := os.ReadFile(filepath.Join(testdata, name))
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	if err := yaml.Unmarshal(data, &obj); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return obj
}

// fromYAML parses a test object written inline.
func fromYAML(t testing.TB, doc string) map[string]any {
	t.Helper()
	var obj map[string]any
	if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
		t.Fatalf("bad test YAML: %v\n%s", err, doc)
	}
	return obj
}

// canonical passes obj through JSON so that numbers compare equal whatever Go
// type produced them (the conversion writes int64 ports, decoders float64).
func canonical(t testing.TB, obj map[string]any) map[string]any {
	t.Helper()
	data, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// withoutAnnotation returns a canonical copy of obj without the
// webhookconverted annotation (and without an annotations map left empty).
func withoutAnnotation(t testing.TB, obj map[string]any) map[string]any {
	t.Helper()
	out := canonical(t, obj)
	if meta, ok := out["metadata"].(map[string]any); ok {
		if ann, ok := meta["annotations"].(map[string]any); ok {
			delete(ann, AnnotationConverted)
			if len(ann) == 0 {
				delete(meta, "annotations")
			}
		}
	}
	return out
}

// comparable removes the differences between the rendered Canvas examples
// that are not conversions, so that a converted object can be compared with
// the example of its target version:
//
//  1. the webhookconverted annotation: the v1beta3 and v1beta4 examples carry
//     a stale one ("From v1 to ..."), the v1 example none, and converted
//     objects get a new one (checked separately);
//  2. v1beta3 only: the example writes productcatalogmanagement's
//     specification as a plain string although the v1beta3 schema wants an
//     array (minItems 1); the conversion accepts it and always produces the
//     array, so the string is compared as a one-element array;
//  3. v1 only: the v1 example keeps implementation, path, port, ... at the API
//     root (allowed by the v1 CEL rule "at the API root OR in
//     specification[0]") while the section 1.9 mapping moves them into
//     specification[0]. Both sides are compared with specification[0]'s
//     fields lifted to the root (the element's value wins, as in the
//     operators); TestConvertV1Placement checks the placement itself.
func comparable(t testing.TB, obj map[string]any) map[string]any {
	t.Helper()
	out := withoutAnnotation(t, obj)
	spec, _ := out["spec"].(map[string]any)
	switch out["apiVersion"] {
	case V1beta3:
		forEachTestAPI(spec, exposedAPIs, func(api map[string]any) {
			if s, ok := api[specKey].(string); ok {
				api[specKey] = []any{s}
			}
		})
	case V1:
		lift := func(fields []string) func(map[string]any) {
			return func(api map[string]any) {
				list, _ := api[specKey].([]any)
				if len(list) == 0 {
					return
				}
				first, _ := list[0].(map[string]any)
				for _, f := range fields {
					if v, ok := first[f]; ok {
						api[f] = v
						delete(first, f)
					}
				}
			}
		}
		forEachTestAPI(spec, exposedAPIs, lift(exposedSpecFields))
		forEachTestAPI(spec, dependentAPIs, lift(dependentSpecFields))
	}
	return out
}

func forEachTestAPI(spec map[string]any, list string, fn func(api map[string]any)) {
	for _, segment := range segments {
		seg, _ := spec[segment].(map[string]any)
		apis, _ := seg[list].([]any)
		for _, api := range apis {
			if api, ok := api.(map[string]any); ok {
				fn(api)
			}
		}
	}
}

// lookup follows a path of object keys and array indexes through obj.
func lookup(t testing.TB, obj any, path ...any) any {
	t.Helper()
	cur := obj
	for _, p := range path {
		switch p := p.(type) {
		case string:
			m, ok := cur.(map[string]any)
			if !ok {
				t.Fatalf("lookup %v: %q: not an object: %#v", path, p, cur)
			}
			cur = m[p]
		case int:
			l, ok := cur.([]any)
			if !ok || p >= len(l) {
				t.Fatalf("lookup %v: [%d]: not an array that long: %#v", path, p, cur)
			}
			cur = l[p]
		}
	}
	return cur
}
