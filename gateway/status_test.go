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
