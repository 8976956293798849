package gateway

import (
	"testing"

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

func TestHostnameAllowed(t *testing.T) {
	lb := &Ingress{IP: "34.159.217.74", Hostname: "lb.cloud.example"}
	cases := []struct {
		name     string
		cfg      Config
		in       *Ingress
		hostname string
		want     bool
	}{
		{"no hostname uses the Canvas's address", Config{}, nil, "", true},
		{"blanks only is no hostname", Config{}, lb, "  ", true},
		{"the public hostname", Config{PublicHostname: "canvas.example.com"}, lb, "canvas.example.com", true},
		{"the public hostname in another case", Config{PublicHostname: "canvas.example.com"}, lb, "Canvas.Example.COM", true},
		{"the ingress ip", Config{}, lb, "34.159.217.74", true},
		{"the ingress host name", Config{}, lb, "lb.cloud.example", true},
		{"any other name is refused", Config{PublicHostname: "canvas.example.com"}, lb, "evil.attacker.example", false},
		{"refused while the ingress has no address", Config{}, nil, "lb.cloud.example", false},
		{"an empty ingress address is no name", Config{}, &Ingress{}, "x", false},
		{"an allow-listed name", Config{AllowedHostnames: []string{"api.example.com"}}, lb, "api.example.com", true},
		{"a glob of names", Config{AllowedHostnames: []string{"*.apps.example.com"}}, lb, "catalog.apps.example.com", true},
		{"a glob spans labels", Config{AllowedHostnames: []string{"*.apps.example.com"}}, lb, "a.b.apps.example.com", true},
		{"a glob is anchored at the end", Config{AllowedHostnames: []string{"*.apps.example.com"}}, lb, "apps.example.com.evil.example", false},
		{"a glob needs its dot", Config{AllowedHostnames: []string{"*.apps.example.com"}}, lb, "evilapps.example.com", false},
		{"a glob in upper case", Config{AllowedHostnames: []string{"*.Apps.Example.com"}}, lb, "x.apps.example.com", true},
		{"a bad glob admits nothing", Config{AllowedHostnames: []string{"["}}, lb, "[", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := HostnameAllowed(tc.cfg, tc.in, tc.hostname); got != tc.want {
				t.Fatalf("HostnameAllowed(%q) = %v, want %v", tc.hostname, got, tc.want)
			}
		})
	}
}
