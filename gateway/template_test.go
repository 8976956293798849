package gateway

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// WithTemplate adds the plugins of a policy template (spec.template, which
// the caller downloads and splits into YAML documents) to the objects of
// Desired, returning a new list; objs is not modified.
//
//   - kong: every document is a KongPlugin; it is put in the ExposedAPI's
//     namespace, owned and labelled like the other plugins, applied before the
//     HTTPRoute and appended to its konghq.com/plugins annotation.
//   - apisix: the spec.plugins of every document come first in the
//     ApisixPluginConfig; a plugin the spec's own policies also configure is
//     taken from the spec.
//   - istio and kong-admin: objs is returned as it is (see Omissions and
//     KongAdminTemplatePlugins).
func WithTemplate(cfg Config, api API, objs []Object, docs []map[string]any) ([]Object, error) {
	cfg = cfg.WithDefaults()
	out := make([]Object, len(objs))
	for i, o := range objs {
		out[i] = Object{Object: deepCopy(o.Object).(map[string]any), Owned: o.Owned}
	}
	if len(docs) == 0 {
		return out, nil
	}
	if api.Name == "" || api.Namespace == "" || api.UID == "" {
		return nil, fmt.Errorf("gateway: template: ExposedAPI name, namespace and uid required")
	}
	b := builder{cfg: cfg, api: api}
	switch cfg.Gateway {
	case GatewayKong:
		return b.kongTemplate(out, docs)
	case GatewayApisix:
		return b.apisixTemplate(out, docs)
	}
	return out, nil
}

func (b builder) kongTemplate(objs []Object, docs []map[string]any) ([]Object, error) {
	routeAt := -1
	taken := map[string]bool{}
	for i, o := range objs {
		if o.Kind() == "HTTPRoute" {
			routeAt = i
		}
		if o.Kind() == "KongPlugin" {
			taken[o.Name()] = true
		}
	}
	if routeAt < 0 {
		return nil, fmt.Errorf("gateway: template: no HTTPRoute among the desired objects")
	}
	var plugins []Object
	var names []string
	for i, doc := range docs {
		o, err := b.templateKongPlugin(i, doc)
		if err != nil {
			return nil, err
		}
		if taken[o.Name()] {
			return nil, fmt.Errorf("gateway: template document %d: KongPlugin %q is already desired", i, o.Name())
		}
		taken[o.Name()] = true
		plugins = append(plugins, o)
		names = append(names, o.Name())
	}
	route := objs[routeAt]
	meta := route.Object["metadata"].(map[string]any)
	ann, _ := meta["annotations"].(map[string]any)
	if ann == nil {
		ann = map[string]any{}
		meta["annotations"] = ann
	}
	if prev, _ := ann[AnnotationKongPlugins].(string); prev != "" {
		names = append([]string{prev}, names...)
	}
	ann[AnnotationKongPlugins] = strings.Join(names, ",")
	out := append([]Object{}, objs[:routeAt]...)
	out = append(out, plugins...)
	return append(out, objs[routeAt:]...), nil
}

// templateKongPlugin checks one template document and makes it a KongPlugin
// of the API: the Canvas applied each document as a KongPlugin whatever it
// was, odaflow refuses anything else.
func (b builder) templateKongPlugin(i int, doc map[string]any) (Object, error) {
	bad := func(format string, args ...any) (Object, error) {
		return Object{}, fmt.Errorf("gateway: template document %d: %s", i, fmt.Sprintf(format, args...))
	}
	if v, _ := doc["apiVersion"].(string); v != "" && v != kongPluginAPIVersion {
		return bad("apiVersion must be %s, got %q", kongPluginAPIVersion, v)
	}
	if k, _ := doc["kind"].(string); k != "KongPlugin" {
		return bad("kind must be KongPlugin, got %q", k)
	}
	meta, _ := doc["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	if name == "" {
		return bad("metadata.name is required")
	}
	if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
		return bad("metadata.name %q: %s", name, strings.Join(msgs, "; "))
	}
	if p, _ := doc["plugin"].(string); p == "" {
		return bad("plugin is required")
	}
	o := b.object(kongPluginAPIVersion, "KongPlugin", b.api.Namespace, name, nil)
	for k, v := range doc {
		if k != "apiVersion" && k != "kind" && k != "metadata" && k != "status" {
			o.Object[k] = deepCopy(v)
		}
	}
	return o, nil
}

// apisixTemplate puts the template's plugins first in the ApisixPluginConfig.
func (b builder) apisixTemplate(objs []Object, docs []map[string]any) ([]Object, error) {
	var config map[string]any
	for _, o := range objs {
		if o.Kind() == "ApisixPluginConfig" {
			config = o.Object
		}
	}
	if config == nil {
		return nil, fmt.Errorf("gateway: template: no ApisixPluginConfig among the desired objects")
	}
	spec, _ := config["spec"].(map[string]any)
	if spec == nil {
		spec = map[string]any{}
		config["spec"] = spec
	}
	own, _ := spec["plugins"].([]any)
	ownNames := map[string]bool{}
	for _, p := range own {
		if m, _ := p.(map[string]any); m != nil {
			name, _ := m["name"].(string)
			ownNames[name] = true
		}
	}
	plugins := []any{}
	for i, doc := range docs {
		docSpec, _ := doc["spec"].(map[string]any)
		list, ok := docSpec["plugins"].([]any)
		if !ok {
			return nil, fmt.Errorf("gateway: template document %d: spec.plugins must be a list", i)
		}
		for j, p := range list {
			m, _ := p.(map[string]any)
			name, _ := m["name"].(string)
			if name == "" {
				return nil, fmt.Errorf("gateway: template document %d: spec.plugins[%d].name is required", i, j)
			}
			if !ownNames[name] {
				plugins = append(plugins, deepCopy(m))
			}
		}
	}
	spec["plugins"] = append(plugins, own...)
	return objs, nil
}

// KongAdminTemplatePlugins turns the KongPlugin documents of a policy
// template into Kong Admin API plugins on the API's route, named
// "<document name>-<namespace>.<name>" since a template serves many APIs.
func KongAdminTemplatePlugins(api API, docs []map[string]any) ([]KongPlugin, error) {
	name := KongAdminName(api)
	var out []KongPlugin
	for i, doc := range docs {
		if k, _ := doc["kind"].(string); k != "KongPlugin" {
			return nil, fmt.Errorf("gateway: template document %d: kind must be KongPlugin, got %q", i, k)
		}
		meta, _ := doc["metadata"].(map[string]any)
		docName, _ := meta["name"].(string)
		plugin, _ := doc["plugin"].(string)
		if docName == "" || plugin == "" {
			return nil, fmt.Errorf("gateway: template document %d: metadata.name and plugin are required", i)
		}
		config, _ := deepCopy(doc["config"]).(map[string]any)
		if config == nil {
			config = map[string]any{}
		}
		enabled := true
		if d, ok := doc["disabled"].(bool); ok {
			enabled = !d
		}
		out = append(out, KongPlugin{
			Name:         plugin,
			InstanceName: docName + "-" + name,
			Config:       config,
			Route:        KongRef{Name: name},
			Enabled:      enabled,
			Tags:         []string{KongAdminTag, KongAdminAPITag(api)},
		})
	}
	return out, nil
}

// Omission is a requested policy that the gateway does not apply.
type Omission struct {
	Field  string `json:"field"`
	Reason string `json:"reason"`
}

// Omissions lists the policies of spec that cfg.Gateway leaves unapplied, so
// that they can be reported (in status or events) rather than silently
// dropped.
func Omissions(cfg Config, spec Spec) []Omission {
	cfg = cfg.WithDefaults()
	p := spec.Policies
	var out []Omission
	add := func(present bool, field, reason string) {
		if present {
			out = append(out, Omission{Field: field, Reason: reason})
		}
	}
	switch cfg.Gateway {
	case GatewayIstio:
		const reason = "the istio gateway does not apply API policies"
		add(p.RateLimit != nil, "spec.rateLimit", reason)
		add(p.APIKey != nil, "spec.apiKeyVerification", reason)
		add(p.CORS != nil, "spec.CORS", reason)
		add(p.Quota != nil, "spec.quota", reason)
		add(p.OASValidation != nil, "spec.OASValidation", reason)
		add(p.Template != "", "spec.template", reason)
	case GatewayKong, GatewayKongAdmin:
		add(p.Quota != nil, "spec.quota", "Kong has no quota plugin in its open-source edition; use spec.rateLimit")
		add(p.OASValidation != nil, "spec.OASValidation", "oas-validation is a Kong Enterprise plugin")
	case GatewayApisix:
		add(p.RateLimit != nil && p.RateLimit.Interval != "" && p.RateLimit.Interval != "second",
			"spec.rateLimit.interval", "APISIX limit-req counts requests per second; the limit is applied per second")
		add(p.OASValidation != nil, "spec.OASValidation", "oas-validator is an API7 Enterprise plugin, not part of open-source APISIX")
	}
	return out
}

// APIVersion and Namespace read the rest of an object's identity (the
// tests' keys).
func (o Object) APIVersion() string { s, _ := o.Object["apiVersion"].(string); return s }
func (o Object) Namespace() string  { return o.meta("namespace") }
