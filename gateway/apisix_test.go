package gateway

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestDesiredApisixExample(t *testing.T) {
	api := exampleAPI(t)
	got := desired(t, Config{Gateway: GatewayApisix}, api, parse(t, api.Spec))
	want := []Object{
		exampleVirtualService(),
		{Object: map[string]any{
			"apiVersion": "apisix.apache.org/v2",
			"kind":       "ApisixPluginConfig",
			"metadata":   unowned(exampleName, "istio-ingress", "combined-apisixpluginconfig-"+exampleNS+"."+exampleName),
			"spec": map[string]any{"plugins": []any{
				map[string]any{"name": "limit-req", "enable": true, "config": map[string]any{
					"rate": int64(100), "burst": int64(0), "key": "remote_addr", "nodelay": true,
				}},
				map[string]any{"name": "limit-count", "enable": true, "config": map[string]any{
					"count": int64(1000), "time_window": int64(60), "key": "test-identifier", "rejected_code": int64(429),
				}},
				// No oas-validation (§5.2.10): see Omissions.
				map[string]any{"name": "cors", "enable": true, "config": map[string]any{
					"allowCredentials": true,
					"allowOrigins":     []any{"https://allowed-origin.com", "https://another-allowed-origin.com"},
					"handlePreflightRequests": map[string]any{
						"enabled":      true,
						"allowHeaders": "Origin, Accept, X-Requested-With, Content-Type, Access-Control-Request-Method, Access-Control-Request-Headers",
						"allowMethods": "GET, POST, PUT, DELETE",
						"maxAge":       int64(3600),
					},
				}},
				map[string]any{"name": "key-auth", "enable": true, "config": map[string]any{"key": "header"}},
			}},
		}},
		{Object: map[string]any{
			"apiVersion": "apisix.apache.org/v2",
			"kind":       "ApisixRoute",
			"metadata":   unowned(exampleName, "istio-ingress", "apisix-api-route-"+exampleNS+"."+exampleName),
			"spec": map[string]any{"http": []any{map[string]any{
				"name":               "http-all",
				"match":              map[string]any{"paths": []any{examplePath, examplePath + "/*"}},
				"backends":           []any{map[string]any{"serviceName": "istio-ingress", "servicePort": int64(80)}},
				"plugin_config_name": "combined-apisixpluginconfig-" + exampleNS + "." + exampleName,
			}}},
		}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Desired (-want +got):\n%s", diff)
	}
}

// TestDesiredApisixUC015Names: UC015-F001/F003 look in istio-ingress for
// "apisix-api-route-<name>" and "combined-apisixpluginconfig-<name>" (§4.6);
// odaflow puts the ExposedAPI's namespace after the prefix (SharedName),
// since istio-ingress is shared by every tenant. Also without any policy.
func TestDesiredApisixUC015Names(t *testing.T) {
	api, spec := apiNamed(t, uc015Name, nil)
	got := desired(t, Config{Gateway: GatewayApisix}, api, spec)
	want := []string{
		"VirtualService components/" + uc015Name,
		"ApisixPluginConfig istio-ingress/combined-apisixpluginconfig-components." + uc015Name,
		"ApisixRoute istio-ingress/apisix-api-route-components." + uc015Name,
	}
	if diff := cmp.Diff(want, ids(got)); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]any{"plugins": []any{}}, got[1].Object["spec"]); diff != "" {
		t.Errorf("plugin config without policies (-want +got):\n%s", diff)
	}
}

func TestDesiredApisixPolicies(t *testing.T) {
	cases := map[string]struct {
		policies map[string]any
		want     []any
	}{
		"none": {want: []any{}},
		"rate limit with defaults": {
			policies: map[string]any{"rateLimit": map[string]any{"enabled": true}},
			want: []any{map[string]any{"name": "limit-req", "enable": true, "config": map[string]any{
				"rate": int64(5), "burst": int64(0), "key": "remote_addr", "nodelay": true,
			}}},
		},
		"rate limit keyed on a variable": {
			policies: map[string]any{"rateLimit": map[string]any{"enabled": true, "limit": "6", "identifier": "http_x_api_key"}},
			want: []any{map[string]any{"name": "limit-req", "enable": true, "config": map[string]any{
				"rate": int64(6), "burst": int64(0), "key": "http_x_api_key", "nodelay": true,
			}}},
		},
		"quota needs identifier and limit": {
			policies: map[string]any{"quota": map[string]any{"limit": "6"}},
			want:     []any{},
		},
		"quota keyed on IP": {
			policies: map[string]any{"quota": map[string]any{"identifier": "ip", "limit": 7.0}},
			want: []any{map[string]any{"name": "limit-count", "enable": true, "config": map[string]any{
				"count": int64(7), "time_window": int64(60), "key": "remote_addr", "rejected_code": int64(429),
			}}},
		},
		"CORS defaults": {
			policies: map[string]any{"CORS": map[string]any{"enabled": true, "handlePreflightRequests": map[string]any{"enabled": false}}},
			want: []any{map[string]any{"name": "cors", "enable": true, "config": map[string]any{
				"allowCredentials": false,
				"allowOrigins":     []any{"*"},
				"handlePreflightRequests": map[string]any{
					"enabled":      false,
					"allowHeaders": "Origin, Accept, X-Requested-With, Content-Type, Access-Control-Request-Method, Access-Control-Request-Headers",
					"allowMethods": "GET, POST, HEAD, OPTIONS",
					"maxAge":       int64(3600),
				},
			}}},
		},
		"key auth without location": {
			policies: map[string]any{"apiKeyVerification": map[string]any{"enabled": true}},
			want:     []any{map[string]any{"name": "key-auth", "enable": true, "config": map[string]any{}}},
		},
		"disabled policies and OAS validation add nothing": {
			policies: map[string]any{
				"rateLimit":     map[string]any{"enabled": false, "limit": "x"},
				"CORS":          map[string]any{"enabled": false},
				"OASValidation": map[string]any{"requestEnabled": true, "responseEnabled": true},
			},
			want: []any{},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			api, spec := apiNamed(t, "x", func(s map[string]any) {
				for k, v := range tc.policies {
					s[k] = v
				}
			})
			got := desired(t, Config{Gateway: GatewayApisix}, api, spec)
			plugins := find(t, got, "ApisixPluginConfig", "combined-apisixpluginconfig-components.x").Object["spec"].(map[string]any)["plugins"]
			if diff := cmp.Diff(tc.want, plugins); diff != "" {
				t.Errorf("plugins (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDesiredApisixRoute(t *testing.T) {
	cases := map[string]struct {
		cfg     Config
		apiType string
		path    string
		want    map[string]any
		owned   bool
	}{
		"mcp gets timeouts": {
			cfg: Config{Gateway: GatewayApisix}, apiType: "mcp", path: "/a",
			want: map[string]any{
				"name": "http-all", "match": map[string]any{"paths": []any{"/a", "/a/*"}},
				"backends":           []any{map[string]any{"serviceName": "istio-ingress", "servicePort": int64(80)}},
				"plugin_config_name": "combined-apisixpluginconfig-components.x",
				"timeout":            map[string]any{"connect": "60s", "read": "900s", "send": "900s"},
			},
		},
		"sub-second timeouts round up; trailing slash": {
			cfg: Config{Gateway: GatewayApisix, ConnectTimeout: 1500 * time.Millisecond, ReadTimeout: time.Millisecond, WriteTimeout: time.Minute}, apiType: "sse", path: "/a/",
			want: map[string]any{
				"name": "http-all", "match": map[string]any{"paths": []any{"/a/", "/a/*"}},
				"backends":           []any{map[string]any{"serviceName": "istio-ingress", "servicePort": int64(80)}},
				"plugin_config_name": "combined-apisixpluginconfig-components.x",
				"timeout":            map[string]any{"connect": "2s", "read": "1s", "send": "60s"},
			},
		},
		"in the API's namespace: owned": {
			cfg: Config{Gateway: GatewayApisix, ApisixNamespace: exampleNS, BackendService: "gw", BackendPort: 9080}, apiType: "openapi", path: "/",
			want: map[string]any{
				"name": "http-all", "match": map[string]any{"paths": []any{"/", "/*"}},
				"backends":           []any{map[string]any{"serviceName": "gw", "servicePort": int64(9080)}},
				"plugin_config_name": "combined-apisixpluginconfig-components.x",
			},
			owned: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			api, spec := apiNamed(t, "x", func(s map[string]any) { s["apiType"], s["path"] = tc.apiType, tc.path })
			got := desired(t, tc.cfg, api, spec)
			route := find(t, got, "ApisixRoute", "apisix-api-route-components.x")
			if diff := cmp.Diff([]any{tc.want}, route.Object["spec"].(map[string]any)["http"]); diff != "" {
				t.Errorf("http (-want +got):\n%s", diff)
			}
			for _, o := range got {
				if o.Owned != tc.owned && o.Kind() != "VirtualService" {
					t.Errorf("%s owned = %v, want %v", o.Kind(), o.Owned, tc.owned)
				}
			}
		})
	}
}

func TestWithTemplateApisix(t *testing.T) {
	api, spec := apiNamed(t, "x", func(s map[string]any) {
		s["CORS"] = map[string]any{"enabled": true}
	})
	cfg := Config{Gateway: GatewayApisix}
	objs := desired(t, cfg, api, spec)
	docs := []map[string]any{{
		"apiVersion": "apisix.apache.org/v2",
		"kind":       "ApisixPluginConfig",
		"spec": map[string]any{"plugins": []any{
			map[string]any{"name": "ip-restriction", "enable": true, "config": map[string]any{"whitelist": []any{"10.0.0.0/8"}}},
			map[string]any{"name": "cors", "enable": true, "config": map[string]any{"allow_origins": "**"}},
		}},
	}}
	got, err := WithTemplate(cfg, api, objs, docs)
	if err != nil {
		t.Fatal(err)
	}
	checkUnstructured(t, got)
	var names []any
	for _, p := range find(t, got, "ApisixPluginConfig", "combined-apisixpluginconfig-components.x").Object["spec"].(map[string]any)["plugins"].([]any) {
		names = append(names, p.(map[string]any)["name"])
	}
	// Template plugins first; the spec's own CORS wins over the template's.
	if diff := cmp.Diff([]any{"ip-restriction", "cors"}, names); diff != "" {
		t.Errorf("plugins (-want +got):\n%s", diff)
	}
	cors := find(t, got, "ApisixPluginConfig", "combined-apisixpluginconfig-components.x").Object["spec"].(map[string]any)["plugins"].([]any)[1]
	if _, fromTemplate := cors.(map[string]any)["config"].(map[string]any)["allow_origins"]; fromTemplate {
		t.Errorf("the template's cors replaced the spec's: %v", cors)
	}
	if n := len(find(t, objs, "ApisixPluginConfig", "combined-apisixpluginconfig-components.x").Object["spec"].(map[string]any)["plugins"].([]any)); n != 1 {
		t.Errorf("input changed: %d plugins", n)
	}

	for name, doc := range map[string]map[string]any{
		"no plugins list":    {"spec": map[string]any{}},
		"plugin has no name": {"spec": map[string]any{"plugins": []any{map[string]any{"enable": true}}}},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := WithTemplate(cfg, api, objs, []map[string]any{doc}); err == nil {
				t.Error("WithTemplate accepted a bad document")
			}
		})
	}

	// Istio has no plugins: the objects come back as they were.
	istio := desired(t, Config{Gateway: GatewayIstio}, api, spec)
	same, err := WithTemplate(Config{Gateway: GatewayIstio}, api, istio, docs)
	if err != nil || cmp.Diff(istio, same) != "" {
		t.Errorf("WithTemplate on istio = %v, %v", ids(same), err)
	}
}

func TestOmissions(t *testing.T) {
	all := exampleSpec()
	all.Policies.Template = "https://example.com/t.yaml"
	cases := map[string]struct {
		gateway string
		spec    Spec
		want    []Omission
	}{
		"istio applies no policy": {GatewayIstio, all, []Omission{
			{"spec.rateLimit", "the istio gateway does not apply API policies"},
			{"spec.apiKeyVerification", "the istio gateway does not apply API policies"},
			{"spec.CORS", "the istio gateway does not apply API policies"},
			{"spec.quota", "the istio gateway does not apply API policies"},
			{"spec.OASValidation", "the istio gateway does not apply API policies"},
			{"spec.template", "the istio gateway does not apply API policies"},
		}},
		"kong": {GatewayKong, all, []Omission{
			{"spec.quota", "Kong has no quota plugin in its open-source edition; use spec.rateLimit"},
			{"spec.OASValidation", "oas-validation is a Kong Enterprise plugin"},
		}},
		"kong-admin": {GatewayKongAdmin, all, []Omission{
			{"spec.quota", "Kong has no quota plugin in its open-source edition; use spec.rateLimit"},
			{"spec.OASValidation", "oas-validation is a Kong Enterprise plugin"},
		}},
		"apisix": {GatewayApisix, all, []Omission{
			{"spec.rateLimit.interval", "APISIX limit-req counts requests per second; the limit is applied per second"},
			{"spec.OASValidation", "oas-validator is an API7 Enterprise plugin, not part of open-source APISIX"},
		}},
		"apisix, per-second rate limit": {GatewayApisix, Spec{Policies: Policies{RateLimit: &RateLimit{Limit: 1, Interval: "second"}}}, nil},
		"no policies":                   {GatewayIstio, Spec{}, nil},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Omissions(Config{Gateway: tc.gateway}, tc.spec)); diff != "" {
				t.Errorf("Omissions (-want +got):\n%s", diff)
			}
		})
	}
}
