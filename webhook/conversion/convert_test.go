package conversion

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/odaflow/odaflow/api"
)

// Every example (the Canvas's v1beta3, v1beta4 and v1, the hand-made v1beta2)
// converted to every version equals the example of the target version, apart
// from the differences documented on comparable.
func TestConvertFixtures(t *testing.T) {
	for _, from := range versions {
		for _, to := range versions {
			t.Run(shortName(from)+"_to_"+shortName(to), func(t *testing.T) {
				in := fixture(t, from)
				before := canonical(t, in)

				got, err := Convert(in, to)
				if err != nil {
					t.Fatalf("Convert: %v", err)
				}

				if diff := cmp.Diff(before, canonical(t, in)); diff != "" {
					t.Errorf("Convert modified its input (-before +after):\n%s", diff)
				}
				if got["apiVersion"] != to {
					t.Errorf("apiVersion = %v, want %s", got["apiVersion"], to)
				}
				wantAnnotation := "Webhook converted From " + from + " to " + to
				gotAnnotation := annotation(got)
				if from == to {
					// Nothing converted: the object comes back as it was.
					wantAnnotation = annotation(in)
				}
				if gotAnnotation != wantAnnotation {
					t.Errorf("annotation %s = %q, want %q", AnnotationConverted, gotAnnotation, wantAnnotation)
				}
				if diff := cmp.Diff(comparable(t, fixture(t, to)), comparable(t, got)); diff != "" {
					t.Errorf("converted %s differs from the %s example (-want +got):\n%s", shortName(from), shortName(to), diff)
				}
			})
		}
	}
}

func annotation(obj map[string]any) string {
	meta, _ := obj["metadata"].(map[string]any)
	annotations, _ := meta["annotations"].(map[string]any)
	s, _ := annotations[AnnotationConverted].(string)
	return s
}

func shortName(apiVersion string) string {
	return strings.TrimPrefix(apiVersion, "oda.tmforum.org/")
}

// Upgrading to v1 and back gives the input again, apart from the annotation.
func TestConvertRoundTripThroughV1(t *testing.T) {
	tests := map[string]struct {
		in map[string]any
		// want is the input as it comes back; nil means the input itself.
		want map[string]any
	}{
		"v1beta3 example": {
			in: fixture(t, V1beta3),
			// The example's one string-valued specification comes back as
			// the one-element array the v1beta3 schema requires.
			want: func() map[string]any {
				want := fixture(t, V1beta3)
				api := lookup(t, want, "spec", "coreFunction", "exposedAPIs", 0).(map[string]any)
				api[specKey] = []any{api[specKey]}
				return want
			}(),
		},
		"v1beta4 example": {in: fixture(t, V1beta4)},
		"v1beta4 with everything the mapping moves": {in: fromYAML(t, richV1beta4)},
		"v1beta3 with gateway policies and events":  {in: fromYAML(t, richV1beta3)},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			from := tc.in["apiVersion"].(string)
			v1, err := Convert(tc.in, V1)
			if err != nil {
				t.Fatalf("to v1: %v", err)
			}
			back, err := Convert(v1, from)
			if err != nil {
				t.Fatalf("back to %s: %v", from, err)
			}
			want := tc.want
			if want == nil {
				want = tc.in
			}
			if diff := cmp.Diff(withoutAnnotation(t, want), withoutAnnotation(t, back)); diff != "" {
				t.Errorf("round trip (-want +got):\n%s", diff)
			}
		})
	}
}

// The section 1.9 placement in v1: per-version fields go into specification[0].
func TestConvertV1Placement(t *testing.T) {
	got, err := Convert(fixture(t, V1beta3), V1)
	if err != nil {
		t.Fatal(err)
	}
	got = canonical(t, got)
	tests := map[string]struct {
		path []any
		want any
	}{
		"exposed API fields move into specification[0]": {
			path: []any{"spec", "coreFunction", "exposedAPIs", 0},
			want: map[string]any{
				"name": "productcatalogmanagement",
				"specification": []any{map[string]any{
					"url":            "https://raw.githubusercontent.com/tmforum-apis/TMF620_ProductCatalog/master/TMF620-ProductCatalog-v4.0.0.swagger.json",
					"implementation": "ctk-prodcatapi",
					"apiType":        "openapi",
					"path":           "/ctk-productcatalogmanagement/tmf-api/productCatalogManagement/v4",
					"developerUI":    "/ctk-productcatalogmanagement/tmf-api/productCatalogManagement/v4/docs",
					"port":           float64(8080),
				}},
			},
		},
		"dependent API fields move into specification[0]": {
			path: []any{"spec", "coreFunction", "dependentAPIs", 0},
			want: map[string]any{
				"name": "downstreamproductcatalog",
				"specification": []any{map[string]any{
					"url":     "https://raw.githubusercontent.com/tmforum-apis/TMF620_ProductCatalog/master/TMF620-ProductCatalog-v4.0.0.swagger.json",
					"apiType": "openapi",
				}},
			},
		},
		"an API without specification keeps its fields at the root": {
			path: []any{"spec", "managementFunction", "exposedAPIs", 0},
			want: map[string]any{
				"name":           "metrics",
				"apiType":        "prometheus",
				"implementation": "ctk-productcatalogmanagement-sm",
				"path":           "/ctk-productcatalogmanagement/metrics",
				"port":           float64(4000),
			},
		},
		"controllerRole becomes canvasSystemRole": {
			path: []any{"spec", "securityFunction", "canvasSystemRole"},
			want: "Admin",
		},
		"metadata moves under componentMetadata": {
			path: []any{"spec", "componentMetadata", "id"},
			want: "TMFC001",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, lookup(t, got, tc.path...)); diff != "" {
				t.Errorf("%v (-want +got):\n%s", tc.path, diff)
			}
		})
	}
}

// Hand-made cases, mostly for v1beta2 and for what the examples do not cover.
func TestConvertCases(t *testing.T) {
	tests := map[string]struct {
		in   string
		to   string
		want string
	}{
		"v1beta2 to v1beta3: apitype renamed, specification wrapped, dependent spec stays a string": {
			in: `
apiVersion: oda.tmforum.org/v1beta2
kind: Component
metadata: {name: c}
spec:
  id: TMFC001
  coreFunction:
    exposedAPIs:
    - {name: a, apitype: openapi, specification: "https://x/a.json", implementation: s, path: /a, port: 8080}
    dependentAPIs:
    - {name: d, apitype: openapi, specification: "https://x/d.json"}
  managementFunction:
    exposedAPIs:
    - {name: metrics, apitype: prometheus, implementation: s, path: /m, port: 4000}
  securityFunction:
    controllerRole: Admin
`,
			to: V1beta3,
			want: `
apiVersion: oda.tmforum.org/v1beta3
kind: Component
metadata:
  name: c
  annotations: {webhookconverted: Webhook converted From oda.tmforum.org/v1beta2 to oda.tmforum.org/v1beta3}
spec:
  id: TMFC001
  coreFunction:
    exposedAPIs:
    - {name: a, apiType: openapi, specification: ["https://x/a.json"], implementation: s, path: /a, port: 8080}
    dependentAPIs:
    - {name: d, apiType: openapi, specification: "https://x/d.json"}
  managementFunction:
    exposedAPIs:
    - {name: metrics, apiType: prometheus, implementation: s, path: /m, port: 4000}
  securityFunction:
    controllerRole: Admin
`,
		},
		"v1beta2 to v1beta4: specification wrapped as objects, controllerRole becomes canvasSystemRole": {
			in: `
apiVersion: oda.tmforum.org/v1beta2
kind: Component
metadata: {name: c}
spec:
  id: TMFC001
  name: productcatalog
  maintainers: [{name: M}]
  coreFunction:
    exposedAPIs:
    - {name: a, apitype: openapi, specification: "https://x/a.json", implementation: s, path: /a, port: 8080}
    dependentAPIs:
    - {name: d, apitype: openapi, specification: "https://x/d.json"}
  securityFunction:
    controllerRole: Admin
    componentRole: [{name: r}]
`,
			to: V1beta4,
			want: `
apiVersion: oda.tmforum.org/v1beta4
kind: Component
metadata:
  name: c
  annotations: {webhookconverted: Webhook converted From oda.tmforum.org/v1beta2 to oda.tmforum.org/v1beta4}
spec:
  componentMetadata: {id: TMFC001, name: productcatalog, maintainers: [{name: M}]}
  coreFunction:
    exposedAPIs:
    - {name: a, apiType: openapi, specification: [{url: "https://x/a.json"}], implementation: s, path: /a, port: 8080}
    dependentAPIs:
    - {name: d, apiType: openapi, specification: [{url: "https://x/d.json"}]}
  securityFunction:
    canvasSystemRole: Admin
    componentRole: [{name: r}]
`,
		},
		"v1beta2 to v1: everything chained, fields end in specification[0]": {
			in: `
apiVersion: oda.tmforum.org/v1beta2
kind: Component
metadata: {name: c}
spec:
  coreFunction:
    exposedAPIs:
    - {name: a, apitype: openapi, specification: "https://x/a.json", implementation: s, path: /a, port: 8080, required: true}
    dependentAPIs:
    - {name: d, apitype: openapi, specification: "https://x/d.json", required: false}
  securityFunction:
    controllerRole: Admin
`,
			to: V1,
			want: `
apiVersion: oda.tmforum.org/v1
kind: Component
metadata:
  name: c
  annotations: {webhookconverted: Webhook converted From oda.tmforum.org/v1beta2 to oda.tmforum.org/v1}
spec:
  coreFunction:
    exposedAPIs:
    - name: a
      required: true
      specification: [{url: "https://x/a.json", apiType: openapi, implementation: s, path: /a, port: 8080}]
    dependentAPIs:
    - name: d
      required: false
      specification: [{url: "https://x/d.json", apiType: openapi}]
  securityFunction:
    canvasSystemRole: Admin
`,
		},
		"v1beta2 events: href split into implementation, hub or callback and port": {
			in: `
apiVersion: oda.tmforum.org/v1beta2
kind: Component
metadata: {name: c}
spec:
  eventNotification:
    publishedEvents:
    - {name: created, href: "http://ctk-events:8080/hub"}
    - {name: unparsable, href: "not a url"}
    subscribedEvents:
    - {name: changed, href: "https://ctk-listener/callback?type=x"}
`,
			to: V1beta3,
			want: `
apiVersion: oda.tmforum.org/v1beta3
kind: Component
metadata:
  name: c
  annotations: {webhookconverted: Webhook converted From oda.tmforum.org/v1beta2 to oda.tmforum.org/v1beta3}
spec:
  eventNotification:
    publishedEvents:
    - {name: created, description: "", apiType: openapi, developerUI: "", implementation: ctk-events, hub: /hub, port: 8080}
    - {name: unparsable, href: "not a url"}
    subscribedEvents:
    - {name: changed, description: "", apiType: openapi, developerUI: "", implementation: ctk-listener, callback: /callback, port: 443, query: type=x}
`,
		},
		"v1beta3 events to v1beta2: href rebuilt": {
			in: `
apiVersion: oda.tmforum.org/v1beta3
kind: Component
metadata: {name: c}
spec:
  eventNotification:
    publishedEvents:
    - {name: created, description: d, apiType: openapi, specification: "https://x/e.json", implementation: ctk-events, hub: /hub, port: 8080}
    - {name: nohost, hub: /hub}
    subscribedEvents:
    - {name: changed, implementation: ctk-listener, callback: cb, port: 9000, query: type=x}
`,
			to: V1beta2,
			want: `
apiVersion: oda.tmforum.org/v1beta2
kind: Component
metadata:
  name: c
  annotations: {webhookconverted: Webhook converted From oda.tmforum.org/v1beta3 to oda.tmforum.org/v1beta2}
spec:
  eventNotification:
    publishedEvents:
    - {name: created, href: "http://ctk-events:8080/hub"}
    - {name: nohost, hub: /hub}
    subscribedEvents:
    - {name: changed, href: "http://ctk-listener:9000/cb?type=x"}
`,
		},
		"v1beta3 to v1beta4: gateway policies move under gatewayConfiguration, event specification becomes objects": {
			in: `
apiVersion: oda.tmforum.org/v1beta3
kind: Component
metadata: {name: c}
spec:
  coreFunction:
    exposedAPIs:
    - name: a
      apiType: openapi
      specification: ["https://x/a.json", "https://x/a5.json"]
      implementation: s
      path: /a
      port: 8080
      rateLimit: {enabled: true, limit: "10"}
      template: https://x/t
  eventNotification:
    publishedEvents:
    - {name: created, specification: "https://x/e.json", implementation: ev, hub: /hub, port: 80}
    subscribedEvents:
    - {name: changed, specification: "", implementation: ev, callback: /cb, port: 80}
`,
			to: V1beta4,
			want: `
apiVersion: oda.tmforum.org/v1beta4
kind: Component
metadata:
  name: c
  annotations: {webhookconverted: Webhook converted From oda.tmforum.org/v1beta3 to oda.tmforum.org/v1beta4}
spec:
  coreFunction:
    exposedAPIs:
    - name: a
      apiType: openapi
      specification: [{url: "https://x/a.json"}, {url: "https://x/a5.json"}]
      implementation: s
      path: /a
      port: 8080
      gatewayConfiguration:
        rateLimit: {enabled: true, limit: "10"}
        template: https://x/t
  eventNotification:
    publishedEvents:
    - {name: created, specification: [{url: "https://x/e.json"}], implementation: ev, hub: /hub, port: 80}
    subscribedEvents:
    - {name: changed, implementation: ev, callback: /cb, port: 80}
`,
		},
		"v1beta4 to v1: several specifications keep the shared fields at the root; events always move": {
			in: `
apiVersion: oda.tmforum.org/v1beta4
kind: Component
metadata: {name: c}
spec:
  coreFunction:
    exposedAPIs:
    - name: a
      apiType: openapi
      specification: [{url: "https://x/a4.json", version: v4}, {url: "https://x/a5.json", version: v5}]
      implementation: s
      path: /a
      port: 8080
  eventNotification:
    publishedEvents:
    - {name: created, description: d, apiType: openapi, implementation: ev, hub: /hub, port: 80}
    subscribedEvents:
    - {name: changed, specification: [{url: "https://x/e.json"}, {url: "https://x/e2.json"}], implementation: ev, callback: /cb, port: 80, query: q}
`,
			to: V1,
			want: `
apiVersion: oda.tmforum.org/v1
kind: Component
metadata:
  name: c
  annotations: {webhookconverted: Webhook converted From oda.tmforum.org/v1beta4 to oda.tmforum.org/v1}
spec:
  coreFunction:
    exposedAPIs:
    - name: a
      apiType: openapi
      specification: [{url: "https://x/a4.json", version: v4}, {url: "https://x/a5.json", version: v5}]
      implementation: s
      path: /a
      port: 8080
  eventNotification:
    publishedEvents:
    - {name: created, description: d, specification: [{apiType: openapi, implementation: ev, hub: /hub, port: 80}]}
    subscribedEvents:
    - name: changed
      specification:
      - {url: "https://x/e.json", implementation: ev, callback: /cb, port: 80, query: q}
      - {url: "https://x/e2.json"}
`,
		},
		"v1 to v1beta4: specification[0] wins over the root, later elements keep their own fields": {
			in: `
apiVersion: oda.tmforum.org/v1
kind: Component
metadata: {name: c}
spec:
  coreFunction:
    exposedAPIs:
    - name: a
      id: TMF620
      path: /root-default
      apiType: openapi
      specification:
      - {url: "https://x/a4.json", version: v4, path: /a4, port: 8080, implementation: s4, apiSDO: TMForum, gatewayConfiguration: {quota: {limit: "5"}}}
      - {url: "https://x/a5.json", version: v5, path: /a5}
`,
			to: V1beta4,
			want: `
apiVersion: oda.tmforum.org/v1beta4
kind: Component
metadata:
  name: c
  annotations: {webhookconverted: Webhook converted From oda.tmforum.org/v1 to oda.tmforum.org/v1beta4}
spec:
  coreFunction:
    exposedAPIs:
    - name: a
      id: TMF620
      path: /a4
      port: 8080
      implementation: s4
      apiSDO: TMForum
      apiType: openapi
      gatewayConfiguration: {quota: {limit: "5"}}
      specification:
      - {url: "https://x/a4.json", version: v4}
      - {url: "https://x/a5.json", version: v5, path: /a5}
`,
		},
		"v1 to v1beta3: versions dropped, metadata flattened, fields v1beta3 lacks are left for the API server to prune": {
			in: `
apiVersion: oda.tmforum.org/v1
kind: Component
metadata: {name: c, uid: u-1, annotations: {keep: me}}
spec:
  unknownTopLevel: {x: 1}
  componentMetadata: {id: TMFC001, version: 1.0.0, eTom: ["1.1"]}
  coreFunction:
    exposedAPIs:
    - name: a
      apiSDO: TMForum
      extra: kept
      specification:
      - {url: "https://x/a4.json", version: v4, apiType: openapi, implementation: s, path: /a, port: 8080, gatewayConfiguration: {CORS: {enabled: true}, future: 1}}
      - {version: v5}
    dependentAPIs:
    - name: d
      specification: [{url: "https://x/d4.json", apiType: openapi}, {url: "https://x/d5.json"}]
  securityFunction:
    canvasSystemRole: Admin
    secretsManagement: {type: sideCar, podSelector: {name: "*"}}
status:
  summary/status: {deployment_status: Complete}
`,
			to: V1beta3,
			want: `
apiVersion: oda.tmforum.org/v1beta3
kind: Component
metadata:
  name: c
  uid: u-1
  annotations: {keep: me, webhookconverted: Webhook converted From oda.tmforum.org/v1 to oda.tmforum.org/v1beta3}
spec:
  unknownTopLevel: {x: 1}
  id: TMFC001
  version: 1.0.0
  componentMetadata: {eTom: ["1.1"]}
  coreFunction:
    exposedAPIs:
    - name: a
      apiSDO: TMForum
      extra: kept
      apiType: openapi
      implementation: s
      path: /a
      port: 8080
      CORS: {enabled: true}
      gatewayConfiguration: {future: 1}
      specification: ["https://x/a4.json"]
    dependentAPIs:
    - name: d
      apiType: openapi
      specification: "https://x/d4.json"
  securityFunction:
    controllerRole: Admin
    secretsManagement: {type: sideCar, podSelector: {name: "*"}}
status:
  summary/status: {deployment_status: Complete}
`,
		},
		"no spec: only apiVersion and annotation change": {
			in:   `{apiVersion: oda.tmforum.org/v1beta3, kind: Component, metadata: {name: c}}`,
			to:   V1,
			want: `{apiVersion: oda.tmforum.org/v1, kind: Component, metadata: {name: c, annotations: {webhookconverted: Webhook converted From oda.tmforum.org/v1beta3 to oda.tmforum.org/v1}}}`,
		},
		"no metadata: created for the annotation": {
			in:   `{apiVersion: oda.tmforum.org/v1, spec: {coreFunction: null, eventNotification: {publishedEvents: null}}}`,
			to:   V1beta2,
			want: `{apiVersion: oda.tmforum.org/v1beta2, metadata: {annotations: {webhookconverted: Webhook converted From oda.tmforum.org/v1 to oda.tmforum.org/v1beta2}}, spec: {coreFunction: null, eventNotification: {publishedEvents: null}}}`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			in := fromYAML(t, tc.in)
			got, err := Convert(in, tc.to)
			if err != nil {
				t.Fatalf("Convert: %v", err)
			}
			if diff := cmp.Diff(canonical(t, fromYAML(t, tc.want)), canonical(t, got)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(canonical(t, fromYAML(t, tc.in)), canonical(t, in)); diff != "" {
				t.Errorf("Convert modified its input (-before +after):\n%s", diff)
			}
		})
	}
}

func TestConvertSameVersionIsACopy(t *testing.T) {
	in := fixture(t, V1)
	got, err := Convert(in, V1)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(in, got); diff != "" {
		t.Fatalf("same-version conversion changed the object (-in +got):\n%s", diff)
	}
	lookup(t, got, "spec", "componentMetadata").(map[string]any)["id"] = "changed"
	if id := lookup(t, in, "spec", "componentMetadata", "id"); id != "TMFC001" {
		t.Errorf("the result shares memory with the input: input id is now %v", id)
	}
}

func TestConvertErrors(t *testing.T) {
	tests := map[string]struct {
		in      string
		to      string
		path    string // the api.FieldError path; empty for version errors
		message string // a substring of the error message
	}{
		"unsupported desired version": {
			in: `{apiVersion: oda.tmforum.org/v1, kind: Component}`, to: "oda.tmforum.org/v2",
			message: `desired apiVersion "oda.tmforum.org/v2"`,
		},
		"desired version without group": {
			in: `{apiVersion: oda.tmforum.org/v1, kind: Component}`, to: "v1beta4",
			message: "unsupported apiVersion",
		},
		"unsupported source version": {
			in: `{apiVersion: oda.tmforum.org/v1beta1, kind: Component}`, to: V1,
			message: `apiVersion "oda.tmforum.org/v1beta1"`,
		},
		"missing apiVersion": {
			in: `{kind: Component}`, to: V1, path: "apiVersion", message: "expected string, got null",
		},
		"another kind": {
			in: `{apiVersion: oda.tmforum.org/v1beta3, kind: ExposedAPI}`, to: V1, path: "kind",
		},
		"spec not an object": {
			in: `{apiVersion: oda.tmforum.org/v1beta3, spec: [1]}`, to: V1, path: "spec", message: "expected object, got array",
		},
		"metadata not an object": {
			in: `{apiVersion: oda.tmforum.org/v1beta3, metadata: x}`, to: V1, path: "metadata",
		},
		"annotations not an object": {
			in: `{apiVersion: oda.tmforum.org/v1beta3, metadata: {annotations: [a]}}`, to: V1, path: "metadata.annotations",
		},
		"segment not an object": {
			in: `{apiVersion: oda.tmforum.org/v1beta3, spec: {managementFunction: [x]}}`, to: V1, path: "spec.managementFunction",
		},
		"exposedAPIs not an array": {
			in: `{apiVersion: oda.tmforum.org/v1beta4, spec: {coreFunction: {exposedAPIs: {name: a}}}}`, to: V1,
			path: "spec.coreFunction.exposedAPIs", message: "expected array, got object",
		},
		"exposed API not an object": {
			in: `{apiVersion: oda.tmforum.org/v1, spec: {securityFunction: {exposedAPIs: [{name: a}, partyrole]}}}`, to: V1beta4,
			path: "spec.securityFunction.exposedAPIs[1]", message: `expected object, got string "partyrole"`,
		},
		"specification a number": {
			in: `{apiVersion: oda.tmforum.org/v1beta3, spec: {coreFunction: {exposedAPIs: [{name: a, specification: 42}]}}}`, to: V1,
			path: "spec.coreFunction.exposedAPIs[0].specification", message: "expected string or array, got number",
		},
		"v1 specification a single object": {
			in: `{apiVersion: oda.tmforum.org/v1, spec: {coreFunction: {dependentAPIs: [{name: d, specification: {url: "https://x"}}]}}}`, to: V1beta4,
			path: "spec.coreFunction.dependentAPIs[0].specification", message: "expected string or array, got object",
		},
		"v1beta2 dependent specification a boolean": {
			in: `{apiVersion: oda.tmforum.org/v1beta2, spec: {managementFunction: {dependentAPIs: [{name: d, specification: true}]}}}`, to: V1beta3,
			path: "spec.managementFunction.dependentAPIs[0].specification",
		},
		"specification element a number": {
			in: `{apiVersion: oda.tmforum.org/v1beta4, spec: {coreFunction: {exposedAPIs: [{name: a, specification: [{url: "https://x"}, 7]}]}}}`, to: V1beta3,
			path: "spec.coreFunction.exposedAPIs[0].specification[1]", message: "expected string or object, got number",
		},
		"specification url not a string": {
			in: `{apiVersion: oda.tmforum.org/v1, spec: {coreFunction: {exposedAPIs: [{name: a, specification: [{url: 1}]}]}}}`, to: V1beta2,
			path: "spec.coreFunction.exposedAPIs[0].specification[0].url",
		},
		"gatewayConfiguration not an object": {
			in: `{apiVersion: oda.tmforum.org/v1beta4, spec: {coreFunction: {exposedAPIs: [{name: a, gatewayConfiguration: on}]}}}`, to: V1beta3,
			path: "spec.coreFunction.exposedAPIs[0].gatewayConfiguration",
		},
		"componentMetadata not an object": {
			in: `{apiVersion: oda.tmforum.org/v1beta4, spec: {componentMetadata: TMFC001}}`, to: V1beta3, path: "spec.componentMetadata",
		},
		"event not an object": {
			in: `{apiVersion: oda.tmforum.org/v1beta4, spec: {eventNotification: {subscribedEvents: [null]}}}`, to: V1,
			path: "spec.eventNotification.subscribedEvents[0]", message: "got null",
		},
		"event specification element not a URL": {
			in: `{apiVersion: oda.tmforum.org/v1beta3, spec: {eventNotification: {publishedEvents: [{name: e, specification: [[]]}]}}}`, to: V1beta4,
			path: "spec.eventNotification.publishedEvents[0].specification[0]",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := Convert(fromYAML(t, tc.in), tc.to)
			if err == nil {
				t.Fatalf("Convert succeeded with %v, want an error", got)
			}
			if got != nil {
				t.Errorf("Convert returned an object with its error: %v", got)
			}
			var fieldErr api.FieldError
			switch {
			case tc.path == "" && !errors.Is(err, ErrUnsupportedVersion):
				t.Errorf("error %q does not wrap ErrUnsupportedVersion", err)
			case tc.path != "" && !errors.As(err, &fieldErr):
				t.Errorf("error %q is not an api.FieldError", err)
			case tc.path != "" && fieldErr.Path != tc.path:
				t.Errorf("error path = %q, want %q (error %q)", fieldErr.Path, tc.path, err)
			}
			if !strings.Contains(err.Error(), tc.path) || !strings.Contains(err.Error(), tc.message) {
				t.Errorf("error %q should contain %q and %q", err, tc.path, tc.message)
			}
		})
	}
}

func TestConvertNil(t *testing.T) {
	if _, err := Convert(nil, V1); err == nil {
		t.Fatal("Convert(nil) succeeded")
	}
}

// richV1beta4 uses every field the v1beta4 <-> v1 steps move.
const richV1beta4 = `
apiVersion: oda.tmforum.org/v1beta4
kind: Component
metadata:
  name: rich
  namespace: components
  annotations: {other: value}
spec:
  componentMetadata: {id: TMFC001, name: rich, eTom: ["1.2.3"], SID: [x], functionalFramework: [y]}
  coreFunction:
    exposedAPIs:
    - name: a
      id: TMF620
      required: true
      specification: [{url: "https://x/a.json", version: v4.0.0}]
      apiType: openapi
      apiSDO: TMForum
      implementation: s
      path: /a
      developerUI: /a/docs
      port: 8080
      resources: [{name: productOffering}]
      gatewayConfiguration:
        apiKeyVerification: {enabled: true, location: header}
        rateLimit: {enabled: true, identifier: IP, limit: "100", interval: pm}
        quota: {identifier: IP, limit: "1000"}
        OASValidation: {requestEnabled: true}
        CORS: {enabled: true, handlePreflightRequests: {enabled: true, maxAge: 3600}}
        template: https://x/template
    - name: two-versions
      specification: [{url: "https://x/v4.json"}, {url: "https://x/v5.json"}]
      apiType: openapi
      implementation: s
      path: /b
      port: 8080
    dependentAPIs:
    - {name: d, id: TMF620, required: true, apiType: openapi, apiSDO: TMForum, resources: [{name: r}], specification: [{url: "https://x/d.json", version: v4}]}
  managementFunction:
    exposedAPIs:
    - {name: metrics, apiType: prometheus, implementation: m, path: /metrics, port: 4000}
  securityFunction:
    canvasSystemRole: Admin
    componentRole: [{name: r, description: d}]
    secretsManagement: {type: sideCar, sideCar: {port: 5000}, podSelector: {namespace: components, name: "*", serviceaccount: sa}}
  eventNotification:
    publishedEvents:
    - {name: created, description: d, apiType: openapi, implementation: ev, developerUI: /ui, hub: /hub, port: 80}
    subscribedEvents:
    - {name: changed, description: d, specification: [{url: "https://x/e.json", version: v1}], apiType: openapi, implementation: ev, callback: /cb, port: 80, query: q}
  futureField: {kept: true}
`

// richV1beta3 has gateway policies and events; v1beta3 <-> v1 is lossless for it.
const richV1beta3 = `
apiVersion: oda.tmforum.org/v1beta3
kind: Component
metadata: {name: rich}
spec:
  id: TMFC001
  functionalBlock: CoreCommerce
  coreFunction:
    exposedAPIs:
    - name: a
      specification: ["https://x/a.json"]
      apiType: openapi
      implementation: s
      path: /a
      port: 8080
      rateLimit: {enabled: true, limit: "100"}
      CORS: {enabled: false}
  securityFunction:
    controllerRole: Admin
  eventNotification:
    publishedEvents:
    - {name: created, description: d, specification: "https://x/e.json", apiType: openapi, implementation: ev, developerUI: /ui, hub: /hub, port: 80}
    subscribedEvents:
    - {name: changed, apiType: openapi, implementation: ev, callback: /cb, port: 80, query: q}
`
