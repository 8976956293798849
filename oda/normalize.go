package oda

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/odaflow/odaflow/api"
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

// normalizeExposed flattens one segment's exposedAPIs[] (§1.8).
func normalizeExposed(seg Segment, items []api.ExposedAPIDeclaration, path string, errs *api.FieldErrors) []API {
	parts := func(d api.ExposedAPIDeclaration) (api.APIDeclaration, []api.ExposedSpecification) {
		return d.APIDeclaration, d.Specification
	}
	return eachElement(items, path, errs, parts, func(ipath string, item api.ExposedAPIDeclaration, e api.ExposedSpecification) API {
		a := flatten(seg, false, item.APIDeclaration, e.SpecificationElement, ipath)
		// The element's value wins over the API root's.
		a.Implementation = string(firstText(e.Implementation, item.Implementation))
		a.Path = string(firstText(e.Path, item.Path))
		a.DeveloperUI = string(firstText(e.DeveloperUI, item.DeveloperUI))
		a.Port = e.Port
		if a.Port == nil {
			a.Port = item.Port
		}
		a.Gateway = e.GatewayConfiguration
		if a.Gateway == nil {
			a.Gateway = item.GatewayConfiguration
		}
		for _, x := range []struct {
			key        string
			elem, root any
		}{{"hostname", e.Hostname, item.Hostname}, {"basicAuth", e.BasicAuth, item.BasicAuth}} {
			if v := firstPresent(x.elem, x.root); v != nil {
				if a.Extra == nil {
					a.Extra = map[string]any{}
				}
				a.Extra[x.key] = v
			}
		}
		validateExposed(a, ipath, errs)
		return a
	})
}

// normalizeDependent flattens one segment's dependentAPIs[]; a dependent
// API's apiType defaults to openapi.
func normalizeDependent(seg Segment, items []api.DependentAPIDeclaration, path string, errs *api.FieldErrors) []API {
	parts := func(d api.DependentAPIDeclaration) (api.APIDeclaration, []api.DependentSpecification) {
		return d.APIDeclaration, d.Specification
	}
	return eachElement(items, path, errs, parts, func(ipath string, item api.DependentAPIDeclaration, e api.DependentSpecification) API {
		a := flatten(seg, true, item.APIDeclaration, e.SpecificationElement, ipath)
		a.Selector = e.Selector
		if a.Selector == nil {
			a.Selector = item.Selector
		}
		if a.APIType == "" {
			a.APIType = "openapi"
		}
		return a
	})
}

// eachElement makes one API per specification[] element of each item at
// path (§1.8), an empty or missing specification counting as one empty
// element. An item the decoder could not read, or one without a name, is
// left out; its problem is already in errs or added here.
func eachElement[D, E any](items []D, path string, errs *api.FieldErrors, parts func(D) (api.APIDeclaration, []E), one func(ipath string, item D, e E) API) []API {
	var out []API
	for i, item := range items {
		ipath := fmt.Sprintf("%s[%d]", path, i)
		root, elems := parts(item)
		if !named(root, ipath, errs) {
			continue
		}
		if len(elems) == 0 {
			elems = make([]E, 1)
		}
		for _, e := range elems {
			out = append(out, one(ipath, item, e))
		}
	}
	return out
}

// named reports whether the item at ipath was read and has a name; a
// missing name is reported here, a bad item or name type by the decoder.
func named(item api.APIDeclaration, ipath string, errs *api.FieldErrors) bool {
	if errs.At(ipath) {
		return false
	}
	if item.Name == "" {
		if !errs.At(ipath + ".name") {
			errs.Add(ipath+".name", "is required")
		}
		return false
	}
	return true
}

// flatten makes the API of one specification[] element of an item: the
// fields both exposed and dependent APIs have.
func flatten(seg Segment, dependent bool, root api.APIDeclaration, e api.SpecificationElement, ipath string) API {
	a := API{
		Segment:   seg,
		Dependent: dependent,
		Name:      string(root.Name),
		ID:        string(root.ID),
		URL:       string(firstText(e.URL, root.URL)),
		Required:  root.Required,
		Source:    ipath,
		APIType:   string(firstText(e.APIType, root.APIType)),
		APISDO:    string(firstText(e.APISDO, root.APISDO)),
		Resources: e.Resources,
	}
	a.Version = resolveVersion(string(e.Version), string(e.URL), string(root.URL), string(root.Version))
	a.RawVersion = string(firstText(e.Version, root.Version))
	if a.Resources == nil {
		a.Resources = root.Resources
	}
	return a
}

func firstText(vs ...api.Text) api.Text {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

func firstPresent(vs ...any) any {
	for _, v := range vs {
		if v != nil {
			return v
		}
	}
	return nil
}

func validateExposed(a API, path string, errs *api.FieldErrors) {
	// A field whose type is already reported is not also missing.
	missing := func(field string) bool { return !errs.At(path + "." + field) }
	if a.APIType == "" {
		if missing("apiType") {
			errs.Add(path+".apiType", "is required")
		}
	} else if !exposedAPITypes[a.APIType] {
		errs.Add(path+".apiType", "unknown API type %q (want openapi, prometheus, openmetrics or mcp)", a.APIType)
	}
	if a.Implementation == "" {
		if missing("implementation") {
			errs.Add(path+".implementation", "is required (the Service that implements the API)")
		}
	}
	if a.Path == "" {
		if missing("path") {
			errs.Add(path+".path", "is required")
		}
	} else if !strings.HasPrefix(a.Path, "/") {
		errs.Add(path+".path", "must start with /, got %q", a.Path)
	}
	if a.Port == nil {
		if missing("port") {
			errs.Add(path+".port", "is required")
		}
	} else if *a.Port < 1 || *a.Port > 65535 {
		errs.Add(path+".port", "must be between 1 and 65535, got %d", *a.Port)
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
