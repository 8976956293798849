package api

import (
	"encoding/json"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// FuzzDecodeComponent feeds arbitrary JSON to the decoder, as a Component
// or an ExposedAPI spec. It must never panic, must give the same answer
// twice (workflows call it), and every problem must name a field that is
// present in the input.
func FuzzDecodeComponent(f *testing.F) {
	for _, file := range []string{"../oda/testdata/component-productcatalog-v1.yaml", "../tests/fixtures/productcatalog-v1.yaml"} {
		raw, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		var obj struct {
			Spec json.RawMessage `json:"spec"`
		}
		if err := yaml.Unmarshal(raw, &obj); err != nil {
			f.Fatal(err)
		}
		f.Add([]byte(obj.Spec))
	}
	for _, seed := range []string{
		`{}`,
		`{"coreFunction":{"exposedAPIs":[{"name":"a","port":"80","specification":["u",{"version":4},null,[1]]}]}}`,
		`{"securityFunction":{"canvasSystemRole":5,"componentRole":"x","secretsManagement":[]},"eventNotification":{"publishedEvents":[null,{"name":{}}]}}`,
		`{"name":"a","port":1e300,"rateLimit":{"enabled":true,"limit":"0","interval":[]},"quota":{"identifier":"q","limit":"x"}}`,
		`{"CORS":{"enabled":true,"allowOrigins":[1,null],"handlePreflightRequests":{"maxAge":"soon","enabled":"no"}}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var in map[string]any
		if json.Unmarshal(data, &in) != nil {
			return
		}
		c1, e1 := Decode[ComponentSpec](in, "spec")
		c2, e2 := Decode[ComponentSpec](in, "spec")
		if !reflect.DeepEqual(c1, c2) || !reflect.DeepEqual(e1, e2) {
			t.Fatalf("two decodes differ:\n%+v %v\n%+v %v", c1, e1, c2, e2)
		}
		_, ex := Decode[ExposedAPISpec](in, "spec")
		for _, e := range append(e1, ex...) {
			if e.Message == "" {
				t.Fatalf("problem without a message: %#v", e)
			}
			if !present(in, e.Path) {
				t.Fatalf("problem at %s, which the input does not hold: %v", e.Path, e)
			}
		}
	})
}

// present reports whether path ("spec.a[0].b", starting with spec) names a
// value of obj, null included.
func present(obj map[string]any, path string) bool {
	rest, ok := strings.CutPrefix(path, "spec")
	if !ok {
		return false
	}
	var cur any = obj
	for rest != "" {
		switch rest[0] {
		case '.':
			end := strings.IndexAny(rest[1:], ".[")
			if end < 0 {
				end = len(rest) - 1
			}
			key := rest[1 : end+1]
			m, isMap := cur.(map[string]any)
			if !isMap {
				return false
			}
			v, has := m[key]
			if !has {
				return false
			}
			cur, rest = v, rest[end+1:]
		case '[':
			end := strings.IndexByte(rest, ']')
			i, err := strconv.Atoi(rest[1:max(end, 1)])
			l, isList := cur.([]any)
			if end < 0 || err != nil || !isList || i < 0 || i >= len(l) {
				return false
			}
			cur, rest = l[i], rest[end+1:]
		default:
			return false
		}
	}
	return true
}
