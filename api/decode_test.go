package api

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

// obj reads a YAML object as the apiserver hands it over (numbers float64).
func obj(t *testing.T, doc string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(strings.ReplaceAll(doc, "\t", "  ")), &m); err != nil {
		t.Fatalf("bad test YAML: %v", err)
	}
	return m
}

func ptr[T any](v T) *T { return &v }

// TestDecodeReportsEveryProblemWithItsPath: each bad field is one problem
// named by its full path, all of them together, in declaration order; the
// good fields around them are still read.
func TestDecodeReportsEveryProblemWithItsPath(t *testing.T) {
	spec := obj(t, `
coreFunction:
	exposedAPIs:
	- name: api
		port: abc
		required: "yes"
		specification: [{url: {href: x}}, 7, {version: 4}]
	- just-a-name
	- null
	dependentAPIs: party
managementFunction: [a]
securityFunction:
	canvasSystemRole: Admin
	componentRole: admin
eventNotification:
	publishedEvents: [{name: [a]}, {name: created}]
`)
	got, errs := Decode[ComponentSpec](spec, "spec")
	want := FieldErrors{
		{Path: "spec.coreFunction.exposedAPIs[0].required", Message: "must be a boolean, got string"},
		{Path: "spec.coreFunction.exposedAPIs[0].specification[0].url", Message: "must be a string, got object"},
		{Path: "spec.coreFunction.exposedAPIs[0].specification[1]", Message: "must be an object or a URL string, got number"},
		{Path: "spec.coreFunction.exposedAPIs[0].port", Message: `must be an integer, got "abc"`},
		{Path: "spec.coreFunction.exposedAPIs[1]", Message: "must be an object, got string"},
		{Path: "spec.coreFunction.exposedAPIs[2]", Message: "must be an object, got null"},
		{Path: "spec.coreFunction.dependentAPIs", Message: "must be a list, got string"},
		{Path: "spec.managementFunction", Message: "must be an object, got list"},
		{Path: "spec.securityFunction.componentRole", Message: "must be a list, got string"},
		{Path: "spec.eventNotification.publishedEvents[0].name", Message: "must be a string, got list"},
	}
	if diff := cmp.Diff(want, errs); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
	// What could be read was read.
	api := got.CoreFunction.ExposedAPIs[0]
	if api.Name != "api" || api.Port != nil || len(api.Specification) != 2 || api.Specification[1].Version != "4" {
		t.Errorf("first API = %+v", api)
	}
	if got.SecurityFunction.CanvasSystemRole != "Admin" || got.ManagementFunction != nil {
		t.Errorf("spec = %+v", got)
	}
	if ev := got.EventNotification.PublishedEvents[1]; ev.Name != "created" || ev.Raw["name"] != "created" {
		t.Errorf("second event = %+v", ev)
	}
}

// TestDecodeLeniency pins the shapes the Canvas operators accept and Helm
// charts render: each decodes without a problem to the value shown.
func TestDecodeLeniency(t *testing.T) {
	cases := map[string]struct {
		doc  string
		want ExposedAPISpec
	}{
		"port as a decimal string": {doc: `port: "8080"`, want: ExposedAPISpec{Port: ptr[int64](8080)}},
		"port with spaces":         {doc: `port: " 8080 "`, want: ExposedAPISpec{Port: ptr[int64](8080)}},
		"empty port is unset":      {doc: `port: ""`, want: ExposedAPISpec{}},
		"null fields are unset":    {doc: `{name: null, port: null, rateLimit: null, CORS: null}`, want: ExposedAPISpec{}},
		"unknown fields ignored":   {doc: `{name: a, colour: blue, rateLimit: {enabled: false, shape: round}}`, want: ExposedAPISpec{Name: "a", RateLimit: &RateLimit{}}},
		"disabled block not read": {
			doc:  `rateLimit: {enabled: false, limit: lots, interval: [x]}`,
			want: ExposedAPISpec{RateLimit: &RateLimit{}},
		},
		"rate limit as a string": {
			doc:  `rateLimit: {enabled: true, identifier: IP, limit: "100", interval: pm}`,
			want: ExposedAPISpec{RateLimit: &RateLimit{Enabled: true, Identifier: "IP", Limit: 100, Interval: "pm"}},
		},
		"empty rate limit is unset": {
			doc:  `rateLimit: {enabled: true, identifier: "", limit: "", interval: ""}`,
			want: ExposedAPISpec{RateLimit: &RateLimit{Enabled: true}},
		},
		"empty quota is none":       {doc: `quota: {identifier: "", limit: ""}`, want: ExposedAPISpec{}},
		"half-empty quota is none":  {doc: `quota: {identifier: 5, limit: ""}`, want: ExposedAPISpec{}},
		"quota with a string limit": {doc: `quota: {identifier: client, limit: "7"}`, want: ExposedAPISpec{Quota: &Quota{Identifier: "client", Limit: 7}}},
		"empty template":            {doc: `template: ""`, want: ExposedAPISpec{}},
		"CORS lists as strings": {
			doc: `CORS: {enabled: true, allowOrigins: " a, ,b ", handlePreflightRequests: {allowMethods: [GET, " PUT "], maxAge: "60", enabled: false}}`,
			want: ExposedAPISpec{CORS: &CORS{Enabled: true, AllowOrigins: CommaList{"a", "b"}, HandlePreflightRequests: &Preflight{
				AllowMethods: CommaList{"GET", "PUT"}, Enabled: ptr(false), MaxAge: ptr[int64](60),
			}}},
		},
		"empty CORS lists are unset": {
			doc:  `CORS: {enabled: true, allowOrigins: "", handlePreflightRequests: {allowHeaders: []}}`,
			want: ExposedAPISpec{CORS: &CORS{Enabled: true, HandlePreflightRequests: &Preflight{}}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, errs := Decode[ExposedAPISpec](obj(t, tc.doc), "spec")
			if len(errs) > 0 {
				t.Fatalf("problems: %v", errs)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("decoded (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDecodeTextTakesNumbers: a Component's versions and names may be
// written unquoted; a plain string field still refuses a number.
func TestDecodeTextTakesNumbers(t *testing.T) {
	c, errs := Decode[ComponentSpec](obj(t, `coreFunction: {dependentAPIs: [{name: 620, specification: [{version: 4}, {version: 4.1}], id: 7}]}`), "spec")
	if len(errs) > 0 {
		t.Fatalf("problems: %v", errs)
	}
	d := c.CoreFunction.DependentAPIs[0]
	if d.Name != "620" || d.ID != "7" || d.Specification[0].Version != "4" || d.Specification[1].Version != "4.1" {
		t.Errorf("decoded %+v", d)
	}
	_, errs = Decode[ExposedAPISpec](obj(t, `name: 5`), "spec")
	if diff := cmp.Diff(FieldErrors{{Path: "spec.name", Message: "must be a string, got number"}}, errs); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
}

// TestDecodeSpecificationShapes: the v1 list, and the older single object
// and plain URL string, all read as a list of elements.
func TestDecodeSpecificationShapes(t *testing.T) {
	cases := map[string]struct {
		doc  string
		want Specifications[DependentSpecification]
	}{
		"list":            {doc: `specification: [{url: u}, v]`, want: Specifications[DependentSpecification]{{SpecificationElement: SpecificationElement{URL: "u"}}, {SpecificationElement: SpecificationElement{URL: "v"}}}},
		"object":          {doc: `specification: {url: u, selector: {zone: z}}`, want: Specifications[DependentSpecification]{{SpecificationElement: SpecificationElement{URL: "u"}, Selector: map[string]any{"zone": "z"}}}},
		"string":          {doc: `specification: u`, want: Specifications[DependentSpecification]{{SpecificationElement: SpecificationElement{URL: "u"}}}},
		"empty list":      {doc: `specification: []`, want: Specifications[DependentSpecification]{}},
		"absent is unset": {doc: `name: x`, want: nil},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, errs := Decode[DependentAPIDeclaration](obj(t, tc.doc), "item")
			if len(errs) > 0 {
				t.Fatalf("problems: %v", errs)
			}
			if diff := cmp.Diff(tc.want, got.Specification); diff != "" {
				t.Errorf("specification (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDecodeExposedAPIProblems: the ExposedAPI's own type problems, with
// the messages gateway.ParseSpec returns.
func TestDecodeExposedAPIProblems(t *testing.T) {
	_, errs := Decode[ExposedAPISpec](obj(t, `
port: 80.5
rateLimit: {enabled: true, limit: "0"}
quota: {identifier: q, limit: -1}
CORS: {enabled: "yes"}
apiKeyVerification: {enabled: true, location: [header]}
OASValidation: {requestEnabled: 1}
basicAuth: true
`), "spec")
	want := FieldErrors{
		{Path: "spec.basicAuth", Message: "must be an object, got boolean"},
		{Path: "spec.port", Message: "must be an integer, got 80.5"},
		{Path: "spec.rateLimit.limit", Message: `must be a positive integer, got "0"`},
		{Path: "spec.apiKeyVerification.location", Message: "must be a string, got list"},
		{Path: "spec.CORS.enabled", Message: "must be a boolean, got string"},
		{Path: "spec.quota.limit", Message: "must be a positive integer, got -1"},
		{Path: "spec.OASValidation.requestEnabled", Message: "must be a boolean, got number"},
	}
	if diff := cmp.Diff(want, errs); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
}

// TestDecodeEveryKind decodes a valid object of each of the other kinds, as
// odaflow writes them.
func TestDecodeEveryKind(t *testing.T) {
	check := func(t *testing.T, errs FieldErrors, got, want any) {
		t.Helper()
		if len(errs) > 0 {
			t.Fatalf("problems: %v", errs)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("decoded (-want +got):\n%s", diff)
		}
	}
	t.Run("DependentAPI", func(t *testing.T) {
		got, errs := Decode[DependentAPISpec](obj(t, `{name: party, apiType: openapi, specification: {url: u}, selector: {zone: z}, segment: coreFunction}`), "spec")
		check(t, errs, got, DependentAPISpec{Name: "party", APIType: "openapi", Specification: map[string]any{"url": "u"}, Selector: &Selector{Zone: "z"}, Segment: "coreFunction"})
	})
	t.Run("IdentityConfig", func(t *testing.T) {
		got, errs := Decode[IdentityConfigSpec](obj(t, `{canvasSystemRole: Admin, componentRole: [{name: r}], partyRoleAPI: {implementation: s, path: /p, port: 8080}}`), "spec")
		check(t, errs, got, IdentityConfigSpec{CanvasSystemRole: "Admin", ComponentRole: []ComponentRole{{Name: "r"}}, PartyRoleAPI: &APIRef{Implementation: "s", Path: "/p", Port: ptr[int64](8080)}})
	})
	t.Run("SecretsManagement", func(t *testing.T) {
		got, errs := Decode[SecretsManagementSpec](obj(t, `{type: sideCar, sideCar: {port: "5000"}, podSelector: {namespace: ns, serviceaccount: sa}}`), "spec")
		check(t, errs, got, SecretsManagementSpec{Type: "sideCar", SideCar: &SideCar{Port: ptr[int64](5000)}, PodSelector: &PodSelector{Namespace: "ns", ServiceAccount: "sa"}})
	})
	t.Run("PublishedNotification", func(t *testing.T) {
		got, errs := Decode[PublishedNotificationSpec](obj(t, `{name: created, hub: /hub, port: 80, specification: [{url: u}]}`), "spec")
		check(t, errs, got, PublishedNotificationSpec{NotificationFields: NotificationFields{Name: "created", Port: ptr[int64](80), Specification: []NotificationSpecification{{URL: "u"}}}, Hub: "/hub"})
	})
	t.Run("SubscribedNotification", func(t *testing.T) {
		got, errs := Decode[SubscribedNotificationSpec](obj(t, `{name: created, callback: /cb, query: q}`), "spec")
		check(t, errs, got, SubscribedNotificationSpec{NotificationFields: NotificationFields{Name: "created"}, Callback: "/cb", Query: "q"})
	})
	t.Run("status", func(t *testing.T) {
		got, errs := Decode[ExposedAPIStatus](obj(t, `{implementation: {ready: true}, apiStatus: {url: "http://x/p", port: 80}}`), "status")
		check(t, errs, got, ExposedAPIStatus{Implementation: &ImplementationStatus{Ready: true}, APIStatus: &APIStatus{URL: "http://x/p", Port: ptr[int64](80)}})
	})
}

func TestDecodeJSON(t *testing.T) {
	if _, errs := DecodeJSON[ExposedAPISpec]([]byte(`[1]`), "spec"); errs.Error() != "spec: must be an object, got list" {
		t.Errorf("list: %v", errs)
	}
	if _, errs := DecodeJSON[ExposedAPISpec]([]byte(`{`), "spec"); !strings.HasPrefix(errs.Error(), "spec: is not valid JSON") {
		t.Errorf("bad JSON: %v", errs)
	}
	got, errs := DecodeJSON[ExposedAPISpec]([]byte(`{"name":"a","port":8080}`), "spec")
	if len(errs) > 0 || got.Name != "a" || *got.Port != 8080 {
		t.Errorf("got %+v, %v", got, errs)
	}
	if got, errs := Decode[ExposedAPISpec](nil, "spec"); len(errs) > 0 || got.Name != "" {
		t.Errorf("nil object: %+v, %v", got, errs)
	}
}

func TestFieldErrors(t *testing.T) {
	errs := FieldErrors{{Path: "a", Message: "x"}, {Path: "b", Message: "y"}, {Path: "a", Message: "x"}}
	if got := errs.Unique().Error(); got != "a: x; b: y" {
		t.Errorf("Unique().Error() = %q", got)
	}
	if !errs.At("b") || errs.At("c") {
		t.Error("At does not find exactly the recorded paths")
	}
	if got := (FieldErrors{}).Error(); got != "" {
		t.Errorf("empty Error() = %q", got)
	}
	for v, want := range map[any]string{"s": `"s"`, 4.0: "4", int64(-1): "-1", true: "boolean"} {
		if got := Describe(v); got != want {
			t.Errorf("Describe(%v) = %q, want %q", v, got, want)
		}
	}
	for _, tc := range []struct {
		v    any
		want int64
		ok   bool
	}{
		{int64(3), 3, true}, {3.0, 3, true}, {json.Number("7"), 7, true}, {json.Number("7.5"), 0, false}, {" 12 ", 12, true}, {3.5, 0, false}, {1e300, 0, false}, {"x", 0, false}, {true, 0, false},
	} {
		if n, ok := ToInt(tc.v); n != tc.want || ok != tc.ok {
			t.Errorf("ToInt(%v) = %d, %v", tc.v, n, ok)
		}
	}
}

// DecodeJSON reads a JSON object into a T, as Decode does; data that is not
// a JSON object is one problem at path.
func DecodeJSON[T any](data []byte, path string) (T, FieldErrors) {
	var obj any
	if err := json.Unmarshal(data, &obj); err != nil {
		var zero T
		return zero, FieldErrors{{Path: path, Message: "is not valid JSON: " + err.Error()}}
	}
	m, ok := obj.(map[string]any)
	if !ok {
		var zero T
		return zero, FieldErrors{{Path: path, Message: "must be an object, got " + TypeName(obj)}}
	}
	return Decode[T](m, path)
}
