package oda

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/odaflow/odaflow/api"
)

func TestMajorVersion(t *testing.T) {
	cases := map[string]struct {
		in   string
		want string
	}{
		"semver with v":         {in: "v4.0.0", want: "v4"},
		"semver without v":      {in: "4.0.0", want: "v4"},
		"major.minor":           {in: "4.1", want: "v4"},
		"major only":            {in: "4", want: "v4"},
		"major only with v":     {in: "v5", want: "v5"},
		"multi-digit":           {in: "v10.2.3", want: "v10"},
		"surrounding spaces":    {in: "  v4.0.1 ", want: "v4"},
		"empty":                 {in: "", want: ""},
		"only v":                {in: "v", want: ""},
		"only spaces":           {in: "   ", want: ""},
		"leading dot":           {in: ".5", want: ""},
		"label after the major": {in: "v5-beta.1", want: "v5-beta"},
		"only one v is removed": {in: "vv4", want: "vv4"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := majorVersion(tc.in); got != tc.want {
				t.Errorf("majorVersion(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestVersionFromURL(t *testing.T) {
	cases := map[string]struct {
		url  string
		want string
	}{
		"underscore pattern": {url: "https://example.com/TMF620_v4.0.0.json", want: "v4"},
		"slash pattern":      {url: "https://example.com/tmf-api/productCatalog/v5/openapi.json", want: "v5"},
		"dash pattern":       {url: "https://raw.githubusercontent.com/tmforum-apis/TMF620_ProductCatalog/master/TMF620-ProductCatalog-v4.0.0.swagger.json", want: "v4"},
		"multi-digit":        {url: "https://example.com/api-v12.3.json", want: "v12"},
		"underscore before slash": {
			// `_v<N>.` is tried first, even though `/v<N>/` comes earlier in the string.
			url: "https://example.com/v5/TMF620_v4.0.json", want: "v4",
		},
		"slash before dash": {
			url: "https://example.com/v5/TMF620-v4.0.json", want: "v5",
		},
		"underscore before dash": {
			url: "https://example.com/TMF620-v3.0_v4.json", want: "v4",
		},
		"first match of one pattern wins": {
			url: "https://example.com/v2/x/v3/spec.json", want: "v2",
		},
		"no pattern":              {url: "https://example.com/spec.json", want: ""},
		"v without delimiters":    {url: "https://example.com/TMF620v4.json", want: ""},
		"v without digits":        {url: "https://example.com/TMF620_v.json", want: ""},
		"slash pattern needs end": {url: "https://example.com/api/v4", want: ""},
		"dash pattern needs dot":  {url: "https://example.com/api-v4/spec.json", want: ""},
		"uppercase V":             {url: "https://example.com/TMF620-V4.0.json", want: ""},
		"empty":                   {url: "", want: ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := versionFromURL(tc.url); got != tc.want {
				t.Errorf("versionFromURL(%q) = %q, want %q", tc.url, got, tc.want)
			}
		})
	}
}

func TestResolveVersion(t *testing.T) {
	const (
		urlV4   = "https://example.com/TMF620-ProductCatalog-v4.0.0.swagger.json"
		urlV5   = "https://example.com/tmf-api/v5/openapi.json"
		urlNone = "https://example.com/openapi.json"
	)
	cases := map[string]struct {
		elemVersion, elemURL, apiURL, apiVersion string
		want                                     string
	}{
		"explicit element version wins over the element URL": {
			elemVersion: "5.0.0", elemURL: urlV4, want: "v5",
		},
		"explicit element version wins over everything": {
			elemVersion: "v6", elemURL: urlV4, apiURL: urlV5, apiVersion: "7", want: "v6",
		},
		"element URL": {
			elemURL: urlV4, want: "v4",
		},
		"element URL wins over the API-level URL": {
			elemURL: urlV4, apiURL: urlV5, want: "v4",
		},
		"element URL wins over the API-level version": {
			elemURL: urlV4, apiVersion: "v9", want: "v4",
		},
		"API-level URL when the element has none": {
			apiURL: urlV5, want: "v5",
		},
		"API-level URL wins over the API-level version": {
			apiURL: urlV5, apiVersion: "v9", want: "v5",
		},
		"element URL without pattern: empty even with an API-level version": {
			elemURL: urlNone, apiVersion: "v9", want: "",
		},
		"element URL without pattern does not fall back to the API-level URL": {
			elemURL: urlNone, apiURL: urlV5, want: "",
		},
		"API-level URL without pattern: empty even with an API-level version": {
			apiURL: urlNone, apiVersion: "4.0.0", want: "",
		},
		"API-level version only when no URL at all": {
			apiVersion: "4.0.0", want: "v4",
		},
		"API-level version reduced like the element's": {
			apiVersion: "v5.1", want: "v5",
		},
		"nothing": {want: ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := resolveVersion(tc.elemVersion, tc.elemURL, tc.apiURL, tc.apiVersion)
			if got != tc.want {
				t.Errorf("resolveVersion(%q, %q, %q, %q) = %q, want %q",
					tc.elemVersion, tc.elemURL, tc.apiURL, tc.apiVersion, got, tc.want)
			}
		})
	}
}

func TestChildName(t *testing.T) {
	cases := map[string]struct {
		component, api, version string
		want                    string
	}{
		"with version": {
			component: "ctk-productcatalogmanagement", api: "productcatalogmanagement", version: "v4",
			want: "ctk-productcatalogmanagement-productcatalogmanagement-v4",
		},
		"without version": {
			component: "ctk-productcatalogmanagement", api: "metrics",
			want: "ctk-productcatalogmanagement-metrics",
		},
		"API name lower-cased": {
			component: "ctk", api: "ProductCatalogManagement", version: "v4",
			want: "ctk-productcatalogmanagement-v4",
		},
		"component name lower-cased": {
			component: "CTK-Prodcat", api: "partyrole", version: "v5",
			want: "ctk-prodcat-partyrole-v5",
		},
		"version lower-cased": {
			component: "ctk", api: "api", version: "V4",
			want: "ctk-api-v4",
		},
		"invalid characters are kept (validated later)": {
			component: "ctk", api: "party_role",
			want: "ctk-party_role",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := ChildName(tc.component, tc.api, tc.version); got != tc.want {
				t.Errorf("ChildName(%q, %q, %q) = %q, want %q", tc.component, tc.api, tc.version, got, tc.want)
			}
		})
	}
}

// TestNormalizeAPIs checks the flattening of §1.8 on its own, below the
// child specs.
func TestNormalizeAPIs(t *testing.T) {
	port := func(n int64) *int64 { return &n }
	yes := true
	cases := map[string]struct {
		dependent bool
		items     []any
		want      []API
	}{
		"missing specification counts as one empty element": {
			dependent: true,
			items:     []any{map[string]any{"name": "dep"}},
			want:      []API{{Segment: SegmentCore, Dependent: true, Name: "dep", APIType: "openapi", Source: "spec.coreFunction.x[0]"}},
		},
		"empty specification counts as one empty element": {
			dependent: true,
			items:     []any{map[string]any{"name": "dep", "specification": []any{}}},
			want:      []API{{Segment: SegmentCore, Dependent: true, Name: "dep", APIType: "openapi", Source: "spec.coreFunction.x[0]"}},
		},
		"one element per specification entry, element wins over root": {
			items: []any{map[string]any{
				"name": "api", "id": "TMF620", "required": true,
				"apiType": "openapi", "implementation": "root-svc", "path": "/root", "port": float64(8080),
				"specification": []any{
					map[string]any{"url": "https://x/TMF620-v4.0.0.json"},
					map[string]any{"version": "5.0.1", "implementation": "v5-svc", "path": "/v5", "port": float64(8081), "apiType": "mcp"},
				},
			}},
			want: []API{
				{
					Segment: SegmentCore, Name: "api", ID: "TMF620", Required: &yes,
					URL: "https://x/TMF620-v4.0.0.json", Version: "v4",
					APIType: "openapi", Implementation: "root-svc", Path: "/root", Port: port(8080),
					Source: "spec.coreFunction.x[0]",
				},
				{
					Segment: SegmentCore, Name: "api", ID: "TMF620", Required: &yes,
					Version: "v5", RawVersion: "5.0.1",
					APIType: "mcp", Implementation: "v5-svc", Path: "/v5", Port: port(8081),
					Source: "spec.coreFunction.x[0]",
				},
			},
		},
		"old shapes: single object and URL strings": {
			dependent: true,
			items: []any{
				map[string]any{"name": "a", "specification": map[string]any{"url": "https://x/v4/a.json"}},
				map[string]any{"name": "b", "specification": "https://x/b_v3.json"},
				map[string]any{"name": "c", "specification": []any{"https://x/c-v2.json"}},
			},
			want: []API{
				{Segment: SegmentCore, Dependent: true, Source: "spec.coreFunction.x[0]", Name: "a", URL: "https://x/v4/a.json", Version: "v4", APIType: "openapi"},
				{Segment: SegmentCore, Dependent: true, Source: "spec.coreFunction.x[1]", Name: "b", URL: "https://x/b_v3.json", Version: "v3", APIType: "openapi"},
				{Segment: SegmentCore, Dependent: true, Source: "spec.coreFunction.x[2]", Name: "c", URL: "https://x/c-v2.json", Version: "v2", APIType: "openapi"},
			},
		},
		"dependent APIs ignore the exposed-only fields": {
			dependent: true,
			items: []any{map[string]any{
				"name": "dep", "implementation": "svc", "path": "/p", "port": float64(1), "developerUI": "/ui",
				"gatewayConfiguration": map[string]any{"rateLimit": map[string]any{"enabled": true}},
			}},
			want: []API{{Segment: SegmentCore, Dependent: true, Name: "dep", APIType: "openapi", Source: "spec.coreFunction.x[0]"}},
		},
		"extras hostname and basicAuth are carried": {
			items: []any{map[string]any{
				"name": "api", "apiType": "openapi", "implementation": "svc", "path": "/p", "port": int64(80),
				"hostname": "root.example.com", "basicAuth": true,
				"specification": []any{map[string]any{"hostname": "elem.example.com"}},
			}},
			want: []API{{
				Segment: SegmentCore, Name: "api", APIType: "openapi", Implementation: "svc", Path: "/p", Port: port(80),
				Extra:  map[string]any{"hostname": "elem.example.com", "basicAuth": true},
				Source: "spec.coreFunction.x[0]",
			}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, errs := normalizeItems(tc.dependent, tc.items)
			if len(errs) > 0 {
				t.Fatalf("unexpected errors: %v", errs)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("normalizeAPIs mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// normalizeItems decodes items as the list at spec.coreFunction.x and
// normalises it, as DesiredChildren does with exposedAPIs or dependentAPIs.
func normalizeItems(dependent bool, items []any) ([]API, api.FieldErrors) {
	obj := map[string]any{"x": items}
	if dependent {
		f, errs := api.Decode[struct {
			X []api.DependentAPIDeclaration `json:"x"`
		}](obj, "spec.coreFunction")
		return normalizeDependent(SegmentCore, f.X, "spec.coreFunction.x", &errs), errs
	}
	f, errs := api.Decode[struct {
		X []api.ExposedAPIDeclaration `json:"x"`
	}](obj, "spec.coreFunction")
	return normalizeExposed(SegmentCore, f.X, "spec.coreFunction.x", &errs), errs
}
