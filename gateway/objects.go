package gateway

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// The ExposedAPI as an owner.
const (
	exposedAPIVersion = "oda.tmforum.org/v1"
	exposedAPIKind    = "ExposedAPI"
)

// AnnotationExposedAPI is set on the gateway objects that cannot be owned by
// their ExposedAPI (those in another namespace, such as the ReferenceGrant
// and the APISIX objects), as "<namespace>/<name>", so that an operator can
// tell whose they are, and odaflow overwrites or deletes only the objects
// written for the API at hand (Owns).
const AnnotationExposedAPI = "odaflow.oda.tmforum.org/exposedapi"

// SharedName names an object odaflow writes for ExposedAPI namespace/name
// into a namespace it shares with other tenants' objects (the Kong backend
// namespace, APISIX's): "<prefix><namespace>.<name>". Named after the
// ExposedAPI alone, two tenants' APIs of one name would be one object,
// each apply overwriting the other's route, grant and plugins, and one
// deletion removing both. A namespace has no dot, so the first dot after
// the prefix ends it and no two APIs share a name. A name longer than a
// Kubernetes object name allows (253) is cut and ends with a hash of
// namespace/name instead, so it stays distinct.
func SharedName(prefix, namespace, name string) string {
	n := prefix + namespace + "." + name
	if len(n) <= validation.DNS1123SubdomainMaxLength {
		return n
	}
	sum := sha256.Sum256([]byte(namespace + "/" + name))
	h := hex.EncodeToString(sum[:])[:16]
	// A label may not end in "-" or ".": trim what the cut left there.
	head := strings.TrimRight(n[:validation.DNS1123SubdomainMaxLength-len(h)-1], "-.")
	return head + "-" + h
}

// Owns reports whether annotations mark an object in a shared namespace as
// written for ExposedAPI namespace/name. odaflow overwrites and deletes
// only those: anything else there belongs to another API, or to no one
// odaflow knows.
func Owns(annotations map[string]string, namespace, name string) bool {
	return annotations[AnnotationExposedAPI] == namespace+"/"+name
}

// Object is one object to apply, and whether it can be owned by the
// ExposedAPI (only when it lives in the ExposedAPI's namespace:
// cross-namespace owner references are invalid).
type Object struct {
	Object map[string]any
	Owned  bool
}

// Kind and Name read the object's identity.
func (o Object) Kind() string { s, _ := o.Object["kind"].(string); return s }
func (o Object) Name() string { return o.meta("name") }

func (o Object) meta(key string) string {
	m, _ := o.Object["metadata"].(map[string]any)
	s, _ := m[key].(string)
	return s
}

// Ref names one object a gateway may create for an ExposedAPI.
type Ref struct {
	APIVersion, Kind, Namespace, Name string
	Owned                             bool
}

// Desired returns every gateway object the API needs under cfg.Gateway, in
// apply order (what a route refers to comes before the route): owner
// references set where Owned (controller reference to the ExposedAPI), the
// ExposedAPI's labels copied. Kong and APISIX front the Istio ingress, which
// routes on by VirtualService, so they keep the VirtualService as the Canvas
// did (IWK, IWA). kong-admin has no routing objects (see KongAdminEntities);
// metrics APIs still get their ServiceMonitor under every gateway.
//
// A policy template (spec.template) is not applied yet.
func Desired(cfg Config, api API, spec Spec) ([]Object, error) {
	b, err := newBuilder(cfg, api, spec)
	if err != nil {
		return nil, err
	}
	var objs []Object
	if b.cfg.Gateway != GatewayKongAdmin {
		objs = append(objs, b.virtualService())
	}
	if sm, ok := b.serviceMonitor(); ok {
		objs = append(objs, sm)
	}
	switch b.cfg.Gateway {
	case GatewayKong:
		kong, err := b.kong()
		if err != nil {
			return nil, err
		}
		objs = append(objs, kong...)
	case GatewayApisix:
		objs = append(objs, b.apisix()...)
	}
	for _, o := range objs {
		if msgs := validation.IsDNS1123Subdomain(o.Name()); len(msgs) > 0 {
			return nil, fmt.Errorf("gateway: %s name %q: %s", o.Kind(), o.Name(), strings.Join(msgs, "; "))
		}
	}
	return objs, nil
}

// Managed lists every object with a fixed name that a gateway may create for
// the API, desired or not, so that the caller can delete those not in
// Desired (a disabled policy, a changed apiType or gateway) and, on
// deletion, the unowned ones.
func Managed(cfg Config, api API) []Ref {
	cfg = cfg.WithDefaults()
	ref := func(apiVersion, kind, ns, name string) Ref {
		return Ref{APIVersion: apiVersion, Kind: kind, Namespace: ns, Name: name, Owned: ns == api.Namespace}
	}
	refs := []Ref{
		ref(cfg.VirtualServiceAPIVersion, "VirtualService", api.Namespace, api.Name),
		ref(serviceMonitorAPIVersion, "ServiceMonitor", api.Namespace, api.Name),
	}
	switch cfg.Gateway {
	case GatewayKong:
		refs = append(refs,
			ref(referenceGrantAPIVersion, "ReferenceGrant", cfg.BackendNamespace, ReferenceGrantName(api.Namespace, api.Name)),
			ref(kongPluginAPIVersion, "KongPlugin", api.Namespace, RateLimitPluginName(api.Name)),
			ref(kongPluginAPIVersion, "KongPlugin", api.Namespace, APIAuthenticationPluginName(api.Name)),
			ref(kongPluginAPIVersion, "KongPlugin", api.Namespace, CORSPluginName(api.Name)),
			ref(httpRouteAPIVersion, "HTTPRoute", api.Namespace, HTTPRouteName(api.Name)),
		)
	case GatewayApisix:
		refs = append(refs,
			ref(apisixAPIVersion, "ApisixPluginConfig", cfg.ApisixNamespace, ApisixPluginConfigName(api.Namespace, api.Name)),
			ref(apisixAPIVersion, "ApisixRoute", cfg.ApisixNamespace, ApisixRouteName(api.Namespace, api.Name)),
		)
	}
	return refs
}

// builder holds what every object builder needs.
type builder struct {
	cfg  Config
	api  API
	spec Spec
}

func newBuilder(cfg Config, api API, spec Spec) (builder, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return builder{}, err
	}
	var missing []string
	for _, f := range []struct{ name, v string }{
		{"name", api.Name}, {"namespace", api.Namespace}, {"uid", api.UID},
	} {
		if f.v == "" {
			missing = append(missing, "ExposedAPI "+f.name)
		}
	}
	for _, f := range []struct{ name, v string }{
		{"spec.implementation", spec.Implementation}, {"spec.path", spec.Path},
	} {
		if f.v == "" {
			missing = append(missing, f.name)
		}
	}
	if spec.Port == 0 {
		missing = append(missing, "spec.port")
	}
	if len(missing) > 0 {
		return builder{}, fmt.Errorf("gateway: %s required", strings.Join(missing, ", "))
	}
	return builder{cfg: cfg, api: api, spec: spec}, nil
}

// object starts an object: identity, the ExposedAPI's labels, and either the
// owner reference (same namespace) or the AnnotationExposedAPI annotation.
func (b builder) object(apiVersion, kind, namespace, name string, annotations map[string]string) Object {
	meta := map[string]any{"name": name, "namespace": namespace}
	if len(b.api.Labels) > 0 {
		labels := make(map[string]any, len(b.api.Labels))
		for k, v := range b.api.Labels {
			labels[k] = v
		}
		meta["labels"] = labels
	}
	owned := namespace == b.api.Namespace
	ann := make(map[string]any, len(annotations)+1)
	for k, v := range annotations {
		ann[k] = v
	}
	if owned {
		meta["ownerReferences"] = []any{map[string]any{
			"apiVersion":         exposedAPIVersion,
			"kind":               exposedAPIKind,
			"name":               b.api.Name,
			"uid":                b.api.UID,
			"controller":         true,
			"blockOwnerDeletion": true,
		}}
	} else {
		ann[AnnotationExposedAPI] = b.api.Namespace + "/" + b.api.Name
	}
	if len(ann) > 0 {
		meta["annotations"] = ann
	}
	return Object{
		Object: map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": meta},
		Owned:  owned,
	}
}

// strs converts to the []any that unstructured objects hold.
func strs(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// deepCopy copies the maps and lists of a JSON-like value, so that callers'
// objects are never modified.
func deepCopy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, e := range t {
			m[k] = deepCopy(e)
		}
		return m
	case []any:
		l := make([]any, len(t))
		for i, e := range t {
			l[i] = deepCopy(e)
		}
		return l
	}
	return v
}
