package gateway

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/odaflow/odaflow/api"
)

// API is what exposure needs from an ExposedAPI.
type API struct {
	// Name, Namespace and UID identify the ExposedAPI object.
	Name, Namespace, UID string
	// Labels are copied to the gateway objects (kopf.adopt did the same, and
	// the component label is how the Canvas test kit finds children).
	Labels map[string]string
	// Spec is the ExposedAPI spec as stored.
	Spec map[string]any
}

// Spec is the parsed, validated view of an ExposedAPI spec (§1.3).
type Spec struct {
	APIName        string // spec.name
	APIType        string // spec.apiType: openapi, prometheus, openmetrics, mcp (a2a, sse)
	Implementation string // spec.implementation: the implementing Service
	Path           string // spec.path: public path prefix
	DeveloperUI    string // spec.developerUI: optional docs path
	Hostname       string // spec.hostname: optional URL host override
	Port           int64  // spec.port: Service port
	Policies       Policies
	// BasicAuth is spec.basicAuth, copied into the ServiceMonitor endpoint.
	BasicAuth map[string]any
}

// Policies are the gateway policies of an ExposedAPI. A nil pointer means the
// policy is disabled or absent.
type Policies struct {
	RateLimit     *RateLimit // spec.rateLimit, when enabled
	APIKey        *APIKey    // spec.apiKeyVerification, when enabled
	CORS          *CORS      // spec.CORS, when enabled
	Quota         *Quota     // spec.quota, when identifier and limit are set
	OASValidation *OAS       // spec.OASValidation, when request or response validation is enabled
	Template      string     // spec.template: URL of a plugin template
}

// RateLimit is spec.rateLimit.
type RateLimit struct {
	Identifier string
	// Limit is the request count per Interval; 0 when not given.
	Limit int64
	// Interval is second, minute, hour or day; empty when not given.
	Interval string
}

// APIKey is spec.apiKeyVerification.
type APIKey struct {
	Location string
}

// CORS is spec.CORS with its defaults applied.
type CORS struct {
	AllowCredentials bool
	AllowOrigins     []string
	Preflight        Preflight
}

// Preflight is spec.CORS.handlePreflightRequests with its defaults applied.
type Preflight struct {
	Enabled      bool
	AllowHeaders []string
	AllowMethods []string
	MaxAge       int64
}

// Quota is spec.quota.
type Quota struct {
	Identifier string
	Limit      int64
}

// OAS is spec.OASValidation.
type OAS struct {
	RequestEnabled, ResponseEnabled                                               bool
	AllowUnspecifiedHeaders, AllowUnspecifiedQueryParams, AllowUnspecifiedCookies bool
}

// CORS defaults (§2.2.2; the CRD documents the same lists).
var (
	DefaultCORSOrigins = []string{"*"}
	DefaultCORSMethods = []string{"GET", "POST", "HEAD", "OPTIONS"}
	DefaultCORSHeaders = []string{"Origin", "Accept", "X-Requested-With", "Content-Type", "Access-Control-Request-Method", "Access-Control-Request-Headers"}
)

// DefaultCORSMaxAge is the preflight cache time of both Canvas operators
// (the CRD text says 1800, the code has always used 3600).
const DefaultCORSMaxAge = 3600

// ParseSpec reads and validates an ExposedAPI spec. It never panics on wrong
// types; the error is an api.FieldErrors naming every bad field. Policy
// blocks are only read further when enabled, as the gateways only look at
// them then (see api.ExposedAPISpec).
func ParseSpec(spec map[string]any) (Spec, error) {
	if spec == nil {
		return Spec{}, api.FieldErrors{{Path: "spec", Message: "is required"}}
	}
	in, errs := api.Decode[api.ExposedAPISpec](spec, "spec")
	s := Spec{
		APIName:        strings.TrimSpace(in.Name),
		APIType:        strings.TrimSpace(in.APIType),
		Implementation: strings.TrimSpace(in.Implementation),
		Path:           strings.TrimSpace(in.Path),
		DeveloperUI:    strings.TrimSpace(in.DeveloperUI),
		Hostname:       strings.TrimSpace(in.Hostname),
		BasicAuth:      in.BasicAuth,
	}
	// A field whose type is already reported is not also missing.
	required := func(field, v string) {
		if v == "" && !errs.At("spec."+field) {
			errs.Add("spec."+field, "is required")
		}
	}
	required("name", s.APIName)
	required("apiType", s.APIType)
	required("implementation", s.Implementation)
	required("path", s.Path)
	switch p := in.Port; {
	case p == nil:
		if !errs.At("spec.port") {
			errs.Add("spec.port", "is required")
		}
	case *p < 1 || *p > 65535:
		errs.Add("spec.port", "must be between 1 and 65535, got %d", *p)
	default:
		s.Port = *p
	}
	if s.Implementation != "" {
		for _, msg := range validation.IsDNS1035Label(s.Implementation) {
			errs.Add("spec.implementation", "must be a Service name: %s", msg)
		}
	}
	if s.Path != "" && !strings.HasPrefix(s.Path, "/") {
		errs.Add("spec.path", "must start with /, got %q", s.Path)
	}
	if s.DeveloperUI != "" && !strings.HasPrefix(s.DeveloperUI, "/") {
		errs.Add("spec.developerUI", "must start with /, got %q", s.DeveloperUI)
	}
	if s.Hostname != "" {
		for _, msg := range validation.IsDNS1123Subdomain(strings.ToLower(s.Hostname)) {
			errs.Add("spec.hostname", "must be a DNS name: %s", msg)
		}
	}
	s.Policies = policies(in, &errs)
	if len(errs) > 0 {
		return Spec{}, errs
	}
	return s, nil
}

// policies applies the policy defaults; a block the decoder left nil, or one
// switched off, is no policy.
func policies(in api.ExposedAPISpec, errs *api.FieldErrors) Policies {
	var p Policies
	if rl := in.RateLimit; rl != nil && rl.Enabled {
		p.RateLimit = &RateLimit{
			Identifier: strings.TrimSpace(rl.Identifier),
			Limit:      int64(rl.Limit),
			Interval:   interval(rl.Interval, "spec.rateLimit.interval", errs),
		}
	}
	if ak := in.APIKeyVerification; ak != nil && ak.Enabled {
		p.APIKey = &APIKey{Location: strings.TrimSpace(ak.Location)}
	}
	if c := in.CORS; c != nil && c.Enabled {
		pre := c.HandlePreflightRequests
		if pre == nil {
			pre = &api.Preflight{}
		}
		cors := &CORS{
			AllowCredentials: c.AllowCredentials,
			AllowOrigins:     orDefault(c.AllowOrigins, DefaultCORSOrigins),
			Preflight: Preflight{
				Enabled:      pre.Enabled == nil || *pre.Enabled,
				AllowHeaders: orDefault(pre.AllowHeaders, DefaultCORSHeaders),
				AllowMethods: orDefault(pre.AllowMethods, DefaultCORSMethods),
				MaxAge:       DefaultCORSMaxAge,
			},
		}
		if n := pre.MaxAge; n != nil {
			if *n < 0 {
				errs.Add("spec.CORS.handlePreflightRequests.maxAge", "must not be negative, got %d", *n)
			}
			cors.Preflight.MaxAge = *n
		}
		p.CORS = cors
	}
	// A quota is applied when both identifier and limit are set (the
	// decoder leaves it nil otherwise); a set limit must be a positive
	// count, as APISIX's limit-count refuses anything else.
	if q := in.Quota; q != nil {
		if id := strings.TrimSpace(q.Identifier); id != "" && q.Limit > 0 {
			p.Quota = &Quota{Identifier: id, Limit: int64(q.Limit)}
		}
	}
	if o := in.OASValidation; o != nil && (o.RequestEnabled || o.ResponseEnabled) {
		p.OASValidation = &OAS{
			RequestEnabled:              o.RequestEnabled,
			ResponseEnabled:             o.ResponseEnabled,
			AllowUnspecifiedHeaders:     o.AllowUnspecifiedHeaders,
			AllowUnspecifiedQueryParams: o.AllowUnspecifiedQueryParams,
			AllowUnspecifiedCookies:     o.AllowUnspecifiedCookies,
		}
	}
	p.Template = strings.TrimSpace(in.Template)
	return p
}

// orDefault is list, or a copy of def when list is empty.
func orDefault(list api.CommaList, def []string) []string {
	if len(list) == 0 {
		return append([]string(nil), def...)
	}
	return list
}

// interval reads a rate-limit interval: ps, pm, ph, pd (the Canvas's
// abbreviations) or second, minute, hour, day.
func interval(v, path string, errs *api.FieldErrors) string {
	s := strings.ToLower(strings.TrimSpace(v))
	switch s {
	case "":
		return ""
	case "ps", "second":
		return "second"
	case "pm", "minute":
		return "minute"
	case "ph", "hour":
		return "hour"
	case "pd", "day":
		return "day"
	}
	errs.Add(path, "must be ps, pm, ph or pd, got %q", s)
	return ""
}

// IsMetrics reports whether an apiType is a metrics API.
func IsMetrics(apiType string) bool {
	switch strings.ToLower(apiType) {
	case "prometheus", "openmetrics":
		return true
	}
	return false
}

// IsLongLived reports whether an apiType holds connections open (MCP, A2A,
// server-sent events) and needs the long upstream timeouts.
func IsLongLived(apiType string) bool {
	switch strings.ToLower(apiType) {
	case "mcp", "a2a", "sse":
		return true
	}
	return false
}
