package gateway

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
)

// TestLayerMatching checks each layer's patterns against the router's own
// rule on concrete requests, so that the overlap rules below rest on what
// the gateways do.
func TestLayerMatching(t *testing.T) {
	matches := func(l Layer, route, request string) bool {
		for _, p := range l.Patterns(route) {
			if p.Exact && request == p.Value || !p.Exact && len(request) >= len(p.Value) && request[:len(p.Value)] == p.Value {
				return true
			}
		}
		return false
	}
	tests := []struct {
		layer          Layer
		route, request string
		want           bool
	}{
		{IstioLayer, "/vic", "/victim/api", true}, // the hijack: a string prefix
		{IstioLayer, "/vic", "/vic", true},
		{IstioLayer, "/a/", "/a", false},
		{HTTPRouteLayer, "/vic", "/victim/api", false}, // Gateway API: element-wise
		{HTTPRouteLayer, "/abc", "/abc", true},
		{HTTPRouteLayer, "/abc", "/abc/", true},
		{HTTPRouteLayer, "/abc/", "/abc", true}, // a trailing slash is ignored
		{HTTPRouteLayer, "/abc", "/abc/def", true},
		{HTTPRouteLayer, "/", "/anything", true},
		{ApisixLayer, "/vic", "/victim", false}, // "/vic/*" wants the slash
		{ApisixLayer, "/vic", "/vic", true},
		{ApisixLayer, "/vic", "/vic/x", true},
		{ApisixLayer, "/vic/", "/vic/x", true},
		{KongAdminLayer, "/vic", "/victim", true},
	}
	for _, tt := range tests {
		if got := matches(tt.layer, tt.route, tt.request); got != tt.want {
			t.Errorf("%s: route %q matches %q = %v, want %v", tt.layer.Name, tt.route, tt.request, got, tt.want)
		}
	}
}

func TestRoutesOverlap(t *testing.T) {
	tests := []struct {
		name string
		gw   string
		a, b string
		want bool
	}{
		{"istio: a string prefix overlaps", GatewayIstio, "/vic", "/victim/api", true},
		{"istio: same path", GatewayIstio, "/x/api", "/x/api", true},
		{"istio: nested by segment", GatewayIstio, "/x", "/x/api", true},
		{"istio: disjoint", GatewayIstio, "/x/a", "/x/b", false},
		{"istio: the root takes everything", GatewayIstio, "/", "/x", true},
		{"istio: a trailing slash is still a prefix of longer paths", GatewayIstio, "/x/", "/x/api", true},
		{"istio: neither a prefix of the other", GatewayIstio, "/x/api2", "/x/api3", false},
		// Kong alone keeps "/vic" and "/victim" apart, but its requests go on
		// through the Istio ingress, where the VirtualServices collide.
		{"kong: a string prefix overlaps behind Kong", GatewayKong, "/vic", "/victim/api", true},
		{"kong: nested by segment", GatewayKong, "/x", "/x/api", true},
		{"kong: disjoint", GatewayKong, "/x/a", "/x/b", false},
		{"apisix: a string prefix overlaps behind APISIX", GatewayApisix, "/vic", "/victim/api", true},
		{"apisix: disjoint", GatewayApisix, "/x/a", "/x/b", false},
		{"kong-admin: a string prefix", GatewayKongAdmin, "/vic", "/victim/api", true},
		{"kong-admin: disjoint", GatewayKongAdmin, "/x/a", "/x/b", false},
		{"unknown gateway: the strictest", "", "/vic", "/victim", true},
		{"unknown gateway: disjoint", "", "/x/a", "/x/b", false},
		{"no path", GatewayIstio, "", "/x", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := RoutesOverlap(tt.gw, tt.a, tt.b); got != tt.want {
				t.Errorf("RoutesOverlap(%s, %q, %q) = %v, want %v", tt.gw, tt.a, tt.b, got, tt.want)
			}
			if got := RoutesOverlap(tt.gw, tt.b, tt.a); got != tt.want {
				t.Errorf("RoutesOverlap(%s, %q, %q) = %v, want %v (not symmetric)", tt.gw, tt.b, tt.a, got, tt.want)
			}
		})
	}
	// The layers one by one: Kong's HTTPRoute and APISIX alone would let
	// "/vic" and "/victim" be.
	for _, l := range []Layer{HTTPRouteLayer, ApisixLayer} {
		for _, p := range l.Patterns("/vic") {
			for _, q := range l.Patterns("/victim") {
				if p.intersects(q) {
					t.Errorf("%s: %v and %v intersect; the layer matches element-wise", l.Name, p, q)
				}
			}
		}
	}
}

func TestClaimsConflict(t *testing.T) {
	c := func(path, owner string) Claim { return Claim{Namespace: "ns", Name: path, Path: path, Owner: owner} }
	tests := []struct {
		name string
		a, b Claim
		want bool
	}{
		{"same path, other Component", c("/x/api", "c1"), c("/x/api", "c2"), true},
		{"same path, same Component", c("/x/api", "c1"), c("/x/api", "c1"), true},
		{"trailing slash does not count", c("/x/api/", "c1"), c("/x/api", "c2"), true},
		{"a prefix of another Component's path", c("/x", "c2"), c("/x/api", "c1"), true},
		{"a string prefix of another Component's path", c("/vic", "attacker"), c("/victim/api", "victim"), true},
		{"a Component nests its own APIs", c("/x", "c1"), c("/x/api", "c1"), false},
		{"disjoint paths", c("/x/a", "c1"), c("/x/b", "c2"), false},
		{"no path", c("", "c1"), c("/x", "c2"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ClaimsConflict(GatewayIstio, tt.a, tt.b); got != tt.want {
				t.Errorf("ClaimsConflict = %v, want %v", got, tt.want)
			}
			if got := ClaimsConflict(GatewayIstio, tt.b, tt.a); got != tt.want {
				t.Errorf("ClaimsConflict (swapped) = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestWinner(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	c := func(ns, name, uid string, created time.Time, held, deleting bool) Claim {
		return Claim{Namespace: ns, Name: name, UID: uid, Path: "/p", Created: created, Held: held, Deleting: deleting}
	}
	tests := []struct {
		name   string
		claims []Claim
		want   string
	}{
		{"no claims", nil, ""},
		{"one claim", []Claim{c("a", "x", "1", t0, false, false)}, "a/x"},
		{"the older wins", []Claim{c("a", "new", "1", t0.Add(time.Second), false, false), c("z", "old", "2", t0, false, false)}, "z/old"},
		// Attack: a later claim in the same second, from a namespace that
		// sorts first, must not take a held path.
		{"a held claim keeps its path against one of the same second", []Claim{
			c("victim", "api", "9", t0, true, false), c("aaa", "api", "0", t0, false, false),
		}, "victim/api"},
		{"a held claim keeps its path against an older new claim", []Claim{
			c("victim", "api", "9", t0.Add(time.Hour), true, false), c("aaa", "api", "0", t0, false, false),
		}, "victim/api"},
		{"a tie goes by uid, not namespace", []Claim{
			c("a", "x", "b-uid", t0, false, false), c("z", "y", "a-uid", t0, false, false),
		}, "z/y"},
		{"two held claims: the older", []Claim{
			c("a", "young", "1", t0.Add(time.Second), true, false), c("z", "old", "2", t0, true, false),
		}, "z/old"},
		{"a deleting claim is ignored even if held and older", []Claim{
			c("a", "leaving", "1", t0, true, true), c("b", "staying", "2", t0.Add(time.Minute), false, false),
		}, "b/staying"},
		{"only deleting claims", []Claim{c("a", "x", "1", t0, false, true), c("b", "y", "2", t0, false, true)}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			check := func(claims []Claim) {
				w, ok := Winner(claims)
				got := ""
				if ok {
					got = w.ID()
				}
				if got != tt.want {
					t.Errorf("Winner = %q, want %q", got, tt.want)
				}
			}
			check(tt.claims)
			rev := make([]Claim, len(tt.claims))
			for i, x := range tt.claims {
				rev[len(rev)-1-i] = x
			}
			check(rev)
		})
	}
}

func TestEvictor(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	victim := Claim{Namespace: "victim", Name: "api", UID: "9", Path: "/victim/api", Owner: "victim/Component/v", Created: t0, Held: true}
	tests := []struct {
		name    string
		self    Claim
		rivals  []Claim
		evictor string
	}{
		{"the victim keeps its path against a string-prefix claim",
			victim, []Claim{{Namespace: "attacker", Name: "api", UID: "0", Path: "/vic", Owner: "attacker/Component/a", Created: t0}}, ""},
		{"the string-prefix claim is refused",
			Claim{Namespace: "attacker", Name: "api", UID: "0", Path: "/vic", Owner: "attacker/Component/a", Created: t0},
			[]Claim{victim}, "victim/api"},
		{"a same-second claim on the exact path is refused",
			Claim{Namespace: "aaa", Name: "api", UID: "0", Path: "/victim/api", Owner: "aaa/Component/a", Created: t0},
			[]Claim{victim}, "victim/api"},
		{"no conflict, no evictor",
			Claim{Namespace: "other", Name: "api", UID: "0", Path: "/other/api", Owner: "other/Component/o", Created: t0},
			[]Claim{victim}, ""},
		{"a deleting claim evicts no one",
			Claim{Namespace: "new", Name: "api", UID: "0", Path: "/victim/api", Owner: "new/Component/n", Created: t0.Add(time.Hour)},
			[]Claim{{Namespace: "victim", Name: "api", UID: "9", Path: "/victim/api", Owner: "victim/Component/v", Created: t0, Held: true, Deleting: true}}, ""},
		{"itself is no rival",
			victim, []Claim{victim}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, ok := Evictor(GatewayIstio, tt.self, tt.rivals)
			got := ""
			if ok {
				got = e.ID()
			}
			if got != tt.evictor {
				t.Errorf("Evictor = %q, want %q", got, tt.evictor)
			}
		})
	}
}

func TestSharedName(t *testing.T) {
	long := strings.Repeat("a", 240)
	tests := []struct {
		name            string
		namespace, api  string
		want            string
		otherNamespace  string
		otherAPI        string
		wantOtherDiffer bool
	}{
		{name: "namespace and name", namespace: "components", api: "r1-api", want: "apisix-api-route-components.r1-api"},
		// Without the dot, these two would both be "…-a-b-c".
		{name: "a namespace cannot spell another's", namespace: "a-b", api: "c", want: "apisix-api-route-a-b.c",
			otherNamespace: "a", otherAPI: "b-c", wantOtherDiffer: true},
		{name: "same API name, other tenant", namespace: "victim", api: "r1-api", want: "apisix-api-route-victim.r1-api",
			otherNamespace: "attacker", otherAPI: "r1-api", wantOtherDiffer: true},
		{name: "too long: cut, with a hash", namespace: "components", api: long,
			otherNamespace: "components", otherAPI: long + "b", wantOtherDiffer: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := SharedName("apisix-api-route-", tt.namespace, tt.api)
			if tt.want != "" && got != tt.want {
				t.Errorf("SharedName = %q, want %q", got, tt.want)
			}
			if msgs := validation.IsDNS1123Subdomain(got); len(msgs) > 0 {
				t.Errorf("SharedName = %q: %v", got, msgs)
			}
			if tt.otherAPI != "" {
				other := SharedName("apisix-api-route-", tt.otherNamespace, tt.otherAPI)
				if (other != got) != tt.wantOtherDiffer {
					t.Errorf("SharedName for %s/%s = %q and for %s/%s = %q", tt.namespace, tt.api, got, tt.otherNamespace, tt.otherAPI, other)
				}
			}
		})
	}
	// A cut that leaves a "." or "-" before the hash still gives a valid name.
	for n := 200; n < 260; n++ {
		name := strings.Repeat("a.", n)[:n] + "b"
		if got := SharedName("combined-apisixpluginconfig-", "ns", name); len(validation.IsDNS1123Subdomain(got)) > 0 {
			t.Errorf("SharedName(%q) = %q: invalid", name, got)
		}
	}
}

func TestOwns(t *testing.T) {
	tests := []struct {
		name        string
		annotations map[string]string
		want        bool
	}{
		{"written for this API", map[string]string{AnnotationExposedAPI: "victim/api"}, true},
		{"written for another API", map[string]string{AnnotationExposedAPI: "attacker/api"}, false},
		{"no annotation: no one odaflow knows", nil, false},
		{"same name, other namespace", map[string]string{AnnotationExposedAPI: "victim2/api"}, false},
	}
	for _, tt := range tests {
		if got := Owns(tt.annotations, "victim", "api"); got != tt.want {
			t.Errorf("%s: Owns = %v, want %v", tt.name, got, tt.want)
		}
	}
}
