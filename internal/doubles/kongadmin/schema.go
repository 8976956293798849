package kongadmin

import (
	"fmt"
	"math"
	"net"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/google/uuid"
)

// The schemas below follow Kong 3.9's entity definitions
// (kong/db/schema/entities/{services,routes,consumers,plugins}.lua and
// typedefs.lua) for the fields and checks odaflow and the allow-listed
// go-kong tests touch. Messages are Kong's own wording, so that a client
// that passes here passes against Kong for the same reason.

type ftype int

const (
	tString ftype = iota
	tInteger
	tNumber
	tBoolean
	tArray
	tSet
	tRecord
	tForeign
	tHeaders
)

type field struct {
	name     string
	typ      ftype
	elem     *field  // array and set elements
	fields   []field // record fields
	required bool
	def      any // default; nil means null
	oneOf    []any
	min, max *float64
	validate func(any) string
	ref      string // foreign table
	auto     bool   // id and timestamps: generated when absent
	unique   bool
	// nullableRecord marks records that default to null rather than to a
	// record of their fields' defaults.
	nullableRecord bool
}

type schema struct {
	table       string
	endpointKey string
	fields      []field
	// checks are Kong's entity_checks; each returns an "@entity" message.
	checks []func(e map[string]any) string
}

func num(f float64) *float64 { return &f }

var (
	protocolNames = []any{"grpc", "grpcs", "http", "https", "tcp", "tls", "tls_passthrough", "udp"}
	nameRE        = regexp.MustCompile(`^[A-Za-z0-9.\-_~\x{80}-\x{10FFFF}]+$`)
	tagRE         = regexp.MustCompile(`^[ \x21-\x2b\x2d\x2e\x30-\x7e\x{80}-\x{10FFFF}]+$`)
	pathCharsRE   = regexp.MustCompile(`^/[A-Za-z0-9.\-_~/%:@!$&'()*+,;=]*$`)
	hostnameRE    = regexp.MustCompile(`^[A-Za-z0-9_]([A-Za-z0-9\-_.]*[A-Za-z0-9_])?$`)
	methodRE      = regexp.MustCompile(`^[A-Z]+$`)
)

func validateName(v any) string {
	if s, _ := v.(string); !nameRE.MatchString(s) {
		return fmt.Sprintf("invalid value '%s': the only accepted ascii characters are alphanumerics or ., -, _, and ~", s)
	}
	return ""
}

func validateTag(v any) string {
	if s, _ := v.(string); !tagRE.MatchString(s) {
		return fmt.Sprintf("invalid tag '%s': expected printable ascii (except `,` and `/`) or valid utf-8 sequences", s)
	}
	return ""
}

func validateHost(v any) string {
	s, _ := v.(string)
	if ip := net.ParseIP(strings.Trim(s, "[]")); ip != nil {
		return ""
	}
	if h, p, err := net.SplitHostPort(s); err == nil && h != "" && p != "" {
		return "must not have a port"
	}
	if !hostnameRE.MatchString(s) {
		return "invalid value: " + s
	}
	return ""
}

func validatePath(v any) string {
	s, _ := v.(string)
	switch {
	case !strings.HasPrefix(s, "/"):
		return "should start with: /"
	case strings.Contains(s, "//"):
		return "must not have empty segments"
	case !pathCharsRE.MatchString(s):
		return fmt.Sprintf("invalid path: '%s' (characters outside of the reserved list of RFC 3986 found)", s)
	}
	return ""
}

func validateRouterPath(v any) string {
	s, _ := v.(string)
	switch {
	case !strings.HasPrefix(s, "/") && !strings.HasPrefix(s, "~/"):
		return "should start with: / (fixed path) or ~/ (regex path)"
	case strings.Contains(s, "//"):
		return "must not have empty segments"
	case strings.HasPrefix(s, "/"):
		return validatePath(s)
	}
	if _, err := regexp.Compile(s[1:]); err != nil {
		return fmt.Sprintf("invalid regex: '%s' (PCRE returned: %v)", s[1:], err)
	}
	return ""
}

func validateMethod(v any) string {
	if s, _ := v.(string); !methodRE.MatchString(s) {
		return "invalid value: " + s
	}
	return ""
}

func validateCIDR(v any) string {
	s, _ := v.(string)
	if net.ParseIP(s) != nil {
		return ""
	}
	if _, _, err := net.ParseCIDR(s); err == nil {
		return ""
	}
	return fmt.Sprintf("invalid ip or cidr range: '%s'", s)
}

var (
	idField      = field{name: "id", typ: tString, auto: true, validate: validateUUID}
	createdField = field{name: "created_at", typ: tInteger, auto: true}
	updatedField = field{name: "updated_at", typ: tInteger, auto: true}
	tagsField    = field{name: "tags", typ: tSet, elem: &field{typ: tString, validate: validateTag}}
	cidrPort     = field{typ: tRecord, fields: []field{
		{name: "ip", typ: tString, validate: validateCIDR},
		{name: "port", typ: tInteger, min: num(0), max: num(65535)},
	}}
)

func validateUUID(v any) string {
	s, _ := v.(string)
	if _, err := uuid.Parse(s); err != nil || len(s) != 36 {
		return "expected a valid UUID"
	}
	return ""
}

var servicesSchema = &schema{
	table: "services", endpointKey: "name",
	fields: []field{
		idField, createdField, updatedField,
		{name: "name", typ: tString, unique: true, validate: validateName},
		{name: "retries", typ: tInteger, def: 5.0, min: num(0), max: num(32767)},
		{name: "protocol", typ: tString, required: true, def: "http", oneOf: protocolNames},
		{name: "host", typ: tString, required: true, validate: validateHost},
		{name: "port", typ: tInteger, required: true, def: 80.0, min: num(0), max: num(65535)},
		{name: "path", typ: tString, validate: validatePath},
		{name: "connect_timeout", typ: tInteger, def: 60000.0, min: num(1), max: num(math.Pow(2, 31) - 2)},
		{name: "write_timeout", typ: tInteger, def: 60000.0, min: num(1), max: num(math.Pow(2, 31) - 2)},
		{name: "read_timeout", typ: tInteger, def: 60000.0, min: num(1), max: num(math.Pow(2, 31) - 2)},
		tagsField,
		{name: "client_certificate", typ: tForeign, ref: "certificates"},
		{name: "tls_verify", typ: tBoolean},
		{name: "tls_verify_depth", typ: tInteger, min: num(0), max: num(64)},
		{name: "ca_certificates", typ: tArray, elem: &field{typ: tString, validate: validateUUID}},
		{name: "enabled", typ: tBoolean, required: true, def: true},
	},
	checks: []func(map[string]any) string{
		func(e map[string]any) string {
			switch e["protocol"] {
			case "tcp", "tls", "tls_passthrough", "udp", "grpc", "grpcs":
				if e["path"] != nil {
					return "value must be null"
				}
			}
			return ""
		},
	},
}

var routesSchema = &schema{
	table: "routes", endpointKey: "name",
	fields: []field{
		idField, createdField, updatedField,
		{name: "name", typ: tString, unique: true, validate: validateName},
		{name: "protocols", typ: tSet, required: true, def: []any{"http", "https"}, elem: &field{typ: tString, oneOf: protocolNames}},
		{name: "methods", typ: tSet, elem: &field{typ: tString, validate: validateMethod}},
		{name: "hosts", typ: tArray, elem: &field{typ: tString, validate: func(v any) string {
			s, _ := v.(string)
			return validateHost(strings.ReplaceAll(s, "*", "wildcard"))
		}}},
		{name: "paths", typ: tArray, elem: &field{typ: tString, validate: validateRouterPath}},
		{name: "headers", typ: tHeaders},
		{name: "https_redirect_status_code", typ: tInteger, required: true, def: 426.0, oneOf: []any{426.0, 301.0, 302.0, 307.0, 308.0}},
		{name: "regex_priority", typ: tInteger, def: 0.0},
		{name: "strip_path", typ: tBoolean, required: true, def: true},
		{name: "path_handling", typ: tString, def: "v0", oneOf: []any{"v0", "v1"}},
		{name: "preserve_host", typ: tBoolean, required: true, def: false},
		{name: "request_buffering", typ: tBoolean, required: true, def: true},
		{name: "response_buffering", typ: tBoolean, required: true, def: true},
		{name: "snis", typ: tSet, elem: &field{typ: tString}},
		{name: "sources", typ: tSet, elem: &cidrPort},
		{name: "destinations", typ: tSet, elem: &cidrPort},
		tagsField,
		{name: "service", typ: tForeign, ref: "services"},
	},
	checks: []func(map[string]any) string{routeMatchCheck},
}

// routeMatchCheck is the traditional_compatible router's rule: an http(s)
// route matches on something, a stream route on sources, destinations or
// SNIs.
func routeMatchCheck(e map[string]any) string {
	set := func(k string) bool {
		switch v := e[k].(type) {
		case []any:
			return len(v) > 0
		case map[string]any:
			return len(v) > 0
		}
		return false
	}
	protos, _ := e["protocols"].([]any)
	has := func(p ...string) bool {
		for _, x := range protos {
			for _, y := range p {
				if x == y {
					return true
				}
			}
		}
		return false
	}
	switch {
	case has("https", "grpcs"):
		if !set("methods") && !set("hosts") && !set("headers") && !set("paths") && !set("snis") {
			return "must set one of 'methods', 'hosts', 'headers', 'paths', 'snis' when 'protocols' is 'https'"
		}
	case has("http", "grpc"):
		if !set("methods") && !set("hosts") && !set("headers") && !set("paths") {
			return "must set one of 'methods', 'hosts', 'headers', 'paths' when 'protocols' is 'http'"
		}
	case has("tcp", "tls", "udp"):
		if !set("sources") && !set("destinations") && !set("snis") {
			return "must set one of 'sources', 'destinations', 'snis' when 'protocols' is 'tcp', 'tls' or 'udp'"
		}
	}
	return ""
}

var consumersSchema = &schema{
	table: "consumers", endpointKey: "username",
	fields: []field{
		idField, createdField, updatedField,
		{name: "username", typ: tString, unique: true},
		{name: "custom_id", typ: tString, unique: true},
		tagsField,
	},
	checks: []func(map[string]any) string{
		func(e map[string]any) string {
			if e["username"] == nil && e["custom_id"] == nil {
				return "at least one of these fields must be non-empty: 'custom_id', 'username'"
			}
			return ""
		},
	},
}

var pluginsSchema = &schema{
	table: "plugins", endpointKey: "instance_name",
	fields: []field{
		idField, createdField, updatedField,
		{name: "name", typ: tString, required: true},
		{name: "instance_name", typ: tString, unique: true, validate: validateName},
		{name: "route", typ: tForeign, ref: "routes"},
		{name: "service", typ: tForeign, ref: "services"},
		{name: "consumer", typ: tForeign, ref: "consumers"},
		{name: "config", typ: tRecord}, // abstract: replaced by the plugin's own schema
		{name: "protocols", typ: tSet, required: true, def: []any{"grpc", "grpcs", "http", "https"}, elem: &field{typ: tString, oneOf: protocolNames}},
		{name: "enabled", typ: tBoolean, required: true, def: true},
		tagsField,
	},
}

// pluginConfigs are the config schemas of the bundled plugins the double
// knows; any other plugin name is "not enabled", as on a Kong whose
// `plugins` setting leaves it out.
var pluginConfigs = map[string][]field{
	"key-auth": {
		{name: "key_names", typ: tArray, required: true, def: []any{"apikey"}, elem: &field{typ: tString}},
		{name: "hide_credentials", typ: tBoolean, required: true, def: false},
		{name: "anonymous", typ: tString},
		{name: "key_in_header", typ: tBoolean, required: true, def: true},
		{name: "key_in_query", typ: tBoolean, required: true, def: true},
		{name: "key_in_body", typ: tBoolean, required: true, def: false},
		{name: "run_on_preflight", typ: tBoolean, required: true, def: true},
		{name: "realm", typ: tString},
	},
	"basic-auth": {
		{name: "anonymous", typ: tString},
		{name: "hide_credentials", typ: tBoolean, required: true, def: false},
		{name: "realm", typ: tString, required: true, def: "service"},
	},
	"jwt": {
		{name: "uri_param_names", typ: tSet, def: []any{"jwt"}, elem: &field{typ: tString}},
		{name: "cookie_names", typ: tSet, def: []any{}, elem: &field{typ: tString}},
		{name: "key_claim_name", typ: tString, def: "iss"},
		{name: "secret_is_base64", typ: tBoolean, required: true, def: false},
		{name: "claims_to_verify", typ: tSet, elem: &field{typ: tString, oneOf: []any{"exp", "nbf"}}},
		{name: "anonymous", typ: tString},
		{name: "run_on_preflight", typ: tBoolean, required: true, def: true},
		{name: "maximum_expiration", typ: tNumber, def: 0.0, min: num(0), max: num(31536000)},
		{name: "header_names", typ: tSet, def: []any{"authorization"}, elem: &field{typ: tString}},
		{name: "realm", typ: tString},
	},
	"rate-limiting": {
		{name: "second", typ: tNumber, min: num(0)},
		{name: "minute", typ: tNumber, min: num(0)},
		{name: "hour", typ: tNumber, min: num(0)},
		{name: "day", typ: tNumber, min: num(0)},
		{name: "month", typ: tNumber, min: num(0)},
		{name: "year", typ: tNumber, min: num(0)},
		{name: "limit_by", typ: tString, def: "consumer", oneOf: []any{"consumer", "credential", "ip", "service", "header", "path", "consumer-group"}},
		{name: "header_name", typ: tString},
		{name: "path", typ: tString, validate: validatePath},
		{name: "policy", typ: tString, def: "local", oneOf: []any{"local", "cluster", "redis"}},
		{name: "fault_tolerant", typ: tBoolean, required: true, def: true},
		{name: "hide_client_headers", typ: tBoolean, required: true, def: false},
		{name: "error_code", typ: tNumber, def: 429.0, min: num(0)},
		{name: "error_message", typ: tString, def: "API rate limit exceeded"},
		{name: "sync_rate", typ: tNumber, def: -1.0},
	},
	"cors": {
		{name: "origins", typ: tArray, elem: &field{typ: tString}},
		{name: "headers", typ: tArray, elem: &field{typ: tString}},
		{name: "exposed_headers", typ: tArray, elem: &field{typ: tString}},
		{name: "methods", typ: tArray, def: []any{"GET", "HEAD", "PUT", "PATCH", "POST", "DELETE", "OPTIONS", "TRACE", "CONNECT"},
			elem: &field{typ: tString, oneOf: []any{"GET", "HEAD", "PUT", "PATCH", "POST", "DELETE", "OPTIONS", "TRACE", "CONNECT"}}},
		{name: "max_age", typ: tNumber},
		{name: "credentials", typ: tBoolean, required: true, def: false},
		{name: "private_network", typ: tBoolean, required: true, def: false},
		{name: "preflight_continue", typ: tBoolean, required: true, def: false},
	},
	"prometheus": {
		{name: "per_consumer", typ: tBoolean, def: false},
		{name: "status_code_metrics", typ: tBoolean, def: false},
		{name: "latency_metrics", typ: tBoolean, def: false},
		{name: "bandwidth_metrics", typ: tBoolean, def: false},
		{name: "upstream_health_metrics", typ: tBoolean, def: false},
	},
}

// pluginChecks are the plugins' own entity checks.
var pluginChecks = map[string]func(cfg map[string]any) string{
	"rate-limiting": func(cfg map[string]any) string {
		for _, k := range []string{"second", "minute", "hour", "day", "month", "year"} {
			if cfg[k] != nil {
				return ""
			}
		}
		return "at least one of these fields must be non-empty: 'config.second', 'config.minute', 'config.hour', 'config.day', 'config.month', 'config.year'"
	},
}

func pluginNames() []string {
	var out []string
	for k := range pluginConfigs {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// fieldErrors collects Kong's per-field errors: a string, or a nested
// map (records) or list (arrays, 1-based positions in the message).
type fieldErrors map[string]any

// normalize validates in against s, filling defaults; it returns the entity
// with every field of s present (null when unset), as Kong stores and
// returns it.
func (s *schema) normalize(in map[string]any) (map[string]any, fieldErrors) {
	errs := fieldErrors{}
	var fields []field
	for _, f := range s.fields {
		if s == pluginsSchema && f.name == "config" {
			name, _ := in["name"].(string)
			cfgFields, ok := pluginConfigs[name]
			if !ok {
				if name != "" {
					errs["name"] = fmt.Sprintf("plugin '%s' not enabled; add it to the 'plugins' configuration property", name)
				}
				// Without a known plugin the config cannot be checked.
				continue
			}
			f = field{name: "config", typ: tRecord, required: true, fields: cfgFields}
		}
		fields = append(fields, f)
	}
	out, recErrs := normalizeRecord(fields, in, true)
	for k, v := range recErrs {
		if _, taken := errs[k]; !taken {
			errs[k] = v
		}
	}
	if _, ok := out["config"]; !ok && s == pluginsSchema {
		out["config"] = in["config"]
	}
	if len(errs) == 0 {
		var entityErrs []any
		for _, c := range s.checks {
			if msg := c(out); msg != "" {
				entityErrs = append(entityErrs, msg)
			}
		}
		if s == pluginsSchema {
			if c := pluginChecks[out["name"].(string)]; c != nil {
				if msg := c(out["config"].(map[string]any)); msg != "" {
					entityErrs = append(entityErrs, msg)
				}
			}
		}
		if len(entityErrs) > 0 {
			errs["@entity"] = entityErrs
		}
	}
	return out, errs
}

func normalizeRecord(fields []field, in map[string]any, top bool) (map[string]any, fieldErrors) {
	errs := fieldErrors{}
	out := map[string]any{}
	known := map[string]bool{}
	for _, f := range fields {
		known[f.name] = true
	}
	for k := range in {
		if !known[k] {
			errs[k] = "unknown field"
		}
	}
	for _, f := range fields {
		v, present := in[f.name]
		if !present || v == nil {
			switch {
			case f.def != nil:
				v = deepCopy(f.def)
			case f.typ == tRecord && !f.nullableRecord && !top:
				v = map[string]any{}
			case f.typ == tRecord && f.required:
				v = map[string]any{}
			case f.required && !f.auto:
				errs[f.name] = "required field missing"
				continue
			default:
				out[f.name] = nil
				continue
			}
		}
		nv, e := normalizeValue(f, v)
		if e != nil {
			errs[f.name] = e
			continue
		}
		out[f.name] = nv
	}
	return out, errs
}

// normalizeValue checks one value; the error is a string or a nested
// fieldErrors / []any.
func normalizeValue(f field, v any) (any, any) {
	switch f.typ {
	case tString:
		s, ok := v.(string)
		if !ok {
			return nil, "expected a string"
		}
		if s == "" {
			return nil, "length must be at least 1"
		}
	case tInteger:
		n, ok := v.(float64)
		if !ok || n != math.Trunc(n) {
			return nil, "expected an integer"
		}
	case tNumber:
		if _, ok := v.(float64); !ok {
			return nil, "expected a number"
		}
	case tBoolean:
		if _, ok := v.(bool); !ok {
			return nil, "expected a boolean"
		}
	case tArray, tSet:
		l, ok := v.([]any)
		if !ok {
			if f.typ == tSet {
				return nil, "expected a set"
			}
			return nil, "expected an array"
		}
		out := make([]any, 0, len(l))
		var elemErrs []any
		seen := map[string]bool{}
		for i, e := range l {
			nv, err := normalizeValue(*f.elem, e)
			if err != nil {
				if elemErrs == nil {
					elemErrs = make([]any, len(l))
				}
				elemErrs[i] = err
				continue
			}
			if f.typ == tSet {
				// A set keeps the first of equal elements.
				key := fmt.Sprint(nv)
				if seen[key] {
					continue
				}
				seen[key] = true
			}
			out = append(out, nv)
		}
		if elemErrs != nil {
			return nil, elemErrs
		}
		if f.typ == tSet && len(out) == 0 && f.def == nil {
			// Kong stores an empty set of an optional field as null.
			return nil, nil
		}
		v = out
	case tRecord:
		m, ok := v.(map[string]any)
		if !ok {
			return nil, "expected a record"
		}
		if f.fields == nil {
			return m, nil
		}
		out, errs := normalizeRecord(f.fields, m, false)
		if len(errs) > 0 {
			return nil, errs
		}
		return out, nil
	case tForeign:
		m, ok := v.(map[string]any)
		if !ok {
			return nil, "expected a record"
		}
		if id, ok := m["id"]; ok && id != nil {
			if msg := validateUUID(id); msg != "" {
				return nil, fieldErrors{"id": msg}
			}
			return map[string]any{"id": id}, nil
		}
		// Resolved by endpoint key (name, username) in the store.
		return m, nil
	case tHeaders:
		m, ok := v.(map[string]any)
		if !ok {
			return nil, "expected a map"
		}
		for k, hv := range m {
			l, ok := hv.([]any)
			if !ok {
				return nil, fieldErrors{k: "expected an array"}
			}
			for _, s := range l {
				if _, ok := s.(string); !ok {
					return nil, fieldErrors{k: "expected a string"}
				}
			}
		}
	}
	if len(f.oneOf) > 0 {
		found := false
		for _, o := range f.oneOf {
			if o == v {
				found = true
			}
		}
		if !found {
			var names []string
			for _, o := range f.oneOf {
				names = append(names, fmt.Sprint(o))
			}
			return nil, "expected one of: " + strings.Join(names, ", ")
		}
	}
	if n, ok := v.(float64); ok && (f.min != nil || f.max != nil) {
		if f.min != nil && f.max != nil && (n < *f.min || n > *f.max) {
			return nil, fmt.Sprintf("value should be between %s and %s", fmtNum(*f.min), fmtNum(*f.max))
		}
		if f.min != nil && f.max == nil && n < *f.min {
			return nil, "value must be greater than " + fmtNum(*f.min)
		}
	}
	if f.validate != nil {
		if msg := f.validate(v); msg != "" {
			return nil, msg
		}
	}
	return v, nil
}

func fmtNum(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// message renders the errors as Kong's schema_violation does: entity
// errors first, then fields in sorted order, nested ones as "a.b: msg".
func (e fieldErrors) message() string {
	var buf []string
	if l, ok := e["@entity"].([]any); ok {
		for _, m := range l {
			buf = append(buf, fmt.Sprint(m))
		}
	}
	var keys []string
	for k := range e {
		if k != "@entity" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		buf = append(buf, flatten(k, e[k])...)
	}
	if len(buf) == 1 {
		return "schema violation (" + buf[0] + ")"
	}
	return fmt.Sprintf("%d schema violations (%s)", len(buf), strings.Join(buf, "; "))
}

func flatten(prefix string, v any) []string {
	switch t := v.(type) {
	case fieldErrors:
		return flatten(prefix, map[string]any(t))
	case map[string]any:
		var keys []string
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var out []string
		for _, k := range keys {
			out = append(out, flatten(prefix+"."+k, t[k])...)
		}
		return out
	case []any:
		var out []string
		for i, e := range t {
			if e != nil {
				out = append(out, flatten(prefix+"."+strconv.Itoa(i+1), e)...)
			}
		}
		return out
	}
	return []string{fmt.Sprintf("%s: %v", prefix, v)}
}

func deepCopy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, e := range t {
			m[k] = deepCopy(e)
		}
		return m
	case []any:
		l := make([]any, len(t))
		for i, e := range t {
			l[i] = deepCopy(e)
		}
		return l
	}
	return v
}

// schemaJSON renders a schema in the shape of GET /schemas/...: a list of
// single-key field objects.
func schemaJSON(fields []field) map[string]any {
	var out []any
	for _, f := range fields {
		d := map[string]any{"type": [...]string{"string", "integer", "number", "boolean", "array", "set", "record", "foreign", "map"}[f.typ]}
		if f.required {
			d["required"] = true
		}
		if f.def != nil {
			d["default"] = f.def
		}
		if f.fields != nil {
			d["fields"] = schemaJSON(f.fields)["fields"]
		}
		out = append(out, map[string]any{f.name: d})
	}
	return map[string]any{"fields": out}
}
