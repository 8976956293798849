package oda

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"
)

// FuzzDesiredChildren feeds arbitrary JSON specs to DesiredChildren, as a
// Component's spec reaches it through Temporal. It must never panic; when it
// reports no error, every child must be something the API server accepts.
func FuzzDesiredChildren(f *testing.F) {
	if raw, err := os.ReadFile("testdata/component-productcatalog-v1.yaml"); err == nil {
		var obj struct {
			Spec json.RawMessage `json:"spec"`
		}
		if yaml.Unmarshal(raw, &obj) == nil {
			f.Add("ctk-productcatalogmanagement", []byte(obj.Spec))
		}
	}
	for _, seed := range []string{
		`{}`,
		`null`,
		`{"securityFunction":{"canvasSystemRole":"Admin"}}`,
		`{"securityFunction":{"canvasSystemRole":"Admin","secretsManagement":{"type":"sideCar","podSelector":{"name":"*"}}}}`,
		`{"securityFunction":{"canvasSystemRole":"Admin"},"coreFunction":{"exposedAPIs":[{"name":"a","apiType":"openapi","implementation":"s","path":"/p","port":80,"specification":[{"url":"https://x/a-v4.0.json"},{"version":5}]}]}}`,
		`{"securityFunction":{"canvasSystemRole":"Admin"},"coreFunction":{"dependentAPIs":[{"name":"d","specification":"https://x/v3/d.json"}]}}`,
		`{"securityFunction":{"canvasSystemRole":"Admin"},"eventNotification":{"publishedEvents":[{"name":"e"}],"subscribedEvents":[{"name":"E"}]}}`,
		`{"coreFunction":{"exposedAPIs":[{"name":"a","port":1e300,"specification":[null,3,"u",{"version":"v4.x_y"}]}]}}`,
		`{"coreFunction":[],"managementFunction":"x","securityFunction":{"canvasSystemRole":{"a":1}}}`,
	} {
		f.Add("ctk", []byte(seed))
	}
	f.Fuzz(func(t *testing.T, component string, data []byte) {
		var spec map[string]any
		if err := json.Unmarshal(data, &spec); err != nil {
			return
		}
		d, errs := DesiredChildren(component, spec)
		reported := map[FieldError]bool{}
		for _, e := range errs {
			if e.Path == "" || e.Message == "" {
				t.Fatalf("error without path or message: %#v", e)
			}
			if reported[e] {
				t.Fatalf("error reported twice: %v", e)
			}
			reported[e] = true
		}
		if len(errs) > 0 {
			return
		}
		seen := map[string]bool{}
		for _, c := range d.Children {
			if msgs := validation.IsDNS1123Subdomain(c.Name); len(msgs) > 0 {
				t.Fatalf("no error, but child %s %q is not a valid name: %s", c.Kind, c.Name, strings.Join(msgs, ", "))
			}
			if _, ok := KindByName(c.Kind); !ok {
				t.Fatalf("child of unknown kind %q", c.Kind)
			}
			key := c.Kind + "/" + c.Name
			if seen[key] {
				t.Fatalf("no error, but two children %s", key)
			}
			seen[key] = true
			if c.Spec == nil {
				t.Fatalf("child %s has no spec", key)
			}
			if c.Kind == KindExposedAPI.Name {
				for _, k := range []string{"name", "apiType", "implementation", "path", "port"} {
					if _, ok := c.Spec[k]; !ok {
						t.Fatalf("no error, but ExposedAPI %q lacks the required %s", c.Name, k)
					}
				}
			}
		}
		if d.CanvasSystemRole == "" {
			t.Fatal("no error, but no canvasSystemRole")
		}
		// The children must survive the JSON round trip to the activity.
		if _, err := json.Marshal(d); err != nil {
			t.Fatalf("children do not encode: %v", err)
		}
	})
}

// FuzzChildName checks that ChildName is lower-case and made of its parts.
func FuzzChildName(f *testing.F) {
	f.Add("ctk-productcatalogmanagement", "productcatalogmanagement", "v4")
	f.Add("ctk", "Metrics", "")
	f.Add("CTK", "party_role", "V5")
	f.Add("ctk", "catálogo", "v1")
	f.Fuzz(func(t *testing.T, component, api, version string) {
		got := ChildName(component, api, version)
		if got != strings.ToLower(got) {
			t.Fatalf("ChildName(%q, %q, %q) = %q is not lower-case", component, api, version, got)
		}
		want := component + "-" + api
		if version != "" {
			want += "-" + version
		}
		if got != strings.ToLower(want) {
			t.Fatalf("ChildName(%q, %q, %q) = %q, want %q lower-cased", component, api, version, got, want)
		}
		// A valid component and API name with a major version always make a
		// valid name when short enough.
		if validation.IsDNS1123Label(component) == nil && validation.IsDNS1123Label(api) == nil &&
			majorVersion(version) == version && len(got) <= validation.DNS1123SubdomainMaxLength &&
			(version == "" || validation.IsDNS1123Label(version) == nil) {
			if msgs := validation.IsDNS1123Subdomain(got); len(msgs) > 0 {
				t.Fatalf("ChildName(%q, %q, %q) = %q is invalid: %v", component, api, version, got, msgs)
			}
		}
	})
}
