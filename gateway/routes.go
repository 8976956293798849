package gateway

import (
	"sort"
	"strings"
	"time"
)

// Path conflicts between ExposedAPIs are decided with the matching rules of
// the routes odaflow writes, not with a rule of its own: two claims conflict
// when one request path could be matched by both routes on some layer the
// request crosses. A claim whose route would catch another's requests (a
// VirtualService prefix "/vic" catches "/victim/...") must be refused, or
// the tenant that made it receives the other's traffic.

// Pattern is one way a route matches a request path: the path itself
// (Exact), or every path that starts with Value, character by character.
type Pattern struct {
	Value string
	Exact bool
}

// intersects: some request path matches both patterns.
func (p Pattern) intersects(q Pattern) bool {
	switch {
	case p.Exact && q.Exact:
		return p.Value == q.Value
	case p.Exact:
		return strings.HasPrefix(p.Value, q.Value)
	case q.Exact:
		return strings.HasPrefix(q.Value, p.Value)
	}
	return strings.HasPrefix(p.Value, q.Value) || strings.HasPrefix(q.Value, p.Value)
}

// Layer is a router a request crosses, with the patterns its route for a
// path prefix matches.
type Layer struct {
	Name     string
	Patterns func(path string) []Pattern
}

// The routers odaflow writes routes for.
var (
	// IstioLayer: a VirtualService http match uri.prefix is a string prefix
	// (Istio's StringMatch), so "/vic" matches "/victim".
	IstioLayer = Layer{"VirtualService uri.prefix", func(p string) []Pattern {
		return []Pattern{{Value: p}}
	}}
	// HTTPRouteLayer: Gateway API PathPrefix matches element by element,
	// a trailing slash ignored: "/abc" matches "/abc" and "/abc/...", not
	// "/abcd".
	HTTPRouteLayer = Layer{"HTTPRoute PathPrefix", func(p string) []Pattern {
		k := strings.TrimRight(p, "/")
		if k == "" {
			return []Pattern{{Value: "/"}}
		}
		return []Pattern{{Value: k, Exact: true}, {Value: k + "/"}}
	}}
	// ApisixLayer: the ApisixRoute lists the path itself and "<path>/*"
	// (see builder.apisix); APISIX's "*" suffix is a string prefix on what
	// precedes it.
	ApisixLayer = Layer{"ApisixRoute paths", func(p string) []Pattern {
		return []Pattern{{Value: p, Exact: true}, {Value: strings.TrimSuffix(p, "/") + "/"}}
	}}
	// KongAdminLayer: a Kong route path (Admin API, plain path) is a
	// string prefix.
	KongAdminLayer = Layer{"Kong route paths", func(p string) []Pattern {
		return []Pattern{{Value: p}}
	}}
)

// Layers are the routers a request crosses under a gateway, outermost
// first. Kong and APISIX forward to the Istio ingress, which routes on by
// VirtualService (see Desired), so their requests cross the VirtualService
// layer too: a claim that Kong alone would keep apart ("/vic" and
// "/victim") still collides behind it. An unknown gateway ("" included)
// gets every layer: the strictest rule, for callers that do not know which
// gateway serves the routes (the watcher).
func Layers(gw string) []Layer {
	switch gw {
	case GatewayIstio:
		return []Layer{IstioLayer}
	case GatewayKong:
		return []Layer{HTTPRouteLayer, IstioLayer}
	case GatewayApisix:
		return []Layer{ApisixLayer, IstioLayer}
	case GatewayKongAdmin:
		return []Layer{KongAdminLayer}
	}
	return []Layer{IstioLayer, HTTPRouteLayer, ApisixLayer, KongAdminLayer}
}

// RoutesOverlap reports whether one request path can match the routes of
// both path prefixes on a layer of gw.
func RoutesOverlap(gw, a, b string) bool {
	if a == "" || b == "" {
		return false
	}
	for _, l := range Layers(gw) {
		for _, p := range l.Patterns(a) {
			for _, q := range l.Patterns(b) {
				if p.intersects(q) {
					return true
				}
			}
		}
	}
	return false
}

// Claim is an ExposedAPI's claim on a path prefix, with what decides who
// keeps it. Every field but Held comes from metadata the apiserver sets or
// the tenant's own spec; Held from the status odaflow wrote.
type Claim struct {
	Namespace, Name string
	// UID breaks ties: the apiserver picks it at random, so a tenant cannot
	// choose it to win a race.
	UID  string
	Path string
	// Owner names what the claim belongs to, qualified by its namespace
	// (a tenant cannot name another namespace's Component): one Component
	// may nest its own APIs.
	Owner string
	// Created is metadata.creationTimestamp (whole seconds).
	Created time.Time
	// Held: the API holds its route on Path (odaflow exposed it there and
	// has not taken it back). A held claim is never evicted by a new one.
	Held bool
	// Deleting claims are on their way out and keep nothing.
	Deleting bool
}

// ID is the claim's namespace/name.
func (c Claim) ID() string { return c.Namespace + "/" + c.Name }

// PathKey is the path prefix with no trailing slash (the root stays "/"):
// "/a" and "/a/" are the same route.
func PathKey(path string) string {
	if k := strings.TrimRight(path, "/"); k != "" || path == "" {
		return k
	}
	return "/"
}

// ClaimsConflict reports whether two claims cannot both be exposed under
// gw: the same prefix always conflicts (one route would shadow the other);
// overlapping routes conflict between different owners, while one
// Component may nest its own APIs.
func ClaimsConflict(gw string, a, b Claim) bool {
	if a.Path == "" || b.Path == "" {
		return false
	}
	if PathKey(a.Path) == PathKey(b.Path) {
		return true
	}
	return a.Owner != b.Owner && RoutesOverlap(gw, a.Path, b.Path)
}

// Precedes reports whether claim a keeps a contested path against b: a
// held claim before a new one, then the older, then the smaller uid. The
// namespace and name play no part: a tenant picks those, and would pick
// one that sorts first. creationTimestamp has whole seconds, so claims made
// in the same second are ordered by uid, which no tenant can choose.
func Precedes(a, b Claim) bool {
	if a.Held != b.Held {
		return a.Held
	}
	if !a.Created.Equal(b.Created) {
		return a.Created.Before(b.Created)
	}
	if a.UID != b.UID {
		return a.UID < b.UID
	}
	return a.ID() < b.ID() // the same object twice, or uids unknown
}

// Winner is the claim that keeps a path among claims that all conflict
// with one another, ignoring deleting ones; ok is false when none is left.
func Winner(claims []Claim) (winner Claim, ok bool) {
	var live []Claim
	for _, c := range claims {
		if !c.Deleting {
			live = append(live, c)
		}
	}
	if len(live) == 0 {
		return Claim{}, false
	}
	sort.Slice(live, func(i, j int) bool { return Precedes(live[i], live[j]) })
	return live[0], true
}

// Evictor is the claim that keeps self off its path under gw: the first,
// by Precedes, of the live rivals that conflict with self and precede it.
// ok is false when self may be exposed. Rivals are judged one by one, not
// as a group: overlaps are not transitive ("/a" and "/a/b/c" conflict with
// "/a/b" but, within one Component, not with each other).
func Evictor(gw string, self Claim, rivals []Claim) (evictor Claim, ok bool) {
	if self.Deleting {
		return Claim{}, false
	}
	var beaten []Claim
	for _, r := range rivals {
		if r.Deleting || (r.Namespace == self.Namespace && r.Name == self.Name) {
			continue
		}
		if ClaimsConflict(gw, self, r) && Precedes(r, self) {
			beaten = append(beaten, r)
		}
	}
	return Winner(beaten)
}
