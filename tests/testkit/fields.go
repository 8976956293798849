package testkit

import (
	"sort"

	"github.com/odaflow/odaflow/oda"
)

// APIFields lists the field paths used by the ExposedAPIs and DependentAPIs
// of a Component as written (before any conversion): "exposedAPIs" or
// "dependentAPIs", then the path inside the API item, lists written as
// "[]" (dependentAPIs.specification[].url).
func APIFields(component map[string]any) []string {
	spec, _ := component["spec"].(map[string]any)
	set := map[string]bool{}
	for _, seg := range oda.Segments {
		f, _ := spec[string(seg)].(map[string]any)
		for _, key := range []string{"exposedAPIs", "dependentAPIs"} {
			list, _ := f[key].([]any)
			for _, item := range list {
				leaves(key, item, set)
			}
		}
	}
	out := make([]string, 0, len(set))
	for p := range set {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

func leaves(path string, v any, set map[string]bool) {
	switch t := v.(type) {
	case map[string]any:
		if len(t) == 0 {
			set[path] = true
		}
		for k, x := range t {
			leaves(path+"."+k, x, set)
		}
	case []any:
		if len(t) == 0 {
			set[path] = true
		}
		for _, x := range t {
			leaves(path+"[]", x, set)
		}
	default:
		set[path] = true
	}
}
