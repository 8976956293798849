package gateway

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const examplePath = "/r1-productcatalogmanagement/tmf-api/productCatalogManagement/v4"

func kongPluginObject(name, plugin string, config map[string]any) Object {
	return Object{Owned: true, Object: map[string]any{
		"apiVersion": "configuration.konghq.com/v1",
		"kind":       "KongPlugin",
		"metadata":   owned(exampleName, name, nil),
		"plugin":     plugin,
		"config":     config,
	}}
}

func TestDesiredKongExample(t *testing.T) {
	api := exampleAPI(t)
	got := desired(t, Config{Gateway: GatewayKong}, api, parse(t, api.Spec))
	want := []Object{
		exampleVirtualService(),
		{Owned: false, Object: map[string]any{
			"apiVersion": "gateway.networking.k8s.io/v1beta1",
			"kind":       "ReferenceGrant",
			"metadata":   unowned(exampleName, "istio-ingress", "kong-ref-grant-"+exampleNS+"."+exampleName),
			"spec": map[string]any{
				"from": []any{map[string]any{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "namespace": "components"}},
				"to":   []any{map[string]any{"group": "", "kind": "Service", "name": "istio-ingress"}},
			},
		}},
		kongPluginObject("rate-limit-"+exampleName, "rate-limiting", map[string]any{"minute": int64(100), "policy": "local"}),
		kongPluginObject("apiauthentication-"+exampleName, "jwt", map[string]any{
			"uri_param_names":  []any{"jwt"},
			"cookie_names":     []any{"token"},
			"claims_to_verify": []any{"exp"},
			"key_claim_name":   "iss",
			"secret_is_base64": false,
		}),
		kongPluginObject("cors-"+exampleName, "cors", map[string]any{
			"methods":     []any{"GET", "POST", "PUT", "DELETE"},
			"headers":     []any{"Origin", "Accept", "X-Requested-With", "Content-Type", "Access-Control-Request-Method", "Access-Control-Request-Headers"},
			"origins":     []any{"https://allowed-origin.com", "https://another-allowed-origin.com"},
			"credentials": true,
			"max_age":     int64(3600),
		}),
		{Owned: true, Object: map[string]any{
			"apiVersion": "gateway.networking.k8s.io/v1",
			"kind":       "HTTPRoute",
			"metadata": owned(exampleName, "kong-api-route-"+exampleName, map[string]any{
				"konghq.com/strip-path":                 "false",
				"konghq.com/protocols":                  "https",
				"konghq.com/https-redirect-status-code": "301",
				"konghq.com/plugins":                    "rate-limit-" + exampleName + ",apiauthentication-" + exampleName + ",cors-" + exampleName,
			}),
			"spec": map[string]any{
				"parentRefs": []any{map[string]any{"name": "kong", "namespace": "components"}},
				"rules": []any{map[string]any{
					"matches": []any{map[string]any{"path": map[string]any{"type": "PathPrefix", "value": examplePath}}},
					"backendRefs": []any{map[string]any{
						"name": "istio-ingress", "kind": "Service", "port": int64(80), "namespace": "istio-ingress",
					}},
				}},
			},
		}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Desired (-want +got):\n%s", diff)
	}
}

// TestDesiredKongUC015Names: the names UC015-F002/F004 look for (§4.6), and
// the versioned names odaflow's own ExposedAPIs get.
func TestDesiredKongUC015Names(t *testing.T) {
	for _, name := range []string{uc015Name, uc015Name + "-v4"} {
		t.Run(name, func(t *testing.T) {
			api, spec := apiNamed(t, name, func(s map[string]any) {
				s["apiKeyVerification"] = map[string]any{"enabled": true}
				s["rateLimit"] = map[string]any{"enabled": true, "limit": "6", "interval": "pm"}
			})
			got := desired(t, Config{Gateway: GatewayKong}, api, spec)
			want := []string{
				"VirtualService components/" + name,
				"ReferenceGrant istio-ingress/kong-ref-grant-components." + name, // shared: with its namespace
				"KongPlugin components/rate-limit-" + name,
				"KongPlugin components/apiauthentication-" + name,
				"HTTPRoute components/kong-api-route-" + name,
			}
			if diff := cmp.Diff(want, ids(got)); diff != "" {
				t.Errorf("objects (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(map[string]any{"minute": int64(6), "policy": "local"}, find(t, got, "KongPlugin", "rate-limit-"+name).Object["config"]); diff != "" {
				t.Errorf("rate-limit config (-want +got):\n%s", diff)
			}
			var refs []string
			for _, r := range Managed(Config{Gateway: GatewayKong}, api) {
				refs = append(refs, r.Kind+" "+r.Namespace+"/"+r.Name)
			}
			for _, id := range ids(got) {
				if !strings.Contains(strings.Join(refs, "\n"), id) {
					t.Errorf("Managed does not list desired %s", id)
				}
			}
		})
	}
}

// TestDesiredKongPolicies: each policy on its own; disabled ones leave no
// plugin and no annotation entry.
func TestDesiredKongPolicies(t *testing.T) {
	const name = "x"
	cases := map[string]struct {
		policies map[string]any
		plugins  map[string]map[string]any // KongPlugin name → config
		order    string                    // konghq.com/plugins
	}{
		"no policies": {},
		"all disabled": {policies: map[string]any{
			"rateLimit":          map[string]any{"enabled": false, "limit": "5"},
			"apiKeyVerification": map[string]any{"enabled": false},
			"CORS":               map[string]any{"enabled": false},
		}},
		"rate limit per second": {
			policies: map[string]any{"rateLimit": map[string]any{"enabled": true, "limit": "10", "interval": "ps"}},
			plugins:  map[string]map[string]any{"rate-limit-x": {"second": int64(10), "policy": "local"}},
			order:    "rate-limit-x",
		},
		"rate limit per hour": {
			policies: map[string]any{"rateLimit": map[string]any{"enabled": true, "limit": 10.0, "interval": "ph"}},
			plugins:  map[string]map[string]any{"rate-limit-x": {"hour": int64(10), "policy": "local"}},
			order:    "rate-limit-x",
		},
		"rate limit per day": {
			policies: map[string]any{"rateLimit": map[string]any{"enabled": true, "limit": "10", "interval": "pd"}},
			plugins:  map[string]map[string]any{"rate-limit-x": {"day": int64(10), "policy": "local"}},
			order:    "rate-limit-x",
		},
		"rate limit without interval: per minute": {
			policies: map[string]any{"rateLimit": map[string]any{"enabled": true, "limit": "10"}},
			plugins:  map[string]map[string]any{"rate-limit-x": {"minute": int64(10), "policy": "local"}},
			order:    "rate-limit-x",
		},
		"CORS with no other field: the defaults": {
			policies: map[string]any{"CORS": map[string]any{"enabled": true}},
			plugins: map[string]map[string]any{"cors-x": {
				"methods":     []any{"GET", "POST", "HEAD", "OPTIONS"},
				"headers":     []any{"Origin", "Accept", "X-Requested-With", "Content-Type", "Access-Control-Request-Method", "Access-Control-Request-Headers"},
				"origins":     []any{"*"},
				"credentials": false,
				"max_age":     int64(3600),
			}},
			order: "cors-x",
		},
		"CORS and authentication, in the Canvas order": {
			policies: map[string]any{
				"CORS":               map[string]any{"enabled": true, "allowOrigins": "https://a.example", "handlePreflightRequests": map[string]any{"allowMethods": "GET,PUT", "maxAge": 10.0}},
				"apiKeyVerification": map[string]any{"enabled": true, "location": "query"},
			},
			plugins: map[string]map[string]any{
				"apiauthentication-x": {
					"uri_param_names": []any{"jwt"}, "cookie_names": []any{"token"}, "claims_to_verify": []any{"exp"},
					"key_claim_name": "iss", "secret_is_base64": false,
				},
				"cors-x": {
					"methods":     []any{"GET", "PUT"},
					"headers":     []any{"Origin", "Accept", "X-Requested-With", "Content-Type", "Access-Control-Request-Method", "Access-Control-Request-Headers"},
					"origins":     []any{"https://a.example"},
					"credentials": false,
					"max_age":     int64(10),
				},
			},
			order: "apiauthentication-x,cors-x",
		},
		"quota and OAS validation make no Kong plugin": {policies: map[string]any{
			"quota":         map[string]any{"identifier": "q", "limit": "5"},
			"OASValidation": map[string]any{"requestEnabled": true},
		}},
	}
	for tcName, tc := range cases {
		t.Run(tcName, func(t *testing.T) {
			api, spec := apiNamed(t, name, func(s map[string]any) {
				for k, v := range tc.policies {
					s[k] = v
				}
			})
			got := desired(t, Config{Gateway: GatewayKong}, api, spec)
			plugins := map[string]map[string]any{}
			for _, o := range got {
				if o.Kind() == "KongPlugin" {
					plugins[o.Name()] = o.Object["config"].(map[string]any)
				}
			}
			if len(plugins) == 0 {
				plugins = nil
			}
			if diff := cmp.Diff(tc.plugins, plugins); diff != "" {
				t.Errorf("plugins (-want +got):\n%s", diff)
			}
			ann := find(t, got, "HTTPRoute", "kong-api-route-x").Object["metadata"].(map[string]any)["annotations"].(map[string]any)
			order, present := ann["konghq.com/plugins"]
			if tc.order == "" && present {
				t.Errorf("konghq.com/plugins = %q, want no annotation", order)
			}
			if tc.order != "" && order != tc.order {
				t.Errorf("konghq.com/plugins = %v, want %q", order, tc.order)
			}
		})
	}
}

func TestDesiredKongRateLimitWithoutLimit(t *testing.T) {
	api, spec := apiNamed(t, "x", func(s map[string]any) {
		s["rateLimit"] = map[string]any{"enabled": true, "identifier": "IP"}
	})
	const want = "spec.rateLimit.limit: is required when rateLimit is enabled"
	if _, err := Desired(Config{Gateway: GatewayKong}, api, spec); err == nil || err.Error() != want {
		t.Errorf("Desired error = %v, want %q", err, want)
	}
	if _, _, _, err := KongAdminEntities(Config{Gateway: GatewayKongAdmin}, api, spec); err == nil || err.Error() != want {
		t.Errorf("KongAdminEntities error = %v, want %q", err, want)
	}
	// Gateways that need no limit are not blocked by it.
	for _, g := range []string{GatewayIstio, GatewayApisix} {
		if _, err := Desired(Config{Gateway: g}, api, spec); err != nil {
			t.Errorf("%s: %v", g, err)
		}
	}
}

func TestDesiredKongConfig(t *testing.T) {
	api, spec := apiNamed(t, "x", func(s map[string]any) { s["apiType"] = "mcp" })
	cfg := Config{
		Gateway: GatewayKong, KongGatewayName: "edge", KongGatewayNamespace: "kong",
		BackendService: "mesh-ingress", BackendNamespace: "components", BackendPort: 8080,
		ConnectTimeout: 5 * time.Second, ReadTimeout: time.Hour, WriteTimeout: 1500 * time.Millisecond,
	}
	got := desired(t, cfg, api, spec)
	route := find(t, got, "HTTPRoute", "kong-api-route-x")
	wantRoute := Object{Owned: true, Object: map[string]any{
		"apiVersion": "gateway.networking.k8s.io/v1",
		"kind":       "HTTPRoute",
		"metadata": owned("x", "kong-api-route-x", map[string]any{
			"konghq.com/strip-path":                 "false",
			"konghq.com/protocols":                  "https",
			"konghq.com/https-redirect-status-code": "301",
			"konghq.com/connect-timeout":            "5000",
			"konghq.com/read-timeout":               "3600000",
			"konghq.com/write-timeout":              "1500",
		}),
		"spec": map[string]any{
			"parentRefs": []any{map[string]any{"name": "edge", "namespace": "kong"}},
			"rules": []any{map[string]any{
				"matches": []any{map[string]any{"path": map[string]any{"type": "PathPrefix", "value": "/ctk-productcatalogmanagement/tmf-api/productCatalogManagement/v4"}}},
				"backendRefs": []any{map[string]any{
					"name": "mesh-ingress", "kind": "Service", "port": int64(8080), "namespace": "components",
				}},
			}},
		},
	}}
	if diff := cmp.Diff(wantRoute, route); diff != "" {
		t.Errorf("HTTPRoute (-want +got):\n%s", diff)
	}
	// The backend is in the ExposedAPI's namespace: the grant can be owned.
	grant := find(t, got, "ReferenceGrant", "kong-ref-grant-components.x")
	if !grant.Owned || grant.Object["metadata"].(map[string]any)["ownerReferences"] == nil {
		t.Errorf("same-namespace ReferenceGrant not owned: %v", grant)
	}
	if diff := cmp.Diff(map[string]string{
		"konghq.com/connect-timeout": "5000", "konghq.com/read-timeout": "3600000", "konghq.com/write-timeout": "1500",
	}, KongBackendServiceAnnotations(cfg, spec)); diff != "" {
		t.Errorf("backend annotations (-want +got):\n%s", diff)
	}
}

func TestKongBackendServiceAnnotations(t *testing.T) {
	cases := map[string]map[string]string{
		"openapi":     nil,
		"prometheus":  nil,
		"mcp":         {"konghq.com/connect-timeout": "60000", "konghq.com/read-timeout": "900000", "konghq.com/write-timeout": "900000"},
		"A2A":         {"konghq.com/connect-timeout": "60000", "konghq.com/read-timeout": "900000", "konghq.com/write-timeout": "900000"},
		"sse":         {"konghq.com/connect-timeout": "60000", "konghq.com/read-timeout": "900000", "konghq.com/write-timeout": "900000"},
		"openmetrics": nil,
	}
	for apiType, want := range cases {
		t.Run(apiType, func(t *testing.T) {
			got := KongBackendServiceAnnotations(Config{Gateway: GatewayKong}, Spec{APIType: apiType})
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestWithTemplateKong(t *testing.T) {
	api, spec := apiNamed(t, "x", func(s map[string]any) {
		s["rateLimit"] = map[string]any{"enabled": true, "limit": "5"}
	})
	cfg := Config{Gateway: GatewayKong}
	objs := desired(t, cfg, api, spec)
	before := ids(objs)
	doc := map[string]any{
		"apiVersion": "configuration.konghq.com/v1",
		"kind":       "KongPlugin",
		"metadata":   map[string]any{"name": "request-size", "namespace": "elsewhere", "labels": map[string]any{"ignored": "yes"}},
		"plugin":     "request-size-limiting",
		"config":     map[string]any{"allowed_payload_size": 128.0},
	}
	got, err := WithTemplate(cfg, api, objs, []map[string]any{doc})
	if err != nil {
		t.Fatal(err)
	}
	checkUnstructured(t, got)
	if diff := cmp.Diff([]string{
		"VirtualService components/x",
		"ReferenceGrant istio-ingress/kong-ref-grant-components.x",
		"KongPlugin components/rate-limit-x",
		"KongPlugin components/request-size",
		"HTTPRoute components/kong-api-route-x",
	}, ids(got)); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
	want := Object{Owned: true, Object: map[string]any{
		"apiVersion": "configuration.konghq.com/v1",
		"kind":       "KongPlugin",
		"metadata":   owned("x", "request-size", nil),
		"plugin":     "request-size-limiting",
		"config":     map[string]any{"allowed_payload_size": 128.0},
	}}
	if diff := cmp.Diff(want, find(t, got, "KongPlugin", "request-size")); diff != "" {
		t.Errorf("template plugin (-want +got):\n%s", diff)
	}
	ann := find(t, got, "HTTPRoute", "kong-api-route-x").Object["metadata"].(map[string]any)["annotations"].(map[string]any)
	if ann["konghq.com/plugins"] != "rate-limit-x,request-size" {
		t.Errorf("konghq.com/plugins = %v", ann["konghq.com/plugins"])
	}
	// The input is untouched.
	if diff := cmp.Diff(before, ids(objs)); diff != "" {
		t.Errorf("input changed:\n%s", diff)
	}
	if a := find(t, objs, "HTTPRoute", "kong-api-route-x").Object["metadata"].(map[string]any)["annotations"].(map[string]any); a["konghq.com/plugins"] != "rate-limit-x" {
		t.Errorf("input annotation changed: %v", a["konghq.com/plugins"])
	}

	bad := map[string]struct {
		doc  map[string]any
		want string
	}{
		"not a KongPlugin":  {map[string]any{"kind": "KongClusterPlugin", "metadata": map[string]any{"name": "p"}, "plugin": "cors"}, `gateway: template document 0: kind must be KongPlugin, got "KongClusterPlugin"`},
		"wrong apiVersion":  {map[string]any{"apiVersion": "configuration.konghq.com/v2", "kind": "KongPlugin"}, `gateway: template document 0: apiVersion must be configuration.konghq.com/v1, got "configuration.konghq.com/v2"`},
		"no name":           {map[string]any{"kind": "KongPlugin", "plugin": "cors"}, "gateway: template document 0: metadata.name is required"},
		"bad name":          {map[string]any{"kind": "KongPlugin", "metadata": map[string]any{"name": "Bad_Name"}, "plugin": "cors"}, `gateway: template document 0: metadata.name "Bad_Name": `},
		"no plugin":         {map[string]any{"kind": "KongPlugin", "metadata": map[string]any{"name": "p"}}, "gateway: template document 0: plugin is required"},
		"name already used": {map[string]any{"kind": "KongPlugin", "metadata": map[string]any{"name": "rate-limit-x"}, "plugin": "cors"}, `gateway: template document 0: KongPlugin "rate-limit-x" is already desired`},
	}
	for name, tc := range bad {
		t.Run(name, func(t *testing.T) {
			_, err := WithTemplate(cfg, api, objs, []map[string]any{tc.doc})
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("WithTemplate error = %v, want %q", err, tc.want)
			}
		})
	}
}
