package oda

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Segment is one of the three functions of a Component that declare APIs.
type Segment string

// The segments, in the order the Canvas processes them.
const (
	SegmentCore       Segment = "coreFunction"
	SegmentManagement Segment = "managementFunction"
	SegmentSecurity   Segment = "securityFunction"
)

// Segments lists the segments in processing order.
var Segments = []Segment{SegmentCore, SegmentManagement, SegmentSecurity}

// short is the prefix of the segment's status keys: core, management, security.
func (s Segment) short() string { return strings.TrimSuffix(string(s), "Function") }

// ExposedStatusKey is the Component status key listing this segment's ExposedAPIs.
func (s Segment) ExposedStatusKey() string { return s.short() + "APIs" }

// DependentStatusKey is the Component status key listing this segment's DependentAPIs.
func (s Segment) DependentStatusKey() string { return s.short() + "DependentAPIs" }

// APIType values an ExposedAPI may declare.
var exposedAPITypes = map[string]bool{"openapi": true, "prometheus": true, "openmetrics": true, "mcp": true}

// API is one flattened API declaration: one element of an exposedAPIs[] or
// dependentAPIs[] item's specification[] (oda-behaviour §1.8).
type API struct {
	Segment   Segment
	Dependent bool
	Name      string
	ID        string
	// URL and Version describe the specification; Version is the major
	// version ("v4") or empty when none can be worked out.
	URL     string
	Version string
	// RawVersion is the version as written, kept for specification.version.
	RawVersion     string
	APIType        string
	APISDO         string
	Implementation string
	Path           string
	DeveloperUI    string
	Port           *int64
	Resources      []any
	Gateway        map[string]any
	Required       *bool
	// Selector narrows a dependent API's providers (namespace,
	// releaseName, zone); odaflow honours it where the Canvas ignored it.
	Selector map[string]any
	// Extra holds the unofficial ExposedAPI extras the Istio operator reads
	// (hostname, basicAuth), carried through unchanged.
	Extra map[string]any
	// Source is the path of the declaration in the Component
	// (spec.coreFunction.exposedAPIs[0]), for error messages about the child.
	Source string
}

// FieldError is one problem found in a spec, with the path of the field.
type FieldError struct {
	Path    string `json:"path"`
	Message string `json:"message"`
}

func (e FieldError) Error() string { return e.Path + ": " + e.Message }

// FieldErrors is a list of problems; it is an error when non-empty.
type FieldErrors []FieldError

func (es FieldErrors) Error() string {
	msgs := make([]string, 0, len(es))
	for _, e := range es {
		msgs = append(msgs, e.Error())
	}
	return strings.Join(msgs, "; ")
}

func (es *FieldErrors) add(path, format string, args ...any) {
	*es = append(*es, FieldError{Path: path, Message: fmt.Sprintf(format, args...)})
}

// unique drops repeated problems, keeping the first of each: an API's root
// fields are read once per specification[] element, and would otherwise be
// reported once per element.
func (es FieldErrors) unique() FieldErrors {
	seen := make(map[FieldError]bool, len(es))
	out := es[:0:0]
	for _, e := range es {
		if !seen[e] {
			seen[e] = true
			out = append(out, e)
		}
	}
	return out
}

// majorVersion reduces "v4.0.0", "4.1" or 4 to "v4".
func majorVersion(v string) string {
	v = strings.TrimPrefix(strings.TrimSpace(v), "v")
	if i := strings.Index(v, "."); i >= 0 {
		v = v[:i]
	}
	if v == "" {
		return ""
	}
	return "v" + v
}

// The patterns that infer a major version from a specification URL, tried in
// this order (§1.8): `_v4.`, `/v4/`, `-v4.`.
var urlVersionPatterns = []*regexp.Regexp{
	regexp.MustCompile(`_v(\d+)\.`),
	regexp.MustCompile(`/v(\d+)/`),
	regexp.MustCompile(`-v(\d+)\.`),
}

func versionFromURL(url string) string {
	for _, p := range urlVersionPatterns {
		if m := p.FindStringSubmatch(url); m != nil {
			return "v" + m[1]
		}
	}
	return ""
}

// resolveVersion applies the version rule of §1.8.
func resolveVersion(elemVersion, elemURL, apiURL, apiVersion string) string {
	if elemVersion != "" {
		return majorVersion(elemVersion)
	}
	if url := firstNonEmpty(elemURL, apiURL); url != "" {
		return versionFromURL(url)
	}
	return majorVersion(apiVersion)
}

func firstNonEmpty(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

// fields is a typed reader over one JSON object that records type errors
// instead of panicking: user input reaches here unvalidated.
type fields struct {
	obj  map[string]any
	path string
	errs *FieldErrors
}

func (f fields) str(key string) string {
	v, ok := f.obj[key]
	if !ok || v == nil {
		return ""
	}
	switch t := v.(type) {
	case string:
		return t
	case int64, float64, int:
		// Versions are often written unquoted (version: 4).
		return fmt.Sprint(t)
	default:
		f.errs.add(f.path+"."+key, "must be a string, got %s", typeName(v))
		return ""
	}
}

func (f fields) int(key string) *int64 {
	v, ok := f.obj[key]
	if !ok || v == nil {
		return nil
	}
	switch t := v.(type) {
	case int64:
		return &t
	case int:
		n := int64(t)
		return &n
	case float64:
		if t != float64(int64(t)) {
			f.errs.add(f.path+"."+key, "must be an integer, got %v", t)
			return nil
		}
		n := int64(t)
		return &n
	case string:
		// A quoted port ("8080") is accepted, as the Python operator did.
		if n, err := strconv.ParseInt(t, 10, 64); err == nil {
			return &n
		}
	}
	f.errs.add(f.path+"."+key, "must be an integer, got %s", typeName(v))
	return nil
}

func (f fields) bool(key string) *bool {
	v, ok := f.obj[key]
	if !ok || v == nil {
		return nil
	}
	b, isBool := v.(bool)
	if !isBool {
		f.errs.add(f.path+"."+key, "must be a boolean, got %s", typeName(v))
		return nil
	}
	return &b
}

func (f fields) object(key string) map[string]any {
	v, ok := f.obj[key]
	if !ok || v == nil {
		return nil
	}
	m, isMap := v.(map[string]any)
	if !isMap {
		f.errs.add(f.path+"."+key, "must be an object, got %s", typeName(v))
		return nil
	}
	return m
}

func (f fields) list(key string) []any {
	v, ok := f.obj[key]
	if !ok || v == nil {
		return nil
	}
	l, isList := v.([]any)
	if !isList {
		f.errs.add(f.path+"."+key, "must be a list, got %s", typeName(v))
		return nil
	}
	return l
}

func (f fields) child(key string) fields {
	return fields{obj: f.object(key), path: f.path + "." + key, errs: f.errs}
}

func typeName(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case bool:
		return "boolean"
	case int64, int, float64:
		return "number"
	case []any:
		return "list"
	case map[string]any:
		return "object"
	case nil:
		return "null"
	default:
		return fmt.Sprintf("%T", v)
	}
}

// normalizeAPIs flattens one segment's exposedAPIs[] or dependentAPIs[]
// (§1.8). Each specification[] element becomes one API; an empty or missing
// specification counts as one empty element.
func normalizeAPIs(seg Segment, dependent bool, items []any, path string, errs *FieldErrors) []API {
	var out []API
	for i, item := range items {
		ipath := fmt.Sprintf("%s[%d]", path, i)
		obj, ok := item.(map[string]any)
		if !ok {
			errs.add(ipath, "must be an object, got %s", typeName(item))
			continue
		}
		root := fields{obj: obj, path: ipath, errs: errs}
		name := root.str("name")
		if name == "" {
			errs.add(ipath+".name", "is required")
			continue
		}
		elems := specificationElements(root)
		for j, elem := range elems {
			e := fields{obj: elem, path: fmt.Sprintf("%s.specification[%d]", ipath, j), errs: errs}
			api := API{
				Segment:   seg,
				Dependent: dependent,
				Name:      name,
				ID:        root.str("id"),
				URL:       firstNonEmpty(e.str("url"), root.str("url")),
				Required:  root.bool("required"),
				Source:    ipath,
			}
			api.Version = resolveVersion(e.str("version"), e.str("url"), root.str("url"), root.str("version"))
			api.RawVersion = firstNonEmpty(e.str("version"), root.str("version"))
			// The element's value wins over the API root's.
			pick := func(key string) string { return firstNonEmpty(e.str(key), root.str(key)) }
			api.APIType = pick("apiType")
			api.APISDO = pick("apiSDO")
			api.Resources = e.list("resources")
			if api.Resources == nil {
				api.Resources = root.list("resources")
			}
			if dependent {
				api.Selector = e.object("selector")
				if api.Selector == nil {
					api.Selector = root.object("selector")
				}
			}
			if !dependent {
				api.Implementation = pick("implementation")
				api.Path = pick("path")
				api.DeveloperUI = pick("developerUI")
				api.Port = e.int("port")
				if api.Port == nil {
					api.Port = root.int("port")
				}
				api.Gateway = e.object("gatewayConfiguration")
				if api.Gateway == nil {
					api.Gateway = root.object("gatewayConfiguration")
				}
				for _, key := range []string{"hostname", "basicAuth"} {
					if v, ok := firstPresent(elem, obj, key); ok {
						if api.Extra == nil {
							api.Extra = map[string]any{}
						}
						api.Extra[key] = v
					}
				}
				validateExposed(api, ipath, errs)
			} else if api.APIType == "" {
				api.APIType = "openapi"
			}
			out = append(out, api)
		}
	}
	return out
}

func firstPresent(a, b map[string]any, key string) (any, bool) {
	if v, ok := a[key]; ok && v != nil {
		return v, true
	}
	if v, ok := b[key]; ok && v != nil {
		return v, true
	}
	return nil, false
}

// specificationElements returns the specification[] elements of an API item.
// v1 uses a list of objects; a single object or a plain URL string (older
// shapes) are tolerated.
func specificationElements(root fields) []map[string]any {
	raw, ok := root.obj["specification"]
	if !ok || raw == nil {
		return []map[string]any{{}}
	}
	switch t := raw.(type) {
	case string:
		return []map[string]any{{"url": t}}
	case map[string]any:
		return []map[string]any{t}
	case []any:
		if len(t) == 0 {
			return []map[string]any{{}}
		}
		out := make([]map[string]any, 0, len(t))
		for j, el := range t {
			switch e := el.(type) {
			case map[string]any:
				out = append(out, e)
			case string:
				out = append(out, map[string]any{"url": e})
			default:
				root.errs.add(fmt.Sprintf("%s.specification[%d]", root.path, j), "must be an object or a URL string, got %s", typeName(el))
			}
		}
		return out
	default:
		root.errs.add(root.path+".specification", "must be a list, got %s", typeName(raw))
		return nil
	}
}

func validateExposed(api API, path string, errs *FieldErrors) {
	if api.APIType == "" {
		errs.add(path+".apiType", "is required")
	} else if !exposedAPITypes[api.APIType] {
		errs.add(path+".apiType", "unknown API type %q (want openapi, prometheus, openmetrics or mcp)", api.APIType)
	}
	if api.Implementation == "" {
		errs.add(path+".implementation", "is required (the Service that implements the API)")
	}
	if api.Path == "" {
		errs.add(path+".path", "is required")
	} else if !strings.HasPrefix(api.Path, "/") {
		errs.add(path+".path", "must start with /, got %q", api.Path)
	}
	if api.Port == nil {
		errs.add(path+".port", "is required")
	} else if *api.Port < 1 || *api.Port > 65535 {
		errs.add(path+".port", "must be between 1 and 65535, got %d", *api.Port)
	}
}

// ChildName names an ExposedAPI or DependentAPI: `<component>-<api>[-<major>]`,
// lower-cased (§1.8).
func ChildName(component, api, version string) string {
	name := component + "-" + api
	if version != "" {
		name += "-" + version
	}
	return strings.ToLower(name)
}
