package gateway

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestKongAdminEntitiesExample(t *testing.T) {
	api := exampleAPI(t)
	svc, route, plugins, err := KongAdminEntities(Config{Gateway: GatewayKongAdmin}, api, parse(t, api.Spec))
	if err != nil {
		t.Fatal(err)
	}
	name := "components." + exampleName
	tags := []string{"odaflow", "exposedapi:components." + exampleName}
	if diff := cmp.Diff(KongService{
		Name: name, Host: "r1-prodcatapi.components.svc", Port: 8080, Protocol: "http", Tags: tags,
	}, svc); diff != "" {
		t.Errorf("service (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(KongRoute{
		Name: name, Paths: []string{examplePath}, StripPath: false, Protocols: []string{"https"},
		HTTPSRedirectStatusCode: 301, Service: KongRef{Name: name}, Tags: tags,
	}, route); diff != "" {
		t.Errorf("route (-want +got):\n%s", diff)
	}
	// The same configurations as the KongPlugin objects.
	objs := desired(t, Config{Gateway: GatewayKong}, api, parse(t, api.Spec))
	var want []KongPlugin
	for _, prefix := range []string{"rate-limit-", "apiauthentication-", "cors-"} {
		o := find(t, objs, "KongPlugin", prefix+exampleName)
		want = append(want, KongPlugin{
			Name: o.Object["plugin"].(string), InstanceName: prefix + name,
			Config: o.Object["config"].(map[string]any), Route: KongRef{Name: name}, Enabled: true, Tags: tags,
		})
	}
	if diff := cmp.Diff(want, plugins); diff != "" {
		t.Errorf("plugins (-want +got):\n%s", diff)
	}
	// The bodies are what the Admin API takes.
	raw, err := json.Marshal(route)
	if err != nil {
		t.Fatal(err)
	}
	const wantJSON = `{"name":"components.` + exampleName + `","paths":["` + examplePath + `"],"strip_path":false,"protocols":["https"],"https_redirect_status_code":301,"service":{"name":"components.` + exampleName + `"},"tags":["odaflow","exposedapi:components.` + exampleName + `"]}`
	if string(raw) != wantJSON {
		t.Errorf("route JSON:\n got %s\nwant %s", raw, wantJSON)
	}
}

func TestKongAdminEntitiesVariants(t *testing.T) {
	t.Run("mcp: timeouts on the service, no plugins", func(t *testing.T) {
		api, spec := apiNamed(t, "x", func(s map[string]any) { s["apiType"] = "mcp" })
		svc, _, plugins, err := KongAdminEntities(Config{Gateway: GatewayKongAdmin}, api, spec)
		if err != nil {
			t.Fatal(err)
		}
		want := KongService{
			Name: "components.x", Host: "ctk-prodcatapi.components.svc", Port: 8080, Protocol: "http",
			ConnectTimeout: 60000, ReadTimeout: 900000, WriteTimeout: 900000,
			Tags: []string{"odaflow", "exposedapi:components.x"},
		}
		if diff := cmp.Diff(want, svc); diff != "" {
			t.Errorf("service (-want +got):\n%s", diff)
		}
		if plugins != nil {
			t.Errorf("plugins = %v, want none", plugins)
		}
		raw, _ := json.Marshal(KongService{Name: "n"})
		if string(raw) != `{"name":"n","host":"","port":0,"protocol":"","tags":null}` {
			t.Errorf("timeouts not omitted when unset: %s", raw)
		}
	})
	t.Run("plain http URLs accept http", func(t *testing.T) {
		api, spec := apiNamed(t, "x", nil)
		_, route, _, err := KongAdminEntities(Config{Gateway: GatewayKongAdmin, Scheme: "http"}, api, spec)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"http", "https"}, route.Protocols); diff != "" {
			t.Errorf("protocols (-want +got):\n%s", diff)
		}
	})
	t.Run("incomplete API", func(t *testing.T) {
		_, spec := apiNamed(t, "x", nil)
		if _, _, _, err := KongAdminEntities(Config{Gateway: GatewayKongAdmin}, API{Name: "x"}, spec); err == nil {
			t.Error("no error for an API without namespace and uid")
		}
	})
	t.Run("kong-admin has no routing objects", func(t *testing.T) {
		api, spec := apiNamed(t, "x", func(s map[string]any) { s["rateLimit"] = map[string]any{"enabled": true, "limit": "1"} })
		if objs := desired(t, Config{Gateway: GatewayKongAdmin}, api, spec); len(objs) != 0 {
			t.Errorf("Desired = %v", ids(objs))
		}
	})
}

func TestKongAdminTemplatePlugins(t *testing.T) {
	api := API{Name: "x", Namespace: "components"}
	got, err := KongAdminTemplatePlugins(api, []map[string]any{
		{"kind": "KongPlugin", "metadata": map[string]any{"name": "size"}, "plugin": "request-size-limiting", "config": map[string]any{"allowed_payload_size": 128.0}},
		{"kind": "KongPlugin", "metadata": map[string]any{"name": "off"}, "plugin": "cors", "disabled": true},
	})
	if err != nil {
		t.Fatal(err)
	}
	tags := []string{"odaflow", "exposedapi:components.x"}
	want := []KongPlugin{
		{Name: "request-size-limiting", InstanceName: "size-components.x", Config: map[string]any{"allowed_payload_size": 128.0}, Route: KongRef{Name: "components.x"}, Enabled: true, Tags: tags},
		{Name: "cors", InstanceName: "off-components.x", Config: map[string]any{}, Route: KongRef{Name: "components.x"}, Enabled: false, Tags: tags},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("plugins (-want +got):\n%s", diff)
	}
	for name, doc := range map[string]map[string]any{
		"not a KongPlugin": {"kind": "Secret", "metadata": map[string]any{"name": "s"}, "plugin": "x"},
		"no plugin":        {"kind": "KongPlugin", "metadata": map[string]any{"name": "s"}},
	} {
		if _, err := KongAdminTemplatePlugins(api, []map[string]any{doc}); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
