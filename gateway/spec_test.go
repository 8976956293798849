package gateway

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/odaflow/odaflow/api"
)

// exampleSpec is the parse of testdata/exposedapi-example.yaml.
func exampleSpec() Spec {
	return Spec{
		APIName:        "productcatalogmanagement",
		APIType:        "openapi",
		Implementation: "r1-prodcatapi",
		Path:           "/r1-productcatalogmanagement/tmf-api/productCatalogManagement/v4",
		DeveloperUI:    "/r1-productcatalogmanagement/tmf-api/productCatalogManagement/v4/docs",
		Port:           8080,
		Policies: Policies{
			RateLimit: &RateLimit{Identifier: "IP", Limit: 100, Interval: "minute"},
			APIKey:    &APIKey{Location: "header"},
			CORS: &CORS{
				AllowCredentials: true,
				AllowOrigins:     []string{"https://allowed-origin.com", "https://another-allowed-origin.com"},
				Preflight: Preflight{
					Enabled:      true,
					AllowHeaders: []string{"Origin", "Accept", "X-Requested-With", "Content-Type", "Access-Control-Request-Method", "Access-Control-Request-Headers"},
					AllowMethods: []string{"GET", "POST", "PUT", "DELETE"},
					MaxAge:       3600,
				},
			},
			Quota:         &Quota{Identifier: "test-identifier", Limit: 1000},
			OASValidation: &OAS{RequestEnabled: true, ResponseEnabled: true},
		},
	}
}

func TestParseSpecExample(t *testing.T) {
	got, err := ParseSpec(exampleAPI(t).Spec)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(exampleSpec(), got); diff != "" {
		t.Errorf("ParseSpec (-want +got):\n%s", diff)
	}
}

const minimalSpec = `
name: api
apiType: openapi
implementation: svc
path: /a
port: 8080
`

func TestParseSpecValues(t *testing.T) {
	base := Spec{APIName: "api", APIType: "openapi", Implementation: "svc", Path: "/a", Port: 8080}
	with := func(edit func(s *Spec)) Spec {
		s := base
		edit(&s)
		return s
	}
	defaultCORS := func() *CORS {
		return &CORS{
			AllowOrigins: []string{"*"},
			Preflight: Preflight{
				Enabled:      true,
				AllowHeaders: []string{"Origin", "Accept", "X-Requested-With", "Content-Type", "Access-Control-Request-Method", "Access-Control-Request-Headers"},
				AllowMethods: []string{"GET", "POST", "HEAD", "OPTIONS"},
				MaxAge:       3600,
			},
		}
	}
	// edits change the parsed YAML of a case before ParseSpec.
	edits := map[string]func(spec map[string]any){
		"quoted port": func(s map[string]any) { s["port"] = "8080" },
	}
	cases := map[string]struct {
		extra string
		want  Spec
	}{
		"minimal":     {"", base},
		"quoted port": {"", base},
		"optional fields": {"developerUI: /a/docs\nhostname: api.example.com\nbasicAuth: {username: {name: s, key: u}}", with(func(s *Spec) {
			s.DeveloperUI, s.Hostname = "/a/docs", "api.example.com"
			s.BasicAuth = map[string]any{"username": map[string]any{"name": "s", "key": "u"}}
		})},
		"policies disabled, their odd values ignored": {`
rateLimit: {enabled: false, limit: lots, interval: weekly}
apiKeyVerification: {enabled: false}
CORS: {enabled: false, allowOrigins: 5}
OASValidation: {requestEnabled: false, responseEnabled: false}
quota: {identifier: only-identifier}`, base},
		"rate limit as a number, no interval": {"rateLimit: {enabled: true, limit: 6}", with(func(s *Spec) {
			s.Policies.RateLimit = &RateLimit{Limit: 6}
		})},
		"rate limit without limit (an error only where the gateway needs it)": {"rateLimit: {enabled: true, identifier: IP}", with(func(s *Spec) {
			s.Policies.RateLimit = &RateLimit{Identifier: "IP"}
		})},
		"interval ps": {"rateLimit: {enabled: true, limit: '1', interval: ps}", with(func(s *Spec) {
			s.Policies.RateLimit = &RateLimit{Limit: 1, Interval: "second"}
		})},
		"interval PH": {"rateLimit: {enabled: true, limit: '1', interval: PH}", with(func(s *Spec) {
			s.Policies.RateLimit = &RateLimit{Limit: 1, Interval: "hour"}
		})},
		"interval day": {"rateLimit: {enabled: true, limit: '1', interval: day}", with(func(s *Spec) {
			s.Policies.RateLimit = &RateLimit{Limit: 1, Interval: "day"}
		})},
		"api key without location": {"apiKeyVerification: {enabled: true}", with(func(s *Spec) {
			s.Policies.APIKey = &APIKey{}
		})},
		"CORS with every default": {"CORS: {enabled: true}", with(func(s *Spec) {
			s.Policies.CORS = defaultCORS()
		})},
		"CORS empty strings take the defaults": {"CORS: {enabled: true, allowOrigins: '', handlePreflightRequests: {allowMethods: ' , '}}", with(func(s *Spec) {
			s.Policies.CORS = defaultCORS()
		})},
		"CORS lists are split on commas and trimmed": {`
CORS:
	enabled: true
	allowOrigins: "https://a.example,https://b.example ,"
	handlePreflightRequests: {enabled: false, allowMethods: "GET,POST , PUT", allowHeaders: [" X-One", "X-Two"], maxAge: 60}`, with(func(s *Spec) {
			s.Policies.CORS = &CORS{
				AllowOrigins: []string{"https://a.example", "https://b.example"},
				Preflight:    Preflight{AllowMethods: []string{"GET", "POST", "PUT"}, AllowHeaders: []string{"X-One", "X-Two"}, MaxAge: 60},
			}
		})},
		// Helm renders an unset value as "": the Canvas test kit's charts
		// carry every policy block with empty values.
		"empty quota is no quota":                    {"quota: {identifier: '', limit: ''}", base},
		"quota with an empty limit is no quota":      {"quota: {identifier: client, limit: ' '}", base},
		"quota with an empty identifier is no quota": {"quota: {identifier: '', limit: '5'}", base},
		"empty template is no template":              {"template: ''", base},
		"enabled rate limit with empty values": {"rateLimit: {enabled: true, identifier: '', limit: '', interval: ''}", with(func(s *Spec) {
			s.Policies.RateLimit = &RateLimit{}
		})},
		"CORS with an empty maxAge takes the default": {"CORS: {enabled: true, handlePreflightRequests: {maxAge: ''}}", with(func(s *Spec) {
			s.Policies.CORS = defaultCORS()
		})},
		"quota with a numeric limit": {"quota: {identifier: client, limit: 50}", with(func(s *Spec) {
			s.Policies.Quota = &Quota{Identifier: "client", Limit: 50}
		})},
		"OAS response only": {"OASValidation: {responseEnabled: true, allowUnspecifiedCookies: true}", with(func(s *Spec) {
			s.Policies.OASValidation = &OAS{ResponseEnabled: true, AllowUnspecifiedCookies: true}
		})},
		"template": {"template: https://example.com/plugins.yaml", with(func(s *Spec) {
			s.Policies.Template = "https://example.com/plugins.yaml"
		})},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			spec := specYAML(t, minimalSpec+tc.extra)
			if edit := edits[name]; edit != nil {
				edit(spec)
			}
			got, err := ParseSpec(spec)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParseSpec (-want +got):\n%s", diff)
			}
		})
	}
}

// TestParseSpecErrors checks that bad specs give one error per bad field,
// each naming its path (messages are matched as substrings).
func TestParseSpecErrors(t *testing.T) {
	cases := map[string]struct {
		spec map[string]any // used when set, else minimalSpec + extra
		yaml string
		want []api.FieldError
	}{
		"no spec": {spec: map[string]any{}, want: []api.FieldError{
			{Path: "spec.name", Message: "is required"}, {Path: "spec.apiType", Message: "is required"}, {Path: "spec.implementation", Message: "is required"},
			{Path: "spec.path", Message: "is required"}, {Path: "spec.port", Message: "is required"},
		}},
		"wrong types": {spec: map[string]any{
			"name": 5.0, "apiType": true, "implementation": []any{"x"}, "path": map[string]any{}, "port": "http",
		}, want: []api.FieldError{
			{Path: "spec.name", Message: "must be a string, got number"}, {Path: "spec.apiType", Message: "must be a string, got boolean"},
			{Path: "spec.implementation", Message: "must be a string, got list"}, {Path: "spec.path", Message: "must be a string, got object"},
			{Path: "spec.port", Message: `must be an integer, got "http"`},
		}},
		"bad values": {yaml: `
name: api
apiType: openapi
implementation: Bad_Service
path: no-slash
port: 70000
developerUI: docs
hostname: https://example.com/x`, want: []api.FieldError{
			{Path: "spec.port", Message: "must be between 1 and 65535, got 70000"},
			{Path: "spec.implementation", Message: "must be a Service name"},
			{Path: "spec.path", Message: `must start with /, got "no-slash"`},
			{Path: "spec.developerUI", Message: `must start with /, got "docs"`},
			{Path: "spec.hostname", Message: "must be a DNS name"},
		}},
		"fractional port": {yaml: "name: a\napiType: openapi\nimplementation: s\npath: /a\nport: 80.5", want: []api.FieldError{
			{Path: "spec.port", Message: "must be an integer, got 80.5"},
		}},
		"policy blocks of the wrong type": {yaml: minimalSpec + "rateLimit: yes\nCORS: [x]\nquota: 5\nOASValidation: on\ntemplate: {url: x}", want: []api.FieldError{
			{Path: "spec.rateLimit", Message: "must be an object, got boolean"},
			{Path: "spec.CORS", Message: "must be an object, got list"},
			{Path: "spec.quota", Message: "must be an object, got number"},
			{Path: "spec.OASValidation", Message: "must be an object, got boolean"},
			{Path: "spec.template", Message: "must be a string, got object"},
		}},
		"enabled given as a string": {yaml: minimalSpec + "rateLimit: {enabled: 'true', limit: '5'}", want: []api.FieldError{
			{Path: "spec.rateLimit.enabled", Message: "must be a boolean, got string"},
		}},
		"non-numeric rate limit": {yaml: minimalSpec + "rateLimit: {enabled: true, limit: hundred}", want: []api.FieldError{
			{Path: "spec.rateLimit.limit", Message: `must be a positive integer, got "hundred"`},
		}},
		"zero and negative limits": {yaml: minimalSpec + "rateLimit: {enabled: true, limit: '0'}\nquota: {identifier: q, limit: -1}", want: []api.FieldError{
			{Path: "spec.rateLimit.limit", Message: `must be a positive integer, got "0"`},
			{Path: "spec.quota.limit", Message: "must be a positive integer, got -1"},
		}},
		"non-numeric quota limit": {yaml: minimalSpec + "quota: {identifier: client, limit: lots}", want: []api.FieldError{
			{Path: "spec.quota.limit", Message: `must be a positive integer, got "lots"`},
		}},
		"unknown interval": {yaml: minimalSpec + "rateLimit: {enabled: true, limit: '5', interval: pw}", want: []api.FieldError{
			{Path: "spec.rateLimit.interval", Message: `must be ps, pm, ph or pd, got "pw"`},
		}},
		"odd CORS values": {yaml: minimalSpec + `
CORS:
	enabled: true
	allowCredentials: "yes"
	allowOrigins: 5
	handlePreflightRequests: {enabled: 1, allowMethods: [GET, 2], allowHeaders: {a: b}, maxAge: soon}`, want: []api.FieldError{
			{Path: "spec.CORS.allowCredentials", Message: "must be a boolean, got string"},
			{Path: "spec.CORS.allowOrigins", Message: "must be a comma-separated string, got number"},
			{Path: "spec.CORS.handlePreflightRequests.allowHeaders", Message: "must be a comma-separated string, got object"},
			{Path: "spec.CORS.handlePreflightRequests.allowMethods[1]", Message: "must be a string, got number"},
			{Path: "spec.CORS.handlePreflightRequests.enabled", Message: "must be a boolean, got number"},
			{Path: "spec.CORS.handlePreflightRequests.maxAge", Message: `must be an integer, got "soon"`},
		}},
		"negative max age": {yaml: minimalSpec + "CORS: {enabled: true, handlePreflightRequests: {maxAge: -1}}", want: []api.FieldError{
			{Path: "spec.CORS.handlePreflightRequests.maxAge", Message: "must not be negative, got -1"},
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			spec := tc.spec
			if spec == nil {
				spec = specYAML(t, tc.yaml)
			}
			got, err := ParseSpec(spec)
			if err == nil {
				t.Fatalf("ParseSpec succeeded: %+v", got)
			}
			var fes api.FieldErrors
			if !errors.As(err, &fes) {
				t.Fatalf("error %T is not FieldErrors: %v", err, err)
			}
			if diff := cmp.Diff(tc.want, []api.FieldError(fes), cmp.Comparer(func(want, got api.FieldError) bool {
				return want.Path == got.Path && (strings.Contains(got.Message, want.Message) || strings.Contains(want.Message, got.Message))
			})); diff != "" {
				t.Errorf("errors (-want +got):\n%s\n%v", diff, err)
			}
			if cmp.Diff(Spec{}, got) != "" {
				t.Errorf("a failed parse returned %+v", got)
			}
		})
	}
}

func TestParseSpecNil(t *testing.T) {
	_, err := ParseSpec(nil)
	if err == nil || err.Error() != "spec: is required" {
		t.Errorf("ParseSpec(nil) = %v", err)
	}
}

// FuzzParseSpec: no spec makes ParseSpec, Desired or the Kong Admin bodies
// panic, whatever its shape.
func FuzzParseSpec(f *testing.F) {
	f.Add(`{"name":"a","apiType":"prometheus","implementation":"s","path":"/a","port":8080,"rateLimit":{"enabled":true,"limit":"7","interval":"pd"}}`)
	f.Add(`{"name":"a","apiType":"mcp","implementation":"s","path":"/","port":"1","CORS":{"enabled":true,"handlePreflightRequests":null},"quota":{"identifier":"x","limit":"2"}}`)
	f.Add(`{"name":"a","apiType":"openapi","implementation":"s","path":"/a","port":1,"rateLimit":{"enabled":true}}`)
	f.Add(`{"rateLimit":{"enabled":true,"limit":[1]},"CORS":{"enabled":true,"allowOrigins":[null]}}`)
	f.Fuzz(func(t *testing.T, raw string) {
		var spec map[string]any
		if json.Unmarshal([]byte(raw), &spec) != nil {
			return
		}
		s, err := ParseSpec(spec)
		if err != nil {
			return
		}
		api := API{Name: "x", Namespace: "n", UID: "u", Spec: spec}
		for _, g := range []string{GatewayIstio, GatewayKong, GatewayKongAdmin, GatewayApisix} {
			objs, _ := Desired(Config{Gateway: g}, api, s)
			checkUnstructured(t, objs)
			_, _, _, _ = KongAdminEntities(Config{Gateway: g}, api, s)
			APIStatus(Config{Gateway: g}, api, s, Ingress{IP: "10.0.0.1"})
		}
	})
}
