// Package dependency holds the rules that resolve a DependentAPI to the
// ExposedAPI that provides it (oda-behaviour §2.5), as pure functions.
//
// The matching rule, in order:
//
//  1. A provider is an ExposedAPI of apiType openapi whose specification URL
//     equals the DependentAPI's (after trimming blanks; the v1beta3 string
//     array and v1beta4 object array forms of specification are read too),
//     that is ready and has a URL. Both are what odaflow computes for the
//     ExposedAPI from its spec and the cluster (the gateway's address, the
//     implementation's endpoints, the path rule, the hostname allow-list),
//     never what its status says: these CRDs have no status subresource, so
//     whoever may edit an ExposedAPI may write its status too.
//  2. Only ExposedAPIs the DependentAPI may trust are candidates (Trust):
//     those in its own namespace, in the namespace its selector.namespace
//     names, and in the namespaces the Canvas operator shares with every
//     namespace. A tenant cannot become another namespace's provider by
//     exposing the same specification.
//  3. A selector, when given, narrows the candidates: selector.namespace to
//     that namespace, selector.releaseName to ExposedAPIs of a Component of
//     that Helm release (the Component name, label
//     oda.tmforum.org/componentName, is "<release>" or starts with
//     "<release>-"). selector.zone is accepted and ignored: the Canvas has
//     no zones.
//  4. A component may satisfy its own dependency. The Canvas's dependency
//     operator takes any ready ExposedAPI with the same specification, the
//     component's own included: its upgrade test (productcatalog-v1 to
//     -enhanced-v1, UC003-F004) reaches Complete by resolving the new
//     dependency against the component's own ExposedAPI. "Own" means the
//     same Component name in the same namespace.
//  5. Among the candidates, one in the DependentAPI's own namespace wins;
//     within it, another component's ExposedAPI wins over the
//     DependentAPI's own: a component that depends on an API it also
//     exposes means another instance of it (the Canvas's UC007-F002 reads
//     data seeded in r-cat through f-cat's resolved dependency, both in
//     namespace components), and its own is the fallback that lets it
//     complete alone. The Canvas takes the first ExposedAPI its list
//     returns, which can be the component's own; odaflow makes the
//     preference explicit. Then the first by namespace, then name, in byte
//     order. The answer depends only on the candidates, never on the order
//     the watcher saw them in, and it moves to another component's
//     ExposedAPI as soon as one becomes ready.
package dependency

import (
	"path"
	"sort"
	"strings"

	"github.com/odaflow/odaflow/api"
)

// Provider is an ExposedAPI as the matcher sees it.
type Provider struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Component is the owning Component's name (label
	// oda.tmforum.org/componentName).
	Component string   `json:"component,omitempty"`
	APIType   string   `json:"apiType"`
	SpecURLs  []string `json:"specURLs,omitempty"`
	Ready     bool     `json:"ready"`
	URL       string   `json:"url,omitempty"`
}

// Key is "<namespace>/<name>".
func (p Provider) Key() string { return p.Namespace + "/" + p.Name }

// Selector narrows the providers a DependentAPI accepts.
type Selector struct {
	Namespace   string `json:"namespace,omitempty"`
	ReleaseName string `json:"releaseName,omitempty"`
	Zone        string `json:"zone,omitempty"`
}

// Request is a DependentAPI as the matcher sees it.
type Request struct {
	Namespace string `json:"namespace"`
	// Component is the DependentAPI's own Component.
	Component string   `json:"component,omitempty"`
	SpecURL   string   `json:"specURL"`
	Selector  Selector `json:"selector"`
}

// Match returns the provider the request resolves to, if any (rules 1, 3,
// 4 and 5; the caller applies Trust).
func Match(req Request, providers []Provider) (Provider, bool) {
	return match(req, providers, func(a, b Provider) (bool, bool) {
		if aHere, bHere := a.Namespace == req.Namespace, b.Namespace == req.Namespace; aHere != bHere {
			return aHere, true
		}
		if aOwn, bOwn := req.isOwn(a), req.isOwn(b); aOwn != bOwn {
			return bOwn, true
		}
		return false, false
	})
}

// MatchV0 is Match as odaflow v0.1.0 ranked the candidates: another
// component's ExposedAPI in any namespace before the DependentAPI's own,
// then its own namespace. Only workflow histories that resolved with it
// replay it.
func MatchV0(req Request, providers []Provider) (Provider, bool) {
	return match(req, providers, func(a, b Provider) (bool, bool) {
		if aOwn, bOwn := req.isOwn(a), req.isOwn(b); aOwn != bOwn {
			return bOwn, true
		}
		if aHere, bHere := a.Namespace == req.Namespace, b.Namespace == req.Namespace; aHere != bHere {
			return aHere, true
		}
		return false, false
	})
}

// match ranks the accepted providers by first (less, decided), then by
// namespace and name.
func match(req Request, providers []Provider, first func(a, b Provider) (less, decided bool)) (Provider, bool) {
	want := NormalizeURL(req.SpecURL)
	if want == "" {
		return Provider{}, false
	}
	var candidates []Provider
	for _, p := range providers {
		if accepts(req, want, p) {
			candidates = append(candidates, p)
		}
	}
	if len(candidates) == 0 {
		return Provider{}, false
	}
	sort.Slice(candidates, func(i, j int) bool {
		a, b := candidates[i], candidates[j]
		if less, decided := first(a, b); decided {
			return less
		}
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
	return candidates[0], true
}

// Trust is the Canvas's rule on whose ExposedAPIs a DependentAPI may
// resolve to (rule 2). Deny by default: without SharedNamespaces a
// DependentAPI resolves within its own namespace, or in the one its
// selector names.
type Trust struct {
	// SharedNamespaces are globs (path.Match) of the namespaces whose
	// ExposedAPIs provide for DependentAPIs in every namespace: set by the
	// Canvas operator (watcher --shared-api-namespaces), never by a tenant.
	SharedNamespaces []string
}

// Reaches tells whether an ExposedAPI in namespace ns may provide for req:
// it is in req's own namespace, in the one req's selector.namespace names
// (the consumer's own choice to depend on that namespace), or in a shared
// namespace.
func (t Trust) Reaches(req Request, ns string) bool {
	if ns == "" {
		return false
	}
	if ns == req.Namespace || ns == req.Selector.Namespace {
		return true
	}
	for _, p := range t.SharedNamespaces {
		if ok, _ := path.Match(p, ns); ok {
			return true
		}
	}
	return false
}

// isOwn tells whether p belongs to the request's own Component.
func (req Request) isOwn(p Provider) bool {
	return req.Component != "" && p.Namespace == req.Namespace && p.Component == req.Component
}

func accepts(req Request, want string, p Provider) bool {
	if p.APIType != "openapi" || !p.Ready || p.URL == "" {
		return false
	}
	if s := req.Selector.Namespace; s != "" && p.Namespace != s {
		return false
	}
	if r := req.Selector.ReleaseName; r != "" && p.Component != r && !strings.HasPrefix(p.Component, r+"-") {
		return false
	}
	for _, u := range p.SpecURLs {
		if NormalizeURL(u) == want {
			return true
		}
	}
	return false
}

// NormalizeURL is the form specification URLs are compared in: exact, but
// for surrounding blanks (hand-written manifests carry them).
func NormalizeURL(u string) string { return strings.TrimSpace(u) }

// SpecURLs reads the specification URLs of an ExposedAPI or DependentAPI
// spec in every form the CRD versions used: an object {url} (v1), an array
// of strings (v1beta3) or an array of objects with url (v1beta4).
func SpecURLs(spec map[string]any) []string {
	var out []string
	add := func(v any) {
		switch s := v.(type) {
		case string:
			if u := NormalizeURL(s); u != "" {
				out = append(out, u)
			}
		case map[string]any:
			if u, ok := s["url"].(string); ok && NormalizeURL(u) != "" {
				out = append(out, NormalizeURL(u))
			}
		}
	}
	switch s := spec["specification"].(type) {
	case []any:
		for _, v := range s {
			add(v)
		}
	default:
		add(s)
	}
	return out
}

// RequestOf reads a DependentAPI spec; component is its Component. ok is false when it names no
// specification URL: there is nothing to match on.
func RequestOf(namespace, component string, spec map[string]any) (Request, bool) {
	urls := SpecURLs(spec)
	if len(urls) == 0 {
		return Request{Namespace: namespace, Component: component}, false
	}
	req := Request{Namespace: namespace, Component: component, SpecURL: urls[0]}
	// A selector field of the wrong type narrows nothing, as in the Canvas;
	// the problems the decoder reports are not this decision's to make.
	if d, _ := api.Decode[api.DependentAPISpec](spec, "spec"); d.Selector != nil {
		req.Selector.Namespace = d.Selector.Namespace
		req.Selector.ReleaseName = d.Selector.ReleaseName
		req.Selector.Zone = d.Selector.Zone
	}
	return req, true
}
