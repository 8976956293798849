package gateway

import (
	"strconv"
	"strings"
	"time"

	"github.com/odaflow/odaflow/api"
)

const (
	httpRouteAPIVersion      = "gateway.networking.k8s.io/v1"
	referenceGrantAPIVersion = "gateway.networking.k8s.io/v1beta1"
	kongPluginAPIVersion     = "configuration.konghq.com/v1"
)

// Annotations Kong reads on an HTTPRoute (and, for timeouts, on the backend
// Service).
const (
	AnnotationKongPlugins        = "konghq.com/plugins"
	AnnotationKongStripPath      = "konghq.com/strip-path"
	AnnotationKongProtocols      = "konghq.com/protocols"
	AnnotationKongHTTPSRedirect  = "konghq.com/https-redirect-status-code"
	AnnotationKongConnectTimeout = "konghq.com/connect-timeout"
	AnnotationKongReadTimeout    = "konghq.com/read-timeout"
	AnnotationKongWriteTimeout   = "konghq.com/write-timeout"
)

// Names of the Kong children of an ExposedAPI (§1.8). The ReferenceGrant
// lives in the shared BackendNamespace, so its name carries the
// ExposedAPI's namespace too (SharedName).
func HTTPRouteName(exposedAPI string) string { return "kong-api-route-" + exposedAPI }
func ReferenceGrantName(namespace, exposedAPI string) string {
	return SharedName("kong-ref-grant-", namespace, exposedAPI)
}
func RateLimitPluginName(exposedAPI string) string {
	return "rate-limit-" + exposedAPI
}
func APIAuthenticationPluginName(exposedAPI string) string {
	return "apiauthentication-" + exposedAPI
}
func CORSPluginName(exposedAPI string) string { return "cors-" + exposedAPI }

// kong builds the Kong objects of an ExposedAPI (§2.2.2): the ReferenceGrant
// that lets the HTTPRoute reach the backend Service in BackendNamespace, one
// KongPlugin per enabled policy, and the HTTPRoute that lists them.
//
// Naming (the §4.6 conflict). Every name here is "<prefix>-<ExposedAPI
// name>", and odaflow names ExposedAPIs by the Canvas operator's rule of §1.8,
// with the major version: "ctk-productcatalogmanagement-productcatalogmanagement-v4"
// gives "kong-api-route-ctk-productcatalogmanagement-productcatalogmanagement-v4".
// The UC015 features expect the names without "-v4"; they passed only
// against the old unversioned names. odaflow keeps the versioned names:
// one Component API with two specification versions is two ExposedAPIs, and
// unversioned gateway names would make their routes and plugins collide.
// The gateway names follow whatever the ExposedAPI is called, so an ExposedAPI
// created without a version (as by the v1beta3 charts of UC015 under the
// Canvas) still gets exactly the names UC015 checks.
func (b builder) kong() ([]Object, error) {
	name := b.api.Name
	var objs []Object

	grant := b.object(referenceGrantAPIVersion, "ReferenceGrant", b.cfg.BackendNamespace, ReferenceGrantName(b.api.Namespace, name), nil)
	grant.Object["spec"] = map[string]any{
		"from": []any{map[string]any{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "namespace": b.api.Namespace}},
		"to":   []any{map[string]any{"group": "", "kind": "Service", "name": b.cfg.BackendService}},
	}
	objs = append(objs, grant)

	plugins, err := kongPlugins(b.spec.Policies)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, p := range plugins {
		pluginName := p.prefix + name
		o := b.object(kongPluginAPIVersion, "KongPlugin", b.api.Namespace, pluginName, nil)
		o.Object["plugin"] = p.plugin
		o.Object["config"] = p.config
		objs = append(objs, o)
		names = append(names, pluginName)
	}

	annotations := map[string]string{
		AnnotationKongStripPath:     "false",
		AnnotationKongProtocols:     strings.Join(kongProtocols(b.cfg), ","),
		AnnotationKongHTTPSRedirect: "301",
	}
	for k, v := range KongBackendServiceAnnotations(b.cfg, b.spec) {
		annotations[k] = v
	}
	if len(names) > 0 {
		annotations[AnnotationKongPlugins] = strings.Join(names, ",")
	}
	route := b.object(httpRouteAPIVersion, "HTTPRoute", b.api.Namespace, HTTPRouteName(name), annotations)
	route.Object["spec"] = map[string]any{
		"parentRefs": []any{map[string]any{"name": b.cfg.KongGatewayName, "namespace": b.cfg.KongGatewayNamespace}},
		"rules": []any{map[string]any{
			"matches": []any{map[string]any{"path": map[string]any{"type": "PathPrefix", "value": b.spec.Path}}},
			"backendRefs": []any{map[string]any{
				"name":      b.cfg.BackendService,
				"kind":      "Service",
				"port":      int64(b.cfg.BackendPort),
				"namespace": b.cfg.BackendNamespace,
			}},
		}},
	}
	return append(objs, route), nil
}

// KongBackendServiceAnnotations are the timeout annotations a long-lived API
// (mcp, a2a, sse) needs, in milliseconds. They go on the HTTPRoute and,
// because Kong takes upstream timeouts from the backend Service, the caller
// also merges them into the annotations of BackendService. Nil for other
// APIs.
func KongBackendServiceAnnotations(cfg Config, spec Spec) map[string]string {
	cfg = cfg.WithDefaults()
	if !IsLongLived(spec.APIType) {
		return nil
	}
	ms := func(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }
	return map[string]string{
		AnnotationKongConnectTimeout: ms(cfg.ConnectTimeout),
		AnnotationKongReadTimeout:    ms(cfg.ReadTimeout),
		AnnotationKongWriteTimeout:   ms(cfg.WriteTimeout),
	}
}

// kongProtocols: https only, redirecting http with 301, as the Canvas does;
// both when URLs are plain http.
func kongProtocols(cfg Config) []string {
	if cfg.Scheme == "http" {
		return []string{"http", "https"}
	}
	return []string{"https"}
}

// kongPlugin is one Kong plugin of an ExposedAPI, shared by the KongPlugin
// objects and the Kong Admin API entities.
type kongPlugin struct {
	prefix string // of the KongPlugin name
	plugin string // Kong plugin type
	config map[string]any
}

// kongPlugins builds the plugins of the enabled policies, in the Canvas's
// order (rate limit, authentication, CORS).
func kongPlugins(p Policies) ([]kongPlugin, error) {
	var out []kongPlugin
	if rl := p.RateLimit; rl != nil {
		if rl.Limit < 1 {
			return nil, api.FieldErrors{{Path: "spec.rateLimit.limit", Message: "is required when rateLimit is enabled"}}
		}
		unit := rl.Interval
		if unit == "" {
			unit = "minute" // what the Canvas always used
		}
		out = append(out, kongPlugin{prefix: "rate-limit-", plugin: "rate-limiting", config: map[string]any{
			unit:     rl.Limit,
			"policy": "local",
		}})
	}
	if p.APIKey != nil {
		out = append(out, kongPlugin{prefix: "apiauthentication-", plugin: "jwt", config: map[string]any{
			"uri_param_names":  []any{"jwt"},
			"cookie_names":     []any{"token"},
			"claims_to_verify": []any{"exp"},
			"key_claim_name":   "iss",
			"secret_is_base64": false,
		}})
	}
	if c := p.CORS; c != nil {
		out = append(out, kongPlugin{prefix: "cors-", plugin: "cors", config: map[string]any{
			"methods":     strs(c.Preflight.AllowMethods),
			"headers":     strs(c.Preflight.AllowHeaders),
			"origins":     strs(c.AllowOrigins),
			"credentials": c.AllowCredentials,
			"max_age":     c.Preflight.MaxAge,
		}})
	}
	return out, nil
}
