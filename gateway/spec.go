package gateway

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
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

// FieldError is one problem in an ExposedAPI spec, with the field's path.
type FieldError struct {
	Path    string `json:"path"`
	Message string `json:"message"`
}

func (e FieldError) Error() string { return e.Path + ": " + e.Message }

// FieldErrors lists every problem found; it is an error when non-empty.
type FieldErrors []FieldError

func (es FieldErrors) Error() string {
	msgs := make([]string, len(es))
	for i, e := range es {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "; ")
}

// ParseSpec reads and validates an ExposedAPI spec. It never panics on wrong
// types; the error is a FieldErrors naming every bad field. Policy blocks are
// only read further when enabled, as the gateways only look at them then.
func ParseSpec(spec map[string]any) (Spec, error) {
	var errs FieldErrors
	if spec == nil {
		errs.add("spec", "is required")
		return Spec{}, errs
	}
	r := reader{obj: spec, path: "spec", errs: &errs}
	s := Spec{
		APIName:        r.required("name"),
		APIType:        r.required("apiType"),
		Implementation: r.required("implementation"),
		Path:           r.required("path"),
		DeveloperUI:    r.str("developerUI"),
		Hostname:       r.str("hostname"),
		BasicAuth:      r.object("basicAuth"),
	}
	if p := r.int("port"); p == nil {
		if !r.has("port") {
			errs.add("spec.port", "is required")
		}
	} else if *p < 1 || *p > 65535 {
		errs.add("spec.port", "must be between 1 and 65535, got %d", *p)
	} else {
		s.Port = *p
	}
	if s.Implementation != "" {
		for _, msg := range validation.IsDNS1035Label(s.Implementation) {
			errs.add("spec.implementation", "must be a Service name: %s", msg)
		}
	}
	if s.Path != "" && !strings.HasPrefix(s.Path, "/") {
		errs.add("spec.path", "must start with /, got %q", s.Path)
	}
	if s.DeveloperUI != "" && !strings.HasPrefix(s.DeveloperUI, "/") {
		errs.add("spec.developerUI", "must start with /, got %q", s.DeveloperUI)
	}
	if s.Hostname != "" {
		for _, msg := range validation.IsDNS1123Subdomain(strings.ToLower(s.Hostname)) {
			errs.add("spec.hostname", "must be a DNS name: %s", msg)
		}
	}
	s.Policies = parsePolicies(r)
	if len(errs) > 0 {
		return Spec{}, errs
	}
	return s, nil
}

func parsePolicies(r reader) Policies {
	var p Policies
	if rl := r.child("rateLimit"); rl.boolean("enabled") {
		p.RateLimit = &RateLimit{
			Identifier: rl.str("identifier"),
			Limit:      rl.count("limit"),
			Interval:   rl.interval("interval"),
		}
	}
	if ak := r.child("apiKeyVerification"); ak.boolean("enabled") {
		p.APIKey = &APIKey{Location: ak.str("location")}
	}
	if c := r.child("CORS"); c.boolean("enabled") {
		pre := c.child("handlePreflightRequests")
		cors := &CORS{
			AllowCredentials: c.boolean("allowCredentials"),
			AllowOrigins:     c.csv("allowOrigins", DefaultCORSOrigins),
			Preflight: Preflight{
				Enabled:      true,
				AllowHeaders: pre.csv("allowHeaders", DefaultCORSHeaders),
				AllowMethods: pre.csv("allowMethods", DefaultCORSMethods),
				MaxAge:       DefaultCORSMaxAge,
			},
		}
		if pre.has("enabled") {
			cors.Preflight.Enabled = pre.boolean("enabled")
		}
		if n := pre.int("maxAge"); n != nil {
			if *n < 0 {
				r.errs.add(pre.path+".maxAge", "must not be negative, got %d", *n)
			}
			cors.Preflight.MaxAge = *n
		}
		p.CORS = cors
	}
	// quota has no enabled flag: the APISIX operator applies it when both
	// identifier and limit are set, and an empty one ("") is not set. A
	// limit that is set must be a positive count: APISIX's limit-count
	// refuses anything else.
	if q := r.child("quota"); !q.blank("identifier") && !q.blank("limit") {
		id, limit := q.str("identifier"), q.count("limit")
		if id != "" && limit > 0 {
			p.Quota = &Quota{Identifier: id, Limit: limit}
		}
	}
	if o := r.child("OASValidation"); o.obj != nil {
		oas := OAS{
			RequestEnabled:              o.boolean("requestEnabled"),
			ResponseEnabled:             o.boolean("responseEnabled"),
			AllowUnspecifiedHeaders:     o.boolean("allowUnspecifiedHeaders"),
			AllowUnspecifiedQueryParams: o.boolean("allowUnspecifiedQueryParams"),
			AllowUnspecifiedCookies:     o.boolean("allowUnspecifiedCookies"),
		}
		if oas.RequestEnabled || oas.ResponseEnabled {
			p.OASValidation = &oas
		}
	}
	p.Template = r.str("template")
	return p
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

func (es *FieldErrors) add(path, format string, args ...any) {
	*es = append(*es, FieldError{Path: path, Message: fmt.Sprintf(format, args...)})
}

// reader is a typed reader over one JSON object that records problems
// instead of panicking: the spec reaches here unvalidated. A reader over a
// missing object reads every field as absent.
type reader struct {
	obj  map[string]any
	path string
	errs *FieldErrors
}

func (r reader) has(key string) bool {
	v, ok := r.obj[key]
	return ok && v != nil
}

func (r reader) required(key string) string {
	s := r.str(key)
	if s == "" && !r.badType(key) {
		r.errs.add(r.path+"."+key, "is required")
	}
	return s
}

// badType reports whether key holds a non-string (already reported by str).
func (r reader) badType(key string) bool {
	v, ok := r.obj[key]
	if !ok || v == nil {
		return false
	}
	_, isStr := v.(string)
	return !isStr
}

func (r reader) str(key string) string {
	v, ok := r.obj[key]
	if !ok || v == nil {
		return ""
	}
	s, isStr := v.(string)
	if !isStr {
		r.errs.add(r.path+"."+key, "must be a string, got %s", typeName(v))
		return ""
	}
	return strings.TrimSpace(s)
}

func (r reader) boolean(key string) bool {
	v, ok := r.obj[key]
	if !ok || v == nil {
		return false
	}
	b, isBool := v.(bool)
	if !isBool {
		r.errs.add(r.path+"."+key, "must be a boolean, got %s", typeName(v))
	}
	return b
}

// blank reports whether key is absent, null or an empty (or all-space)
// string. Helm charts render an unset value as "" (the Canvas test kit's
// `quota: {identifier: "", limit: ""}`), and the Canvas operators read it
// as not set, so odaflow does too.
func (r reader) blank(key string) bool {
	v, ok := r.obj[key]
	if !ok || v == nil {
		return true
	}
	s, isStr := v.(string)
	return isStr && strings.TrimSpace(s) == ""
}

// int reads an integer given as a JSON number or a decimal string; nil when
// absent or blank.
func (r reader) int(key string) *int64 {
	if r.blank(key) {
		return nil
	}
	v := r.obj[key]
	n, ok := toInt(v)
	if !ok {
		r.errs.add(r.path+"."+key, "must be an integer, got %s", describe(v))
		return nil
	}
	return &n
}

// count reads a positive count such as a rate limit ("100" or 100); 0 when
// absent or blank.
func (r reader) count(key string) int64 {
	if r.blank(key) {
		return 0
	}
	v := r.obj[key]
	n, ok := toInt(v)
	if !ok || n < 1 {
		r.errs.add(r.path+"."+key, "must be a positive integer, got %s", describe(v))
		return 0
	}
	return n
}

// interval reads a rate-limit interval: ps, pm, ph, pd (the Canvas's
// abbreviations) or second, minute, hour, day.
func (r reader) interval(key string) string {
	s := strings.ToLower(r.str(key))
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
	r.errs.add(r.path+"."+key, "must be ps, pm, ph or pd, got %q", s)
	return ""
}

// csv reads a comma-separated list (or a list of strings), trimming each
// item and dropping empty ones; def when absent or empty.
func (r reader) csv(key string, def []string) []string {
	v, ok := r.obj[key]
	if !ok || v == nil {
		return append([]string(nil), def...)
	}
	var items []string
	switch t := v.(type) {
	case string:
		items = strings.Split(t, ",")
	case []any:
		for i, it := range t {
			s, isStr := it.(string)
			if !isStr {
				r.errs.add(fmt.Sprintf("%s.%s[%d]", r.path, key, i), "must be a string, got %s", typeName(it))
				continue
			}
			items = append(items, s)
		}
	default:
		r.errs.add(r.path+"."+key, "must be a comma-separated string, got %s", typeName(v))
		return append([]string(nil), def...)
	}
	var out []string
	for _, it := range items {
		if it = strings.TrimSpace(it); it != "" {
			out = append(out, it)
		}
	}
	if len(out) == 0 {
		return append([]string(nil), def...)
	}
	return out
}

func (r reader) object(key string) map[string]any {
	v, ok := r.obj[key]
	if !ok || v == nil {
		return nil
	}
	m, isMap := v.(map[string]any)
	if !isMap {
		r.errs.add(r.path+"."+key, "must be an object, got %s", typeName(v))
		return nil
	}
	return m
}

func (r reader) child(key string) reader {
	return reader{obj: r.object(key), path: r.path + "." + key, errs: r.errs}
}

func toInt(v any) (int64, bool) {
	switch t := v.(type) {
	case int64:
		return t, true
	case int:
		return int64(t), true
	case int32:
		return int64(t), true
	case float64:
		if t != math.Trunc(t) || math.Abs(t) > 1<<53 {
			return 0, false
		}
		return int64(t), true
	case string:
		n, err := strconv.ParseInt(strings.TrimSpace(t), 10, 64)
		return n, err == nil
	}
	return 0, false
}

func describe(v any) string {
	switch t := v.(type) {
	case string:
		return strconv.Quote(t)
	case float64, int64, int, int32:
		return fmt.Sprint(t)
	}
	return typeName(v)
}

func typeName(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case bool:
		return "boolean"
	case int64, int, int32, float64:
		return "number"
	case []any:
		return "list"
	case map[string]any:
		return "object"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}
