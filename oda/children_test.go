package oda

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

// specYAML parses a Component spec written in YAML, the way a Component reaches
// DesiredChildren: through JSON, so numbers are float64. Leading tabs are
// turned into two spaces each, so that specs can be indented like the Go code
// around them.
func specYAML(t testing.TB, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(strings.ReplaceAll(s, "\t", "  ")), &m); err != nil {
		t.Fatalf("bad test spec: %v\n%s", err, s)
	}
	return m
}

// loadComponent reads a Component manifest from testdata.
func loadComponent(t testing.TB, file string) (string, map[string]any) {
	t.Helper()
	raw, err := os.ReadFile("testdata/" + file)
	if err != nil {
		t.Fatal(err)
	}
	var obj struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
		Spec map[string]any `json:"spec"`
	}
	if err := yaml.Unmarshal(raw, &obj); err != nil {
		t.Fatal(err)
	}
	return obj.Metadata.Name, obj.Spec
}

// identityConfig is the IdentityConfig child of component "ctk" with role Admin
// and no security APIs.
var identityConfig = Child{Kind: "IdentityConfig", Name: "ctk", Spec: map[string]any{"canvasSystemRole": "Admin"}}

func TestDesiredChildrenProductCatalogExample(t *testing.T) {
	name, spec := loadComponent(t, "component-productcatalog-v1.yaml")
	const (
		tmf620 = "https://raw.githubusercontent.com/tmforum-apis/TMF620_ProductCatalog/master/TMF620-ProductCatalog-v4.0.0.swagger.json"
		tmf671 = "https://raw.githubusercontent.com/tmforum-apis/TMF671_Promotion/master/TMF671-Promotion-v4.0.0.swagger.json"
		tmf669 = "https://raw.githubusercontent.com/tmforum-apis/TMF669_PartyRole/master/TMF669-PartyRole-v4.0.0.swagger.json"
	)
	want := Desired{
		CanvasSystemRole: "Admin",
		Children: []Child{
			{
				Kind: "ExposedAPI", Name: "ctk-productcatalogmanagement-productcatalogmanagement-v4", Segment: SegmentCore,
				Spec: map[string]any{
					"name":           "productcatalogmanagement",
					"segment":        "coreFunction",
					"apiType":        "openapi",
					"implementation": "ctk-prodcatapi",
					"path":           "/ctk-productcatalogmanagement/tmf-api/productCatalogManagement/v4",
					"developerUI":    "/ctk-productcatalogmanagement/tmf-api/productCatalogManagement/v4/docs",
					"port":           int64(8080),
					"specification":  map[string]any{"url": tmf620, "version": "v4"},
				},
			},
			{
				Kind: "ExposedAPI", Name: "ctk-productcatalogmanagement-promotionmanagement-v4", Segment: SegmentCore,
				Spec: map[string]any{
					"name":           "promotionmanagement",
					"segment":        "coreFunction",
					"apiType":        "openapi",
					"implementation": "ctk-promgmtapi",
					"path":           "/ctk-productcatalogmanagement/tmf-api/promotionManagement/v4",
					"developerUI":    "/ctk-productcatalogmanagement/tmf-api/promotionManagement/v4/docs",
					"port":           int64(8080),
					"specification":  map[string]any{"url": tmf671, "version": "v4"},
				},
			},
			{
				Kind: "ExposedAPI", Name: "ctk-productcatalogmanagement-metrics", Segment: SegmentManagement,
				Spec: map[string]any{
					"name":           "metrics",
					"segment":        "managementFunction",
					"apiType":        "prometheus",
					"implementation": "ctk-productcatalogmanagement-sm",
					"path":           "/ctk-productcatalogmanagement/metrics",
					"port":           int64(4000),
				},
			},
			{
				Kind: "ExposedAPI", Name: "ctk-productcatalogmanagement-partyrole-v4", Segment: SegmentSecurity,
				Spec: map[string]any{
					"name":           "partyrole",
					"segment":        "securityFunction",
					"apiType":        "openapi",
					"implementation": "ctk-partyroleapi",
					"path":           "/ctk-productcatalogmanagement/tmf-api/partyRoleManagement/v4",
					"developerUI":    "/ctk-productcatalogmanagement/tmf-api/partyRoleManagement/v4/docs",
					"port":           int64(8080),
					"specification":  map[string]any{"url": tmf669, "version": "v4"},
				},
			},
			{
				Kind: "DependentAPI", Name: "ctk-productcatalogmanagement-downstreamproductcatalog-v4", Segment: SegmentCore,
				Spec: map[string]any{
					"name":          "downstreamproductcatalog",
					"segment":       "coreFunction",
					"apiType":       "openapi",
					"specification": map[string]any{"url": tmf620, "version": "v4"},
				},
			},
			{
				Kind: "IdentityConfig", Name: "ctk-productcatalogmanagement",
				Spec: map[string]any{
					"canvasSystemRole": "Admin",
					"partyRoleAPI": map[string]any{
						"implementation": "ctk-partyroleapi",
						"path":           "/ctk-productcatalogmanagement/tmf-api/partyRoleManagement/v4",
						"port":           int64(8080),
					},
				},
			},
		},
	}
	got, errs := DesiredChildren(name, spec)
	if len(errs) > 0 {
		t.Fatalf("DesiredChildren returned errors: %v", errs)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("DesiredChildren mismatch (-want +got):\n%s", diff)
	}

	// The workflow hands the spec over through Temporal's JSON payloads:
	// the same spec after a JSON round trip gives the same children.
	raw, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	var again map[string]any
	if err := json.Unmarshal(raw, &again); err != nil {
		t.Fatal(err)
	}
	got2, errs := DesiredChildren(name, again)
	if len(errs) > 0 {
		t.Fatalf("DesiredChildren after a JSON round trip returned errors: %v", errs)
	}
	if diff := cmp.Diff(want, got2); diff != "" {
		t.Errorf("DesiredChildren after a JSON round trip mismatch (-want +got):\n%s", diff)
	}
}

func TestDesiredChildren(t *testing.T) {
	cases := map[string]struct {
		spec string
		want Desired
	}{
		"only the identity config": {
			spec: `
securityFunction:
	canvasSystemRole: Admin
`,
			want: Desired{CanvasSystemRole: "Admin", Children: []Child{identityConfig}},
		},
		"two versions of one API share spec.name": {
			spec: `
coreFunction:
	exposedAPIs:
	- name: productcatalogmanagement
		apiType: openapi
		implementation: ctk-prodcatapi
		port: 8080
		specification:
		- url: https://x/TMF620-ProductCatalog-v4.0.0.swagger.json
			path: /tmf-api/productCatalogManagement/v4
		- url: https://x/TMF620-ProductCatalog-v5.0.0.oas.yaml
			version: 5.0.0
			implementation: ctk-prodcatapi-v5
			path: /tmf-api/productCatalogManagement/v5
securityFunction:
	canvasSystemRole: Admin
`,
			want: Desired{CanvasSystemRole: "Admin", Children: []Child{
				{Kind: "ExposedAPI", Name: "ctk-productcatalogmanagement-v4", Segment: SegmentCore, Spec: map[string]any{
					"name": "productcatalogmanagement", "segment": "coreFunction", "apiType": "openapi",
					"implementation": "ctk-prodcatapi", "path": "/tmf-api/productCatalogManagement/v4", "port": int64(8080),
					"specification": map[string]any{"url": "https://x/TMF620-ProductCatalog-v4.0.0.swagger.json", "version": "v4"},
				}},
				{Kind: "ExposedAPI", Name: "ctk-productcatalogmanagement-v5", Segment: SegmentCore, Spec: map[string]any{
					"name": "productcatalogmanagement", "segment": "coreFunction", "apiType": "openapi",
					"implementation": "ctk-prodcatapi-v5", "path": "/tmf-api/productCatalogManagement/v5", "port": int64(8080),
					"specification": map[string]any{"url": "https://x/TMF620-ProductCatalog-v5.0.0.oas.yaml", "version": "v5"},
				}},
				identityConfig,
			}},
		},
		"no version anywhere: no suffix and no specification": {
			spec: `
managementFunction:
	exposedAPIs:
	- name: metrics
		apiType: openmetrics
		implementation: ctk-sm
		path: /metrics
		port: 4000
securityFunction:
	canvasSystemRole: Admin
`,
			want: Desired{CanvasSystemRole: "Admin", Children: []Child{
				{Kind: "ExposedAPI", Name: "ctk-metrics", Segment: SegmentManagement, Spec: map[string]any{
					"name": "metrics", "segment": "managementFunction", "apiType": "openmetrics",
					"implementation": "ctk-sm", "path": "/metrics", "port": int64(4000),
				}},
				identityConfig,
			}},
		},
		"version only in the URL": {
			spec: `
coreFunction:
	dependentAPIs:
	- name: party
		specification:
		- url: https://x/tmf-api/v5/openapi.json
securityFunction:
	canvasSystemRole: Admin
`,
			want: Desired{CanvasSystemRole: "Admin", Children: []Child{
				{Kind: "DependentAPI", Name: "ctk-party-v5", Segment: SegmentCore, Spec: map[string]any{
					"name": "party", "segment": "coreFunction", "apiType": "openapi",
					"specification": map[string]any{"url": "https://x/tmf-api/v5/openapi.json", "version": "v5"},
				}},
				identityConfig,
			}},
		},
		"URL without a version pattern ignores the API-level version": {
			spec: `
coreFunction:
	dependentAPIs:
	- name: party
		version: 4.0.0
		specification:
		- url: https://x/openapi.json
securityFunction:
	canvasSystemRole: Admin
`,
			want: Desired{CanvasSystemRole: "Admin", Children: []Child{
				{Kind: "DependentAPI", Name: "ctk-party", Segment: SegmentCore, Spec: map[string]any{
					"name": "party", "segment": "coreFunction", "apiType": "openapi",
					"specification": map[string]any{"url": "https://x/openapi.json"},
				}},
				identityConfig,
			}},
		},
		"API-level version and no URL": {
			spec: `
coreFunction:
	dependentAPIs:
	- name: party
		version: v4.0.0
securityFunction:
	canvasSystemRole: Admin
`,
			want: Desired{CanvasSystemRole: "Admin", Children: []Child{
				{Kind: "DependentAPI", Name: "ctk-party-v4", Segment: SegmentCore, Spec: map[string]any{
					"name": "party", "segment": "coreFunction", "apiType": "openapi",
					"specification": map[string]any{"version": "v4"},
				}},
				identityConfig,
			}},
		},
		"version written as an unquoted number": {
			spec: `
coreFunction:
	dependentAPIs:
	- name: a
		specification:
		- version: 4
	- name: b
		specification:
		- version: 5.1
	- name: c
		version: 6.0
securityFunction:
	canvasSystemRole: Admin
`,
			want: Desired{CanvasSystemRole: "Admin", Children: []Child{
				{Kind: "DependentAPI", Name: "ctk-a-v4", Segment: SegmentCore, Spec: map[string]any{
					"name": "a", "segment": "coreFunction", "apiType": "openapi", "specification": map[string]any{"version": "v4"},
				}},
				{Kind: "DependentAPI", Name: "ctk-b-v5", Segment: SegmentCore, Spec: map[string]any{
					"name": "b", "segment": "coreFunction", "apiType": "openapi", "specification": map[string]any{"version": "v5"},
				}},
				{Kind: "DependentAPI", Name: "ctk-c-v6", Segment: SegmentCore, Spec: map[string]any{
					"name": "c", "segment": "coreFunction", "apiType": "openapi", "specification": map[string]any{"version": "v6"},
				}},
				identityConfig,
			}},
		},
		"only the required fields, in the webhook-converted shape": {
			spec: `
coreFunction:
	exposedAPIs:
	- name: agent
		specification:
		- apiType: mcp
			implementation: ctk-agent
			path: /mcp
			port: 9000
securityFunction:
	canvasSystemRole: Admin
`,
			want: Desired{CanvasSystemRole: "Admin", Children: []Child{
				{Kind: "ExposedAPI", Name: "ctk-agent", Segment: SegmentCore, Spec: map[string]any{
					"name": "agent", "segment": "coreFunction", "apiType": "mcp",
					"implementation": "ctk-agent", "path": "/mcp", "port": int64(9000),
				}},
				identityConfig,
			}},
		},
		"quoted port": {
			spec: `
coreFunction:
	exposedAPIs:
	- {name: api, apiType: openapi, implementation: svc, path: /api, port: "8080"}
securityFunction:
	canvasSystemRole: Admin
`,
			want: Desired{CanvasSystemRole: "Admin", Children: []Child{
				{Kind: "ExposedAPI", Name: "ctk-api", Segment: SegmentCore, Spec: map[string]any{
					"name": "api", "segment": "coreFunction", "apiType": "openapi",
					"implementation": "svc", "path": "/api", "port": int64(8080),
				}},
				identityConfig,
			}},
		},
		"gatewayConfiguration lifted; the element's block wins whole": {
			spec: `
coreFunction:
	exposedAPIs:
	- name: api
		specification:
		- url: https://x/api-v4.0.json
			apiType: openapi
			implementation: svc
			path: /api/v4
			port: 8080
			gatewayConfiguration:
				apiKeyVerification: {enabled: true, location: header}
				rateLimit: {enabled: true, identifier: IP, limit: "100", interval: pm}
				quota: {identifier: IP, limit: "1000"}
				OASValidation: {requestEnabled: true, responseEnabled: false}
				CORS: {enabled: true, allowOrigins: "*", handlePreflightRequests: {enabled: true, maxAge: 1800}}
				template: https://x/template.yaml
				notAPolicy: {enabled: true}
	- name: rooted
		apiType: openapi
		implementation: svc2
		path: /rooted
		port: 8081
		gatewayConfiguration:
			rateLimit: {enabled: false}
	- name: both
		apiType: openapi
		implementation: svc3
		path: /both
		port: 8082
		gatewayConfiguration:
			rateLimit: {enabled: false}
			quota: {limit: "5"}
		specification:
		- gatewayConfiguration:
				CORS: {enabled: true}
securityFunction:
	canvasSystemRole: Admin
`,
			want: Desired{CanvasSystemRole: "Admin", Children: []Child{
				{Kind: "ExposedAPI", Name: "ctk-api-v4", Segment: SegmentCore, Spec: map[string]any{
					"name": "api", "segment": "coreFunction", "apiType": "openapi",
					"implementation": "svc", "path": "/api/v4", "port": int64(8080),
					"specification":      map[string]any{"url": "https://x/api-v4.0.json", "version": "v4"},
					"apiKeyVerification": map[string]any{"enabled": true, "location": "header"},
					"rateLimit":          map[string]any{"enabled": true, "identifier": "IP", "limit": "100", "interval": "pm"},
					"quota":              map[string]any{"identifier": "IP", "limit": "1000"},
					"OASValidation":      map[string]any{"requestEnabled": true, "responseEnabled": false},
					"CORS": map[string]any{"enabled": true, "allowOrigins": "*",
						"handlePreflightRequests": map[string]any{"enabled": true, "maxAge": float64(1800)}},
					"template": "https://x/template.yaml",
				}},
				{Kind: "ExposedAPI", Name: "ctk-rooted", Segment: SegmentCore, Spec: map[string]any{
					"name": "rooted", "segment": "coreFunction", "apiType": "openapi",
					"implementation": "svc2", "path": "/rooted", "port": int64(8081),
					"rateLimit": map[string]any{"enabled": false},
				}},
				{Kind: "ExposedAPI", Name: "ctk-both", Segment: SegmentCore, Spec: map[string]any{
					"name": "both", "segment": "coreFunction", "apiType": "openapi",
					"implementation": "svc3", "path": "/both", "port": int64(8082),
					"CORS": map[string]any{"enabled": true},
				}},
				identityConfig,
			}},
		},
		"required, id, apiSDO, resources and developerUI carried": {
			spec: `
coreFunction:
	exposedAPIs:
	- name: catalog
		id: TMF620
		required: false
		apiSDO: TMForum
		apiType: openapi
		implementation: svc
		path: /catalog
		developerUI: /catalog/docs
		port: 8080
		resources: [{name: productOffering}]
	dependentAPIs:
	- name: party
		id: TMF632
		required: true
		apiSDO: TMForum
		resources: [{name: individual}]
		specification:
		- url: https://x/TMF632-Party-v5.0.0.json
securityFunction:
	canvasSystemRole: Admin
`,
			want: Desired{CanvasSystemRole: "Admin", Children: []Child{
				{Kind: "ExposedAPI", Name: "ctk-catalog", Segment: SegmentCore, Spec: map[string]any{
					"name": "catalog", "segment": "coreFunction", "id": "TMF620", "required": false, "apiSDO": "TMForum",
					"apiType": "openapi", "implementation": "svc", "path": "/catalog", "developerUI": "/catalog/docs",
					"port": int64(8080), "resources": []any{map[string]any{"name": "productOffering"}},
				}},
				{Kind: "DependentAPI", Name: "ctk-party-v5", Segment: SegmentCore, Spec: map[string]any{
					"name": "party", "segment": "coreFunction", "id": "TMF632", "required": true, "apiSDO": "TMForum",
					"apiType": "openapi", "resources": []any{map[string]any{"name": "individual"}},
					"specification": map[string]any{"url": "https://x/TMF632-Party-v5.0.0.json", "version": "v5"},
				}},
				identityConfig,
			}},
		},
		"dependent APIs in every segment; apiType defaults to openapi": {
			spec: `
coreFunction:
	dependentAPIs:
	- name: core-dep
managementFunction:
	dependentAPIs:
	- name: mgmt-dep
		specification:
		- apiType: openapi
securityFunction:
	canvasSystemRole: Admin
	dependentAPIs:
	- name: sec-dep
		apiType: openapi
`,
			want: Desired{CanvasSystemRole: "Admin", Children: []Child{
				{Kind: "DependentAPI", Name: "ctk-core-dep", Segment: SegmentCore, Spec: map[string]any{
					"name": "core-dep", "segment": "coreFunction", "apiType": "openapi",
				}},
				{Kind: "DependentAPI", Name: "ctk-mgmt-dep", Segment: SegmentManagement, Spec: map[string]any{
					"name": "mgmt-dep", "segment": "managementFunction", "apiType": "openapi",
				}},
				{Kind: "DependentAPI", Name: "ctk-sec-dep", Segment: SegmentSecurity, Spec: map[string]any{
					"name": "sec-dep", "segment": "securityFunction", "apiType": "openapi",
				}},
				identityConfig,
			}},
		},
		"older specification shapes": {
			spec: `
coreFunction:
	exposedAPIs:
	- name: api
		specification: https://x/api_v3.json
		apiType: openapi
		implementation: svc
		path: /api
		port: 80
	dependentAPIs:
	- name: dep
		specification: {url: https://x/dep-v2.0.json}
securityFunction:
	canvasSystemRole: Admin
`,
			want: Desired{CanvasSystemRole: "Admin", Children: []Child{
				{Kind: "ExposedAPI", Name: "ctk-api-v3", Segment: SegmentCore, Spec: map[string]any{
					"name": "api", "segment": "coreFunction", "apiType": "openapi",
					"implementation": "svc", "path": "/api", "port": int64(80),
					"specification": map[string]any{"url": "https://x/api_v3.json", "version": "v3"},
				}},
				{Kind: "DependentAPI", Name: "ctk-dep-v2", Segment: SegmentCore, Spec: map[string]any{
					"name": "dep", "segment": "coreFunction", "apiType": "openapi",
					"specification": map[string]any{"url": "https://x/dep-v2.0.json", "version": "v2"},
				}},
				identityConfig,
			}},
		},
		"names lower-cased, spec.name kept as written": {
			spec: `
coreFunction:
	exposedAPIs:
	- {name: ProductCatalog, apiType: openapi, implementation: svc, path: /pc, port: 80, specification: [{version: v4.1}]}
securityFunction:
	canvasSystemRole: Admin
`,
			want: Desired{CanvasSystemRole: "Admin", Children: []Child{
				{Kind: "ExposedAPI", Name: "ctk-productcatalog-v4", Segment: SegmentCore, Spec: map[string]any{
					"name": "ProductCatalog", "segment": "coreFunction", "apiType": "openapi",
					"implementation": "svc", "path": "/pc", "port": int64(80),
					"specification": map[string]any{"version": "v4"},
				}},
				identityConfig,
			}},
		},
		"hostname and basicAuth extras": {
			spec: `
coreFunction:
	exposedAPIs:
	- {name: api, apiType: openapi, implementation: svc, path: /api, port: 80, hostname: api.example.com, basicAuth: true}
securityFunction:
	canvasSystemRole: Admin
`,
			want: Desired{CanvasSystemRole: "Admin", Children: []Child{
				{Kind: "ExposedAPI", Name: "ctk-api", Segment: SegmentCore, Spec: map[string]any{
					"name": "api", "segment": "coreFunction", "apiType": "openapi",
					"implementation": "svc", "path": "/api", "port": int64(80),
					"hostname": "api.example.com", "basicAuth": true,
				}},
				identityConfig,
			}},
		},
		"identity config: roles and the party-role and permission APIs of the security segment": {
			spec: `
coreFunction:
	exposedAPIs:
	- {name: partyrole, apiType: openapi, implementation: core-svc, path: /core, port: 1}
securityFunction:
	canvasSystemRole: Admin
	componentRole:
	- {name: catalogManager, description: manages the catalog}
	exposedAPIs:
	- {name: PartyRoleManagement, apiType: openapi, implementation: pr-svc, path: /pr, port: 8080}
	- {name: partyrole2, apiType: openapi, implementation: pr2-svc, path: /pr2, port: 8081}
	- {name: userrolesandpermissions, apiType: openapi, implementation: perm-svc, path: /perm, port: 8082}
`,
			want: Desired{CanvasSystemRole: "Admin", Children: []Child{
				{Kind: "ExposedAPI", Name: "ctk-partyrole", Segment: SegmentCore, Spec: map[string]any{
					"name": "partyrole", "segment": "coreFunction", "apiType": "openapi",
					"implementation": "core-svc", "path": "/core", "port": int64(1),
				}},
				{Kind: "ExposedAPI", Name: "ctk-partyrolemanagement", Segment: SegmentSecurity, Spec: map[string]any{
					"name": "PartyRoleManagement", "segment": "securityFunction", "apiType": "openapi",
					"implementation": "pr-svc", "path": "/pr", "port": int64(8080),
				}},
				{Kind: "ExposedAPI", Name: "ctk-partyrole2", Segment: SegmentSecurity, Spec: map[string]any{
					"name": "partyrole2", "segment": "securityFunction", "apiType": "openapi",
					"implementation": "pr2-svc", "path": "/pr2", "port": int64(8081),
				}},
				{Kind: "ExposedAPI", Name: "ctk-userrolesandpermissions", Segment: SegmentSecurity, Spec: map[string]any{
					"name": "userrolesandpermissions", "segment": "securityFunction", "apiType": "openapi",
					"implementation": "perm-svc", "path": "/perm", "port": int64(8082),
				}},
				{Kind: "IdentityConfig", Name: "ctk", Spec: map[string]any{
					"canvasSystemRole": "Admin",
					"componentRole":    []any{map[string]any{"name": "catalogManager", "description": "manages the catalog"}},
					"partyRoleAPI":     map[string]any{"implementation": "pr-svc", "path": "/pr", "port": int64(8080)},
					"permissionSpecificationSetAPI": map[string]any{
						"implementation": "perm-svc", "path": "/perm", "port": int64(8082),
					},
				}},
			}},
		},
		"secretsManagement child": {
			spec: `
securityFunction:
	canvasSystemRole: Admin
	secretsManagement:
		type: sideCar
		sideCar: {port: 5000}
		podSelector: {namespace: components, name: "ctk-*", serviceaccount: default}
`,
			want: Desired{
				CanvasSystemRole: "Admin",
				SecretsManagement: map[string]any{
					"type": "sideCar", "sideCar": map[string]any{"port": float64(5000)},
					"podSelector": map[string]any{"namespace": "components", "name": "ctk-*", "serviceaccount": "default"},
				},
				Children: []Child{
					identityConfig,
					{Kind: "SecretsManagement", Name: "ctk", Spec: map[string]any{
						"type": "sideCar", "sideCar": map[string]any{"port": float64(5000)},
						"podSelector": map[string]any{"namespace": "components", "name": "ctk-*", "serviceaccount": "default"},
					}},
				},
			},
		},
		"an empty secretsManagement block is none (§2.1.4)": {
			spec: `
securityFunction:
	canvasSystemRole: Admin
	secretsManagement: {}
`,
			want: Desired{CanvasSystemRole: "Admin", Children: []Child{identityConfig}},
		},
		"published and subscribed events": {
			spec: `
securityFunction:
	canvasSystemRole: Admin
eventNotification:
	publishedEvents:
	- name: ProductCatalogCreateEvent
		description: a catalog was created
		apiType: openapi
		specification: [{url: https://x/TMF620-v4.0.json, version: 4.0.0}]
		implementation: ctk-events
		hub: /hub
		port: 8080
	subscribedEvents:
	- name: partyCreate
		callback: /callback
		query: eventType=PartyCreateEvent
`,
			want: Desired{CanvasSystemRole: "Admin", Children: []Child{
				identityConfig,
				{
					Kind: "PublishedNotification", Name: "ctk-productcatalogcreateevent",
					Spec: map[string]any{
						"name": "ProductCatalogCreateEvent", "description": "a catalog was created", "apiType": "openapi",
						"specification":  []any{map[string]any{"url": "https://x/TMF620-v4.0.json", "version": "4.0.0"}},
						"implementation": "ctk-events", "hub": "/hub", "port": float64(8080),
					},
					InitialStatus: map[string]any{"uid": "", "status": "initializing", "error": ""},
				},
				{
					Kind: "SubscribedNotification", Name: "ctk-partycreate",
					Spec:          map[string]any{"name": "partyCreate", "callback": "/callback", "query": "eventType=PartyCreateEvent"},
					InitialStatus: map[string]any{"uid": "", "status": "initializing", "error": ""},
				},
			}},
		},
		"null and empty sections": {
			spec: `
coreFunction:
	exposedAPIs: null
	dependentAPIs: []
managementFunction: null
securityFunction:
	canvasSystemRole: Admin
	exposedAPIs: []
eventNotification:
	publishedEvents: []
	subscribedEvents: null
`,
			want: Desired{CanvasSystemRole: "Admin", Children: []Child{identityConfig}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, errs := DesiredChildren("ctk", specYAML(t, tc.spec))
			if len(errs) > 0 {
				t.Fatalf("DesiredChildren returned errors: %v", errs)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("DesiredChildren mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// DesiredChildren runs inside a workflow: it must be deterministic and must
// not touch its input.
func TestDesiredChildrenIsPure(t *testing.T) {
	name, spec := loadComponent(t, "component-productcatalog-v1.yaml")
	spec["securityFunction"].(map[string]any)["secretsManagement"] = map[string]any{
		"type": "sideCar", "podSelector": map[string]any{"name": "*"},
	}
	spec["eventNotification"] = map[string]any{"publishedEvents": []any{map[string]any{"name": "e", "hub": "/hub"}}}
	before, _ := json.Marshal(spec)
	first, errs := DesiredChildren(name, spec)
	if len(errs) > 0 {
		t.Fatalf("errors: %v", errs)
	}
	after, _ := json.Marshal(spec)
	if diff := cmp.Diff(string(before), string(after)); diff != "" {
		t.Errorf("DesiredChildren changed its input (-before +after):\n%s", diff)
	}
	for range 5 {
		again, _ := DesiredChildren(name, spec)
		if diff := cmp.Diff(first, again); diff != "" {
			t.Fatalf("DesiredChildren is not deterministic (-first +again):\n%s", diff)
		}
	}
}

func TestDesiredByKindAndRef(t *testing.T) {
	name, spec := loadComponent(t, "component-productcatalog-v1.yaml")
	d, errs := DesiredChildren(name, spec)
	if len(errs) > 0 {
		t.Fatalf("errors: %v", errs)
	}
	names := func(cs []Child) []string {
		var out []string
		for _, c := range cs {
			out = append(out, c.Name)
		}
		return out
	}
	cases := map[string][]string{
		"ExposedAPI": {
			"ctk-productcatalogmanagement-productcatalogmanagement-v4",
			"ctk-productcatalogmanagement-promotionmanagement-v4",
			"ctk-productcatalogmanagement-metrics",
			"ctk-productcatalogmanagement-partyrole-v4",
		},
		"DependentAPI":          {"ctk-productcatalogmanagement-downstreamproductcatalog-v4"},
		"IdentityConfig":        {"ctk-productcatalogmanagement"},
		"SecretsManagement":     nil,
		"PublishedNotification": nil,
	}
	for kind, want := range cases {
		if diff := cmp.Diff(want, names(d.ByKind(kind))); diff != "" {
			t.Errorf("ByKind(%q) mismatch (-want +got):\n%s", kind, diff)
		}
	}
	got := d.Children[0].Ref("components")
	want := Ref{Kind: "ExposedAPI", Namespace: "components", Name: "ctk-productcatalogmanagement-productcatalogmanagement-v4"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Ref mismatch (-want +got):\n%s", diff)
	}
}

func TestChildObject(t *testing.T) {
	child := Child{
		Kind: "ExposedAPI", Name: "ctk-api-v4", Segment: SegmentCore,
		Spec: map[string]any{"name": "api", "segment": "coreFunction"},
	}
	ownerRefs := []any{map[string]any{
		"apiVersion": "oda.tmforum.org/v1", "kind": "Component", "name": "ctk", "uid": "uid-1",
		"controller": true, "blockOwnerDeletion": true,
	}}
	cases := map[string]struct {
		owner      Owner
		wantLabels map[string]any
	}{
		"no labels: the component label is added": {
			owner:      Owner{Name: "ctk", Namespace: "components", UID: "uid-1"},
			wantLabels: map[string]any{"oda.tmforum.org/componentName": "ctk"},
		},
		"the Component's labels are copied": {
			owner: Owner{Name: "ctk", Namespace: "components", UID: "uid-1", Labels: map[string]string{
				"app.kubernetes.io/instance": "ctk", "oda.tmforum.org/componentName": "ctk",
			}},
			wantLabels: map[string]any{"app.kubernetes.io/instance": "ctk", "oda.tmforum.org/componentName": "ctk"},
		},
		"an explicit component label is kept": {
			owner: Owner{Name: "ctk", Namespace: "components", UID: "uid-1", Labels: map[string]string{
				"oda.tmforum.org/componentName": "productcatalog",
			}},
			wantLabels: map[string]any{"oda.tmforum.org/componentName": "productcatalog"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			want := map[string]any{
				"apiVersion": "oda.tmforum.org/v1",
				"kind":       "ExposedAPI",
				"metadata": map[string]any{
					"name": "ctk-api-v4", "namespace": "components",
					"labels": tc.wantLabels, "ownerReferences": ownerRefs,
				},
				"spec": map[string]any{"name": "api", "segment": "coreFunction"},
			}
			got := ChildObject(tc.owner, child)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("ChildObject mismatch (-want +got):\n%s", diff)
			}
			// The owner's label map is not shared with the object.
			if tc.owner.Labels != nil {
				got["metadata"].(map[string]any)["labels"].(map[string]any)["x"] = "y"
				if _, leaked := tc.owner.Labels["x"]; leaked {
					t.Error("ChildObject shares its labels with the owner")
				}
			}
		})
	}
}

// Only the kinds that clean up outside the cluster are created with the
// finalizer; the input is not changed.
func TestWithCleanupFinalizers(t *testing.T) {
	in := []Child{
		{Kind: "ExposedAPI", Name: "ctk-api"},
		{Kind: "DependentAPI", Name: "ctk-dep"},
		{Kind: "IdentityConfig", Name: "ctk"},
		{Kind: "SecretsManagement", Name: "ctk"},
		{Kind: "PublishedNotification", Name: "ctk-ev"},
	}
	got := WithCleanupFinalizers(in)
	want := map[string][]string{"IdentityConfig": {Finalizer}, "SecretsManagement": {Finalizer}}
	for i, c := range got {
		if diff := cmp.Diff(want[c.Kind], c.Finalizers); diff != "" {
			t.Errorf("%s finalizers (-want +got):\n%s", c.Kind, diff)
		}
		if in[i].Finalizers != nil {
			t.Errorf("%s: the input child was changed", in[i].Kind)
		}
	}
	obj := ChildObject(Owner{Name: "ctk", Namespace: "components", UID: "uid-1"}, got[2])
	if diff := cmp.Diff([]any{Finalizer}, obj["metadata"].(map[string]any)["finalizers"]); diff != "" {
		t.Errorf("ChildObject finalizers (-want +got):\n%s", diff)
	}
	if _, ok := ChildObject(Owner{Name: "ctk", Namespace: "components", UID: "uid-1"}, got[0])["metadata"].(map[string]any)["finalizers"]; ok {
		t.Error("ChildObject sets finalizers on a child without any")
	}
}

func TestSortedKeys(t *testing.T) {
	got := SortedKeys(map[string]int{"b": 1, "a": 2, "c": 3})
	if diff := cmp.Diff([]string{"a", "b", "c"}, got); diff != "" {
		t.Errorf("SortedKeys mismatch (-want +got):\n%s", diff)
	}
	if got := SortedKeys(map[string]int(nil)); len(got) != 0 {
		t.Errorf("SortedKeys(nil) = %v, want empty", got)
	}
}

func TestDependentAPISelectorReachesTheChild(t *testing.T) {
	spec := map[string]any{
		"coreFunction": map[string]any{"dependentAPIs": []any{map[string]any{
			"name": "downstream", "apiType": "openapi",
			"specification": map[string]any{"url": "https://example.com/a.json"},
			"selector":      map[string]any{"namespace": "prod", "releaseName": "r-cat"},
		}}},
		"securityFunction": map[string]any{"canvasSystemRole": "Admin"},
	}
	d, errs := DesiredChildren("f-cat", spec)
	if len(errs) != 0 {
		t.Fatal(errs)
	}
	for _, c := range d.Children {
		if c.Kind == KindDependentAPI.Name {
			sel, _ := c.Spec["selector"].(map[string]any)
			if sel["namespace"] != "prod" || sel["releaseName"] != "r-cat" {
				t.Fatalf("selector = %v, want the Component's", c.Spec["selector"])
			}
			return
		}
	}
	t.Fatal("no DependentAPI child")
}
