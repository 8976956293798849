package workflows

import (
	"testing"

	"github.com/odaflow/odaflow/gateway"
)

func TestProviderOf(t *testing.T) {
	const path = "/ctk/tmf-api/productCatalogManagement/v4"
	const spec620 = "https://example.com/TMF620.json"
	withSpec := func(mods ...func(map[string]any)) map[string]any {
		s := apiSpec(path)
		s["specification"] = []any{map[string]any{"url": spec620}}
		for _, m := range mods {
			m(s)
		}
		return s
	}
	exposed := Exposure{Ingress: ingress, ImplementationReady: true}
	istio := gateway.Config{Gateway: gateway.GatewayIstio}
	tests := []struct {
		name        string
		spec        map[string]any
		exp         Exposure
		cfg         gateway.Config
		statusReady bool
		wantURL     string
		wantReady   bool
	}{
		{"exposed and ready", withSpec(), exposed, istio, true, "https://34.159.217.74" + path, true},
		{"the scheme of the gateway", withSpec(), exposed, gateway.Config{Gateway: gateway.GatewayApisix}, true, "http://34.159.217.74" + path, true},
		{"the public hostname", withSpec(), exposed, gateway.Config{Gateway: gateway.GatewayIstio, PublicHostname: "apis.example.com"}, true, "https://apis.example.com" + path, true},
		{"the public hostname before the ingress has an address", withSpec(), Exposure{ImplementationReady: true}, gateway.Config{Gateway: gateway.GatewayIstio, PublicHostname: "apis.example.com"}, true, "https://apis.example.com" + path, true},
		{"an allowed spec.hostname", withSpec(func(s map[string]any) { s["hostname"] = "catalog.example.com" }), exposed, istio, true, "https://catalog.example.com" + path, true},
		{"no address yet", withSpec(), Exposure{ImplementationReady: true}, istio, true, "", false},
		{"implementation not ready", withSpec(), Exposure{Ingress: ingress}, istio, true, "https://34.159.217.74" + path, false},
		{"status not ready yet holds it back", withSpec(), exposed, istio, false, "https://34.159.217.74" + path, false},
		{"a lost path conflict is no provider", withSpec(), Exposure{Ingress: ingress, ImplementationReady: true, ConflictsWith: "other/first"}, istio, true, "", false},
		{"a refused host name is no provider", withSpec(func(s map[string]any) { s["hostname"] = "evil.attacker.example" }),
			Exposure{Ingress: ingress, ImplementationReady: true, HostnameRefused: true}, istio, true, "", false},
		{"an invalid spec is no provider", withSpec(func(s map[string]any) { s["port"] = "x" }), exposed, istio, true, "", false},
		{"an invalid path is no provider", withSpec(func(s map[string]any) { s["path"] = "/" }), exposed, istio, true, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := ProviderOf("ns", "api", "ctk", tt.spec, tt.exp, tt.cfg, tt.statusReady)
			if p.URL != tt.wantURL || p.Ready != tt.wantReady {
				t.Fatalf("ProviderOf = url %q ready %v, want %q %v", p.URL, p.Ready, tt.wantURL, tt.wantReady)
			}
			if p.Key() != "ns/api" || p.Component != "ctk" || len(p.SpecURLs) != 1 || p.SpecURLs[0] != spec620 {
				t.Fatalf("ProviderOf = %+v, want ns/api of ctk serving %s", p, spec620)
			}
			if tt.wantURL != "" && p.APIType != "openapi" {
				t.Fatalf("apiType = %q", p.APIType)
			}
		})
	}
}

// The provider's URL is the one the ExposedAPI's lifecycle publishes: both
// come from gateway.APIStatus with the same settings and ingress.
func TestProviderOfURLIsTheLifecyclesURL(t *testing.T) {
	spec := apiSpec("/a/b")
	spec["developerUI"] = "/a/b/docs"
	cfg := gateway.Config{Gateway: gateway.GatewayKong, PublicHostname: "apis.example.com"}
	in := gateway.Ingress{IP: "10.0.0.9", Ports: []gateway.Port{{Name: "http", Port: 8080}}}
	parsed, err := gateway.ParseSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	status, _ := gateway.APIStatus(cfg, gateway.API{Namespace: "ns", Name: "api", UID: "u", Spec: spec}, parsed, in)
	p := ProviderOf("ns", "api", "", spec, Exposure{Ingress: &in, ImplementationReady: true}, cfg, true)
	if p.URL != status["url"] || p.URL != "https://apis.example.com:8080/a/b" {
		t.Fatalf("provider url %q, lifecycle url %v", p.URL, status["url"])
	}
}
