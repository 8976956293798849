package gateway

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestAPIStatus(t *testing.T) {
	api := exampleAPI(t)
	spec := parse(t, api.Spec)
	noUI := spec
	noUI.DeveloperUI = ""
	withHost := spec
	withHost.Hostname = "catalog.example.com"
	base := func(extra map[string]any) map[string]any {
		m := map[string]any{
			"name":           exampleName,
			"uid":            exampleUID,
			"path":           examplePath,
			"port":           int64(8080),
			"implementation": "r1-prodcatapi",
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	istioPorts := []Port{{Name: "status-port", Port: 15021}, {Name: "http2", Port: 80}, {Name: "https", Port: 443}}
	cases := map[string]struct {
		cfg    Config
		spec   Spec
		in     Ingress
		want   map[string]any
		wantOK bool
	}{
		"load-balancer IP": {Config{Gateway: GatewayIstio}, spec, Ingress{IP: "34.159.217.74", Ports: istioPorts}, base(map[string]any{
			"url":         "https://34.159.217.74" + examplePath,
			"developerUI": "https://34.159.217.74" + examplePath + "/docs",
			"ip":          "34.159.217.74",
		}), true},
		"load-balancer hostname": {Config{Gateway: GatewayIstio}, noUI, Ingress{Hostname: "lb.elb.amazonaws.com", Ports: istioPorts}, base(map[string]any{
			"url": "https://lb.elb.amazonaws.com" + examplePath,
			"ip":  "lb.elb.amazonaws.com",
		}), true},
		"IP preferred to hostname": {Config{Gateway: GatewayIstio}, noUI, Ingress{IP: "10.0.0.1", Hostname: "lb.example.com"}, base(map[string]any{
			"url": "https://10.0.0.1" + examplePath,
			"ip":  "10.0.0.1",
		}), true},
		"http port 8443: suffix": {Config{Gateway: GatewayIstio}, noUI, Ingress{IP: "10.0.0.1", Ports: []Port{{Name: "https", Port: 9443}, {Name: "http", Port: 8443}}}, base(map[string]any{
			"url": "https://10.0.0.1:8443" + examplePath,
			"ip":  "10.0.0.1",
		}), true},
		"http2 port 443: no suffix": {Config{Gateway: GatewayIstio}, noUI, Ingress{IP: "10.0.0.1", Ports: []Port{{Name: "http2", Port: 443}, {Name: "http", Port: 8080}}}, base(map[string]any{
			"url": "https://10.0.0.1" + examplePath,
			"ip":  "10.0.0.1",
		}), true},
		"no http port: no suffix": {Config{Gateway: GatewayIstio}, noUI, Ingress{IP: "10.0.0.1", Ports: []Port{{Name: "tls", Port: 8443}}}, base(map[string]any{
			"url": "https://10.0.0.1" + examplePath,
			"ip":  "10.0.0.1",
		}), true},
		"public hostname overrides the address": {Config{Gateway: GatewayIstio, PublicHostname: "canvas.example.com"}, spec, Ingress{IP: "10.0.0.1", Ports: istioPorts}, base(map[string]any{
			"url":         "https://canvas.example.com" + examplePath,
			"developerUI": "https://canvas.example.com" + examplePath + "/docs",
			"ip":          "canvas.example.com",
		}), true},
		"public hostname while the load balancer is pending": {Config{Gateway: GatewayIstio, PublicHostname: "canvas.example.com"}, noUI, Ingress{}, base(map[string]any{
			"url": "https://canvas.example.com" + examplePath,
			"ip":  "canvas.example.com",
		}), true},
		"spec hostname: URL host, ip stays the address": {Config{Gateway: GatewayIstio}, withHost, Ingress{IP: "10.0.0.1", Ports: []Port{{Name: "http", Port: 8080}}}, base(map[string]any{
			"url":         "https://catalog.example.com:8080" + examplePath,
			"developerUI": "https://catalog.example.com:8080" + examplePath + "/docs",
			"ip":          "10.0.0.1",
		}), true},
		"apisix: http": {Config{Gateway: GatewayApisix}, noUI, Ingress{IP: "10.0.0.2", Ports: []Port{{Name: "http", Port: 9080}}}, base(map[string]any{
			"url": "http://10.0.0.2:9080" + examplePath,
			"ip":  "10.0.0.2",
		}), true},
		"scheme from config": {Config{Gateway: GatewayKong, Scheme: "http"}, noUI, Ingress{IP: "10.0.0.3"}, base(map[string]any{
			"url": "http://10.0.0.3" + examplePath,
			"ip":  "10.0.0.3",
		}), true},
		"IPv6 address": {Config{Gateway: GatewayIstio}, noUI, Ingress{IP: "2001:db8::1", Ports: []Port{{Name: "http", Port: 8080}}}, base(map[string]any{
			"url": "https://[2001:db8::1]:8080" + examplePath,
			"ip":  "2001:db8::1",
		}), true},
		"no address yet": {Config{Gateway: GatewayIstio}, spec, Ingress{Ports: istioPorts}, base(nil), false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, ok := APIStatus(tc.cfg, api, tc.spec, tc.in)
			if ok != tc.wantOK {
				t.Errorf("ok = %v, want %v", ok, tc.wantOK)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
		})
	}
}

func TestConflicting(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	claim := func(ns, name, path string, created time.Time) Claim {
		return Claim{Namespace: ns, Name: name, Host: "*", Path: path, Created: created}
	}
	me := claim("components", "b", "/api/v4", t0)
	cases := map[string]struct {
		me     Claim
		others []Claim
		want   *Claim
	}{
		"alone":                                 {me, nil, nil},
		"only me in the list":                   {me, []Claim{me}, nil},
		"other paths and hosts":                 {me, []Claim{claim("components", "a", "/api/v5", t0.Add(-time.Hour)), {Namespace: "x", Name: "a", Host: "other.example.com", Path: "/api/v4", Created: t0.Add(-time.Hour)}}, nil},
		"a longer prefix is not the same claim": {me, []Claim{claim("components", "a", "/api/v4/extra", t0.Add(-time.Hour))}, nil},
		"earlier claim wins":                    {me, []Claim{claim("components", "z", "/api/v4", t0.Add(-time.Second))}, ptr(claim("components", "z", "/api/v4", t0.Add(-time.Second)))},
		"I was first":                           {me, []Claim{claim("components", "a", "/api/v4", t0.Add(time.Second))}, nil},
		"same time: namespace order":            {me, []Claim{claim("alpha", "z", "/api/v4", t0)}, ptr(claim("alpha", "z", "/api/v4", t0))},
		"same time and namespace: name order":   {me, []Claim{claim("components", "a", "/api/v4", t0)}, ptr(claim("components", "a", "/api/v4", t0))},
		"same time, I come first by name":       {me, []Claim{claim("components", "c", "/api/v4", t0)}, nil},
		"trailing slash and host case do not count": {
			Claim{Namespace: "n", Name: "b", Host: "API.example.com", Path: "/api/v4/", Created: t0},
			[]Claim{{Namespace: "n", Name: "a", Host: "api.example.com", Path: "/api/v4", Created: t0.Add(-time.Minute)}},
			&Claim{Namespace: "n", Name: "a", Host: "api.example.com", Path: "/api/v4", Created: t0.Add(-time.Minute)},
		},
		"the earliest of several, whatever the order": {me, []Claim{
			claim("components", "c", "/api/v4", t0.Add(-time.Minute)),
			claim("components", "d", "/api/v4", t0.Add(-time.Hour)),
			claim("components", "e", "/other", t0.Add(-2*time.Hour)),
		}, ptr(claim("components", "d", "/api/v4", t0.Add(-time.Hour)))},
		"root path": {claim("n", "b", "/", t0), []Claim{claim("n", "a", "/", t0.Add(-time.Minute))}, ptr(claim("n", "a", "/", t0.Add(-time.Minute)))},
		"no path":   {claim("n", "b", "", t0), []Claim{claim("n", "a", "", t0.Add(-time.Minute))}, nil},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Conflicting(tc.me, tc.others)); diff != "" {
				t.Errorf("Conflicting (-want +got):\n%s", diff)
			}
		})
	}
	// Symmetry: of two rivals, exactly one loses to the other.
	a, b := claim("n", "a", "/x", t0), claim("m", "b", "/x", t0)
	if (Conflicting(a, []Claim{b}) == nil) == (Conflicting(b, []Claim{a}) == nil) {
		t.Error("both or neither of two rivals win")
	}
}

func TestClaimOf(t *testing.T) {
	api, spec := apiNamed(t, "x", nil)
	t0 := time.Unix(0, 0)
	want := Claim{Namespace: exampleNS, Name: "x", Host: "*", Path: spec.Path, Created: t0}
	if diff := cmp.Diff(want, ClaimOf(Config{Gateway: GatewayIstio}, api, spec, t0)); diff != "" {
		t.Errorf("ClaimOf (-want +got):\n%s", diff)
	}
	want.Host = "api.example.com"
	if diff := cmp.Diff(want, ClaimOf(Config{Gateway: GatewayIstio, PublicHostname: "api.example.com"}, api, spec, t0)); diff != "" {
		t.Errorf("ClaimOf with public host (-want +got):\n%s", diff)
	}
}

func ptr[T any](v T) *T { return &v }
