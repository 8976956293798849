package oda

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/odaflow/odaflow/api"
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
		reported := map[api.FieldError]bool{}
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

// fuzzSeedSpecs adds the example Components' specs (a copy of the Canvas's
// v1 example and the test fixture) to a fuzz corpus, as JSON.
func fuzzSeedSpecs(f *testing.F, add func(spec []byte)) {
	for _, file := range []string{
		"testdata/component-productcatalog-v1.yaml",
		"../tests/fixtures/productcatalog-v1.yaml",
	} {
		raw, err := os.ReadFile(file)
		if err != nil {
			f.Fatalf("fuzz seed %s: %v", file, err)
		}
		var obj struct {
			Spec json.RawMessage `json:"spec"`
		}
		if yaml.Unmarshal(raw, &obj) == nil && len(obj.Spec) > 0 {
			add(obj.Spec)
		}
	}
}

// canonicalSpec writes the children DesiredChildren produced back as a
// Component spec: one API item per child, with its one specification
// element, gateway policies under gatewayConfiguration again. It is what
// normalisation means: the flat form of the same declaration.
func canonicalSpec(d Desired) map[string]any {
	spec := map[string]any{}
	segment := func(name string) map[string]any {
		if s, ok := spec[name].(map[string]any); ok {
			return s
		}
		s := map[string]any{}
		spec[name] = s
		return s
	}
	appendTo := func(seg map[string]any, key string, v any) {
		l, _ := seg[key].([]any)
		seg[key] = append(l, v)
	}
	for _, c := range d.Children {
		item := copyMap(c.Spec)
		switch c.Kind {
		case KindExposedAPI.Name, KindDependentAPI.Name:
			delete(item, "segment")
			if s, ok := item["specification"]; ok {
				item["specification"] = []any{s}
			}
			key := "dependentAPIs"
			if c.Kind == KindExposedAPI.Name {
				key = "exposedAPIs"
				gw := map[string]any{}
				for _, k := range gatewayKeys {
					if v, ok := item[k]; ok {
						gw[k] = v
						delete(item, k)
					}
				}
				if len(gw) > 0 {
					item["gatewayConfiguration"] = gw
				}
			}
			appendTo(segment(string(c.Segment)), key, item)
		case KindIdentityConfig.Name:
			sec := segment(string(SegmentSecurity))
			sec["canvasSystemRole"] = c.Spec["canvasSystemRole"]
			if r, ok := c.Spec["componentRole"]; ok {
				sec["componentRole"] = r
			}
		case KindSecretsManagement.Name:
			segment(string(SegmentSecurity))["secretsManagement"] = copyMap(c.Spec)
		case KindPublishedNotification.Name:
			appendTo(segment("eventNotification"), "publishedEvents", item)
		case KindSubscribedNotification.Name:
			appendTo(segment("eventNotification"), "subscribedEvents", item)
		}
	}
	return spec
}

// FuzzNormalizeIdempotent: normalising the normalised form changes nothing.
// A spec DesiredChildren accepts, written back in its flat form, must be
// accepted again and give exactly the same children: a Component rewritten
// by a tool (or converted) in canonical form keeps its children, names and
// specs, so no update deletes and recreates an ExposedAPI.
func FuzzNormalizeIdempotent(f *testing.F) {
	fuzzSeedSpecs(f, func(spec []byte) { f.Add("ctk-productcatalogmanagement", spec) })
	for _, seed := range []string{
		`{"securityFunction":{"canvasSystemRole":"Admin","componentRole":[{"name":"r"}]}}`,
		`{"securityFunction":{"canvasSystemRole":"Admin","exposedAPIs":[{"name":"partyrole","apiType":"openapi","implementation":"s","path":"/p","port":"8080","specification":[{"url":"https://x/TMF669_v4.0.0.json"}]}]}}`,
		`{"securityFunction":{"canvasSystemRole":"Admin"},"coreFunction":{"exposedAPIs":[{"name":"a","apiType":"openapi","implementation":"s","path":"/p","port":80,"version":"4.1","gatewayConfiguration":{"rateLimit":{"enabled":true},"CORS":null},"hostname":"h","specification":[{"url":"u1","path":"/q"},{"version":5,"port":81}]}]}}`,
		`{"securityFunction":{"canvasSystemRole":"Admin"},"coreFunction":{"dependentAPIs":[{"name":"d","required":true,"selector":{"namespace":"n"},"specification":"https://x/v3/d.json"}]}}`,
		`{"securityFunction":{"canvasSystemRole":"Admin","secretsManagement":{"type":"sideCar","podSelector":{"name":"*"}}},"eventNotification":{"publishedEvents":[{"name":"E","hub":"/h"}],"subscribedEvents":[{"name":"s"}]}}`,
	} {
		f.Add("ctk", []byte(seed))
	}
	f.Fuzz(func(t *testing.T, component string, data []byte) {
		var spec map[string]any
		if err := json.Unmarshal(data, &spec); err != nil {
			return
		}
		d, errs := DesiredChildren(component, spec)
		if len(errs) > 0 {
			return
		}
		canon := canonicalSpec(d)
		d2, errs2 := DesiredChildren(component, canon)
		if len(errs2) > 0 {
			t.Fatalf("the normalised spec is refused: %v\nspec  %s\ncanon %s", errs2, data, mustJSON(t, canon))
		}
		if !reflect.DeepEqual(d, d2) {
			t.Fatalf("normalising twice changes the children:\nonce  %s\ntwice %s", mustJSON(t, d), mustJSON(t, d2))
		}
		// The function is pure: the same input gives the same answer.
		d3, _ := DesiredChildren(component, spec)
		if !reflect.DeepEqual(d, d3) {
			t.Fatal("DesiredChildren is not deterministic")
		}
	})
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%v (not JSON: %v)", v, err)
	}
	return string(b)
}

// FuzzWorkflowID: the workflow ID of a resource is deterministic, readable
// back, and injective over valid Kubernetes names, so two resources never
// share a workflow.
func FuzzWorkflowID(f *testing.F) {
	f.Add("Component", "components", "ctk-productcatalogmanagement", "ExposedAPI", "components", "ctk-productcatalogmanagement-productcatalogmanagement-v4")
	f.Add("ExposedAPI", "a", "b-c", "ExposedAPI", "a-b", "c")
	f.Add("DependentAPI", "ns", "x.y", "DependentAPI", "ns.x", "y")
	f.Fuzz(func(t *testing.T, k1, ns1, n1, k2, ns2, n2 string) {
		id1 := WorkflowID(k1, ns1, n1)
		if id1 != WorkflowID(k1, ns1, n1) {
			t.Fatal("WorkflowID is not deterministic")
		}
		valid := func(kind, ns, name string) bool {
			_, known := KindByName(kind)
			return known && len(validation.IsDNS1123Label(ns)) == 0 && len(validation.IsDNS1123Subdomain(name)) == 0
		}
		if !valid(k1, ns1, n1) {
			if _, err := ParseWorkflowID(id1); err == nil && strings.Count(id1, "/") != 2 {
				t.Fatalf("ParseWorkflowID accepted %q", id1)
			}
			return
		}
		ref, err := ParseWorkflowID(id1)
		if err != nil {
			t.Fatalf("ParseWorkflowID(%q): %v", id1, err)
		}
		if ref != (Ref{Kind: k1, Namespace: ns1, Name: n1}) || ref.String() != id1 {
			t.Fatalf("ParseWorkflowID(%q) = %+v", id1, ref)
		}
		if valid(k2, ns2, n2) && (k1 != k2 || ns1 != ns2 || n1 != n2) && WorkflowID(k2, ns2, n2) == id1 {
			t.Fatalf("two resources share workflow ID %q", id1)
		}
	})
}

// statusRank orders the Canvas's in-progress states along its single pass.
var statusRank = map[string]int{StatusCompCon: 0, StatusIDConfOp: 1, StatusSecretMan: 2, StatusDepAPI: 3, StatusComplete: 4}

// statusFromBytes builds a ComponentStatus from fuzz bytes: per segment a
// few exposed and dependent entries with or without url and readiness, an
// identity, a secrets store and a failure, each present or not.
func statusFromBytes(data []byte) ComponentStatus {
	next := func() byte {
		if len(data) == 0 {
			return 0
		}
		b := data[0]
		data = data[1:]
		return b
	}
	entries := func(seg Segment, dependent bool) []APIEntry {
		n := int(next() % 4)
		out := make([]APIEntry, 0, n)
		for i := range n {
			b := next()
			e := APIEntry{Name: fmt.Sprintf("%s-%v-%d", seg, dependent, i), UID: fmt.Sprint(b), Ready: b&1 == 1}
			if b&2 == 2 {
				e.URL = "https://lb/" + string(seg) + fmt.Sprint(i)
			}
			if b&4 == 4 {
				e.DeveloperUI = "/ui"
			}
			out = append(out, e)
		}
		return out
	}
	s := ComponentStatus{APIs: map[Segment][]APIEntry{}, DependentAPIs: map[Segment][]APIEntry{}}
	for _, seg := range Segments {
		s.APIs[seg] = entries(seg, false)
		s.DependentAPIs[seg] = entries(seg, true)
	}
	switch next() % 4 {
	case 1:
		s.Identity = &IdentityStatus{IdentityProvider: IdentityNotSet}
	case 2:
		s.Identity = &IdentityStatus{IdentityProvider: "Keycloak", ListenerRegistered: true}
	case 3:
		s.Identity = &IdentityStatus{}
	}
	switch next() % 3 {
	case 1:
		s.SecretsManagement = &SecretsEntry{Name: "sm"}
	case 2:
		s.SecretsManagement = &SecretsEntry{Name: "sm", Ready: true}
		s.SecretsManagementSpec = map[string]any{"type": "sideCar"}
	}
	if next()%5 == 0 {
		s.Failure = &Failure{Reason: "InvalidSpec", Message: "bad"}
	}
	return s
}

// FuzzStatusSummary: the status summary never panics, is always one of the
// contract's deployment_status strings, and is monotone: completing any one
// more piece (an API, the identity, the secrets store) never moves a
// Component back along the Canvas's pass, and a failure always wins.
func FuzzStatusSummary(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{1, 3, 0, 0, 0, 0, 0, 2, 0, 1})
	f.Add([]byte{3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 2, 2, 1})
	f.Add([]byte{1, 1, 1, 1, 1, 1, 1, 1, 2, 1, 4})
	f.Fuzz(func(t *testing.T, data []byte) {
		s := statusFromBytes(data)
		st := DeploymentStatus(s)
		rank, known := statusRank[st]
		if st != StatusFailed && !known {
			t.Fatalf("deployment_status %q is not one of the contract's", st)
		}
		if (s.Failure != nil) != (st == StatusFailed) {
			t.Fatalf("failure %v but deployment_status %s", s.Failure, st)
		}
		sum := Summary(s)
		if sum["deployment_status"] != st {
			t.Fatalf("summary says %v, DeploymentStatus %s", sum["deployment_status"], st)
		}
		for _, seg := range Segments {
			for _, e := range s.APIs[seg] {
				if e.URL != "" && !strings.Contains(sum[seg.short()+"APIsummary"].(string), e.URL) {
					t.Fatalf("%s summary %q lacks %s", seg, sum[seg.short()+"APIsummary"], e.URL)
				}
			}
		}
		cond := ReadyCondition(s, 3, nil, "now")
		if (cond.Status == "True") != (st == StatusComplete) || cond.Reason == "" || cond.Message == "" {
			t.Fatalf("condition %+v for %s", cond, st)
		}
		if _, err := json.Marshal(StatusObject(s, cond)); err != nil {
			t.Fatalf("status does not encode: %v", err)
		}
		complete := s.Failure == nil && allComplete(s.APIs) && allComplete(s.DependentAPIs) &&
			s.Identity != nil && s.Identity.IdentityProvider != "" && s.Identity.IdentityProvider != IdentityNotSet &&
			(s.SecretsManagement == nil || s.SecretsManagement.Ready)
		if complete != (st == StatusComplete) {
			t.Fatalf("Complete is %s, but every piece complete is %v", st, complete)
		}
		if s.Failure != nil {
			return
		}
		// Complete one more piece at a time; the rank never drops.
		check := func(what string, better ComponentStatus) {
			t.Helper()
			if r := statusRank[DeploymentStatus(better)]; r < rank {
				t.Fatalf("completing %s moved %s back to %s", what, st, DeploymentStatus(better))
			}
		}
		for _, seg := range Segments {
			for _, lists := range []map[Segment][]APIEntry{s.APIs, s.DependentAPIs} {
				for i := range lists[seg] {
					orig := lists[seg][i]
					lists[seg][i].URL, lists[seg][i].Ready = "https://lb/done", true
					check("an API", s)
					lists[seg][i] = orig
				}
			}
		}
		identity := s.Identity
		s.Identity = &IdentityStatus{IdentityProvider: "Keycloak"}
		check("the identity", s)
		s.Identity = identity
		if s.SecretsManagement != nil {
			sm := *s.SecretsManagement
			s.SecretsManagement = &SecretsEntry{Name: sm.Name, Ready: true}
			check("the secrets store", s)
			s.SecretsManagement = &sm
		}
		s.Failure = &Failure{Reason: "X", Message: "y"}
		if DeploymentStatus(s) != StatusFailed {
			t.Fatal("a failure does not make the Component Failed")
		}
	})
}
