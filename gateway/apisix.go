package gateway

import (
	"fmt"
	"strings"
	"time"
)

const apisixAPIVersion = "apisix.apache.org/v2"

// DefaultApisixRate is the limit-req rate when rateLimit gives no limit (the
// Canvas's default).
const DefaultApisixRate = 5

// Names of the APISIX children of an ExposedAPI (§1.8), with its namespace:
// they live in the shared ApisixNamespace (SharedName).
func ApisixRouteName(namespace, exposedAPI string) string {
	return SharedName("apisix-api-route-", namespace, exposedAPI)
}
func ApisixPluginConfigName(namespace, exposedAPI string) string {
	return SharedName("combined-apisixpluginconfig-", namespace, exposedAPI)
}

// apisix builds the APISIX objects of an ExposedAPI (§2.2.3): the
// ApisixPluginConfig with one plugin per enabled policy, and the ApisixRoute
// that uses it on every http block. Both live in ApisixNamespace (the
// ApisixRoute must sit with its backend Service), so they are owned only when
// that is the ExposedAPI's own namespace. The plugin config is applied even
// without plugins, as the Canvas did, so that the route's reference always
// resolves. Names follow the ExposedAPI's namespace and name (SharedName).
func (b builder) apisix() []Object {
	ns := b.cfg.ApisixNamespace
	configName := ApisixPluginConfigName(b.api.Namespace, b.api.Name)

	config := b.object(apisixAPIVersion, "ApisixPluginConfig", ns, configName, nil)
	config.Object["spec"] = map[string]any{"plugins": apisixPlugins(b.spec.Policies)}

	base := strings.TrimSuffix(b.spec.Path, "/")
	http := map[string]any{
		"name":               "http-all",
		"match":              map[string]any{"paths": []any{b.spec.Path, base + "/*"}},
		"backends":           []any{map[string]any{"serviceName": b.cfg.BackendService, "servicePort": int64(b.cfg.BackendPort)}},
		"plugin_config_name": configName,
	}
	if IsLongLived(b.spec.APIType) {
		http["timeout"] = map[string]any{
			"connect": apisixSeconds(b.cfg.ConnectTimeout),
			"read":    apisixSeconds(b.cfg.ReadTimeout),
			"send":    apisixSeconds(b.cfg.WriteTimeout),
		}
	}
	route := b.object(apisixAPIVersion, "ApisixRoute", ns, ApisixRouteName(b.api.Namespace, b.api.Name), nil)
	route.Object["spec"] = map[string]any{"http": []any{http}}
	return []Object{config, route}
}

// apisixSeconds formats a timeout as APISIX wants it ("60s"), rounding up to
// whole seconds.
func apisixSeconds(d time.Duration) string {
	s := int64((d + time.Second - 1) / time.Second)
	if s < 1 {
		s = 1
	}
	return fmt.Sprintf("%ds", s)
}

// apisixKey maps a rate-limit or quota identifier to the APISIX variable the
// counter is keyed on. "IP", the identifier of the ExposedAPI examples, is
// the client address (remote_addr); other identifiers are passed through.
func apisixKey(identifier string) string {
	if identifier == "" || strings.EqualFold(identifier, "ip") {
		return "remote_addr"
	}
	return identifier
}

// apisixPlugins builds the plugins of the enabled policies in the Canvas's
// order: limit-req, limit-count, cors, key-auth. oas-validation is left out
// (§5.2.10): open-source APISIX has no such plugin.
func apisixPlugins(p Policies) []any {
	plugins := []any{}
	add := func(name string, config map[string]any) {
		plugins = append(plugins, map[string]any{"name": name, "enable": true, "config": config})
	}
	if rl := p.RateLimit; rl != nil {
		rate := rl.Limit
		if rate < 1 {
			rate = DefaultApisixRate
		}
		add("limit-req", map[string]any{"rate": rate, "burst": int64(0), "key": apisixKey(rl.Identifier), "nodelay": true})
	}
	if q := p.Quota; q != nil {
		add("limit-count", map[string]any{"count": q.Limit, "time_window": int64(60), "key": apisixKey(q.Identifier), "rejected_code": int64(429)})
	}
	if c := p.CORS; c != nil {
		add("cors", map[string]any{
			"allowCredentials": c.AllowCredentials,
			"allowOrigins":     strs(c.AllowOrigins),
			"handlePreflightRequests": map[string]any{
				"enabled":      c.Preflight.Enabled,
				"allowHeaders": strings.Join(c.Preflight.AllowHeaders, ", "),
				"allowMethods": strings.Join(c.Preflight.AllowMethods, ", "),
				"maxAge":       c.Preflight.MaxAge,
			},
		})
	}
	if k := p.APIKey; k != nil {
		config := map[string]any{}
		if k.Location != "" {
			config["key"] = k.Location
		}
		add("key-auth", config)
	}
	return plugins
}
