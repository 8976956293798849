package oda

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/odaflow/odaflow/api"
)

// Owner is the Component that children belong to.
type Owner struct {
	Name      string            `json:"name"`
	Namespace string            `json:"namespace"`
	UID       string            `json:"uid"`
	Labels    map[string]string `json:"labels,omitempty"`
}

// Child is one desired child resource of a Component.
type Child struct {
	Kind    string         `json:"kind"`
	Name    string         `json:"name"`
	Segment Segment        `json:"segment,omitempty"`
	Spec    map[string]any `json:"spec"`
	// InitialStatus is written once, on creation, through the status
	// subresource (notification kinds only).
	InitialStatus map[string]any `json:"initialStatus,omitempty"`
	// Finalizers are applied with the child (see WithCleanupFinalizers).
	Finalizers []string `json:"finalizers,omitempty"`
}

// WithCleanupFinalizers puts odaflow's finalizer on the children whose kind
// cleans up outside the cluster, so they are created with it: their
// workflow then needs no request of its own to add it before its first
// side effect.
func WithCleanupFinalizers(children []Child) []Child {
	out := make([]Child, len(children))
	for i, c := range children {
		if k, ok := KindByName(c.Kind); ok && k.CleansUpOutside {
			c.Finalizers = []string{Finalizer}
		}
		out[i] = c
	}
	return out
}

// Ref is the child's reference in the owner's namespace.
func (c Child) Ref(namespace string) Ref {
	return Ref{Kind: c.Kind, Namespace: namespace, Name: c.Name}
}

// Desired is everything a Component spec asks for.
type Desired struct {
	Children []Child `json:"children"`
	// CanvasSystemRole is needed by the identity step; kept for status.
	CanvasSystemRole string `json:"canvasSystemRole,omitempty"`
	// SecretsManagement is the spec block, nil when none is declared.
	SecretsManagement map[string]any `json:"secretsManagement,omitempty"`
}

// ByKind returns the desired children of one kind, in declaration order.
func (d Desired) ByKind(kind string) []Child {
	var out []Child
	for _, c := range d.Children {
		if c.Kind == kind {
			out = append(out, c)
		}
	}
	return out
}

// gatewayKeys are lifted out of gatewayConfiguration onto the ExposedAPI spec.
var gatewayKeys = []string{"apiKeyVerification", "rateLimit", "quota", "OASValidation", "CORS", "template"}

// DesiredChildren works out a Component's children from its spec
// (oda-behaviour §2.1.1-2.1.7). It returns every problem found, so one
// status message can list them all.
func DesiredChildren(component string, spec map[string]any) (Desired, api.FieldErrors) {
	if spec == nil {
		return Desired{}, api.FieldErrors{{Path: "spec", Message: "is required"}}
	}
	s, errs := api.Decode[api.ComponentSpec](spec, "spec")
	sec := s.SecurityFunction
	if sec == nil {
		sec = &api.SecurityFunction{}
	}
	var d Desired
	// sources[i] is the path of the declaration that asks for d.Children[i].
	var sources []string
	var exposed, dependent []API
	for _, seg := range Segments {
		f := s.Function(string(seg))
		p := "spec." + string(seg)
		exposed = append(exposed, normalizeExposed(seg, f.ExposedAPIs, p+".exposedAPIs", &errs)...)
		dependent = append(dependent, normalizeDependent(seg, f.DependentAPIs, p+".dependentAPIs", &errs)...)
	}
	for _, a := range exposed {
		d.Children = append(d.Children, Child{
			Kind: KindExposedAPI.Name, Name: ChildName(component, a.Name, a.Version),
			Segment: a.Segment, Spec: ExposedAPISpec(a),
		})
		sources = append(sources, a.Source)
	}
	for _, a := range dependent {
		d.Children = append(d.Children, Child{
			Kind: KindDependentAPI.Name, Name: ChildName(component, a.Name, a.Version),
			Segment: a.Segment, Spec: DependentAPISpec(a),
		})
		sources = append(sources, a.Source)
	}

	d.CanvasSystemRole = string(sec.CanvasSystemRole)
	const rolePath = "spec.securityFunction.canvasSystemRole"
	if d.CanvasSystemRole == "" {
		if !errs.At(rolePath) {
			errs.Add(rolePath, "is required: the identity step creates this role for the component")
		}
	} else {
		d.Children = append(d.Children, Child{
			Kind: KindIdentityConfig.Name, Name: strings.ToLower(component),
			Spec: IdentityConfigSpec(d.CanvasSystemRole, sec.ComponentRole, exposed),
		})
		sources = append(sources, "metadata.name")
	}
	// An empty block is no secrets management, as in the Canvas (§2.1.4).
	if sm := sec.SecretsManagement; len(sm) > 0 {
		const smPath = "spec.securityFunction.secretsManagement"
		b, berrs := api.Decode[api.ComponentSecretsManagement](sm, smPath)
		errs = append(errs, berrs...)
		if b.Type != "sideCar" && !errs.At(smPath+".type") {
			errs.Add(smPath+".type", "must be sideCar, got %q", b.Type)
		}
		if b.PodSelector == nil && !errs.At(smPath+".podSelector") {
			errs.Add(smPath+".podSelector", "is required")
		}
		d.SecretsManagement = sm
		d.Children = append(d.Children, Child{
			Kind: KindSecretsManagement.Name, Name: strings.ToLower(component), Spec: copyMap(sm),
		})
		sources = append(sources, "metadata.name")
	}

	ev := s.EventNotification
	if ev == nil {
		ev = &api.EventNotification{}
	}
	for _, e := range []struct {
		key, kind string
		items     []api.EventDeclaration
	}{
		{"publishedEvents", KindPublishedNotification.Name, ev.PublishedEvents},
		{"subscribedEvents", KindSubscribedNotification.Name, ev.SubscribedEvents},
	} {
		for i, item := range e.items {
			p := fmt.Sprintf("spec.eventNotification.%s[%d]", e.key, i)
			if errs.At(p) {
				continue
			}
			if item.Name == "" {
				if !errs.At(p + ".name") {
					errs.Add(p+".name", "is required")
				}
				continue
			}
			d.Children = append(d.Children, Child{
				Kind: e.kind, Name: strings.ToLower(component + "-" + string(item.Name)), Spec: copyMap(item.Raw),
				InitialStatus: map[string]any{"uid": "", "status": "initializing", "error": ""},
			})
			sources = append(sources, p)
		}
	}
	if msgs := validation.IsValidLabelValue(component); len(msgs) > 0 {
		errs.Add("metadata.name", "the Component name %q cannot be the value of the %s label its children carry: %s", component, LabelComponentName, strings.Join(msgs, ", "))
	}
	validateNames(d.Children, sources, &errs)
	return d, errs.Unique()
}

// validateNames rejects children Kubernetes would refuse and two children of
// one kind with the same name (two APIs that normalise alike). sources[i] is
// the path of the declaration behind children[i], which the error names.
func validateNames(children []Child, sources []string, errs *api.FieldErrors) {
	seen := map[string]string{}
	for i, c := range children {
		key := c.Kind + "/" + c.Name
		if first, dup := seen[key]; dup {
			errs.Add(sources[i], "produces the same %s %q as %s; API names (and major versions) must be unique", c.Kind, c.Name, first)
			continue
		}
		seen[key] = sources[i]
		if msgs := validation.IsDNS1123Subdomain(c.Name); len(msgs) > 0 {
			errs.Add(sources[i], "child %s name %q is not a valid Kubernetes name: %s", c.Kind, c.Name, strings.Join(msgs, ", "))
		}
	}
}

// ExposedAPISpec builds an ExposedAPI spec from a normalised API (§2.1.2),
// plus `id`, which the Python operator drops.
func ExposedAPISpec(api API) map[string]any {
	spec := map[string]any{"name": api.Name, "segment": string(api.Segment)}
	setStr(spec, "id", api.ID)
	setStr(spec, "apiType", api.APIType)
	setStr(spec, "implementation", api.Implementation)
	setStr(spec, "path", api.Path)
	setStr(spec, "developerUI", api.DeveloperUI)
	setStr(spec, "apiSDO", api.APISDO)
	if api.Port != nil {
		spec["port"] = *api.Port
	}
	if api.Resources != nil {
		spec["resources"] = api.Resources
	}
	if api.Required != nil {
		spec["required"] = *api.Required
	}
	for _, k := range gatewayKeys {
		if v, ok := api.Gateway[k]; ok && v != nil {
			spec[k] = v
		}
	}
	//workflowcheck:ignore copies a map into a map: the order cannot show
	for k, v := range api.Extra {
		spec[k] = v
	}
	if s := specification(api); s != nil {
		spec["specification"] = s
	}
	return spec
}

// DependentAPISpec builds a DependentAPI spec (§2.1.3).
func DependentAPISpec(api API) map[string]any {
	spec := map[string]any{"name": api.Name, "apiType": api.APIType, "segment": string(api.Segment)}
	setStr(spec, "id", api.ID)
	setStr(spec, "apiSDO", api.APISDO)
	if api.Resources != nil {
		spec["resources"] = api.Resources
	}
	if api.Required != nil {
		spec["required"] = *api.Required
	}
	if api.Selector != nil {
		spec["selector"] = api.Selector
	}
	if s := specification(api); s != nil {
		spec["specification"] = s
	}
	return spec
}

func specification(api API) map[string]any {
	if api.URL == "" && api.Version == "" {
		return nil
	}
	s := map[string]any{}
	setStr(s, "url", api.URL)
	setStr(s, "version", api.Version)
	return s
}

// IdentityConfigSpec builds the IdentityConfig spec (§2.1.5). The party-role
// and permission-set APIs are derived from the security APIs on every
// reconcile, not only on creation as the Python operator does.
func IdentityConfigSpec(canvasSystemRole string, componentRole []any, exposed []API) map[string]any {
	spec := map[string]any{"canvasSystemRole": canvasSystemRole}
	if len(componentRole) > 0 {
		spec["componentRole"] = componentRole
	}
	for _, api := range exposed {
		if api.Segment != SegmentSecurity {
			continue
		}
		name := strings.ToLower(api.Name)
		ref := func() map[string]any {
			m := map[string]any{"implementation": api.Implementation, "path": api.Path}
			if api.Port != nil {
				m["port"] = *api.Port
			}
			return m
		}
		if _, done := spec["partyRoleAPI"]; !done && strings.Contains(name, "partyrole") {
			spec["partyRoleAPI"] = ref()
		}
		if _, done := spec["permissionSpecificationSetAPI"]; !done && strings.Contains(name, "userrolesandpermissions") {
			spec["permissionSpecificationSetAPI"] = ref()
		}
	}
	return spec
}

// ChildObject is the full object odaflow applies for a child: adopted by the
// Component (controller owner reference) and carrying the Component's labels.
func ChildObject(owner Owner, c Child) map[string]any {
	labels := map[string]any{}
	for k, v := range owner.Labels {
		labels[k] = v
	}
	if _, ok := labels[LabelComponentName]; !ok {
		labels[LabelComponentName] = owner.Name
	}
	metadata := map[string]any{
		"name":      c.Name,
		"namespace": owner.Namespace,
		"labels":    labels,
		"ownerReferences": []any{map[string]any{
			"apiVersion":         APIVersion,
			"kind":               KindComponent.Name,
			"name":               owner.Name,
			"uid":                owner.UID,
			"controller":         true,
			"blockOwnerDeletion": true,
		}},
	}
	if len(c.Finalizers) > 0 {
		finalizers := make([]any, len(c.Finalizers))
		for i, f := range c.Finalizers {
			finalizers[i] = f
		}
		metadata["finalizers"] = finalizers
	}
	return map[string]any{
		"apiVersion": APIVersion,
		"kind":       c.Kind,
		"metadata":   metadata,
		"spec":       c.Spec,
	}
}

func setStr(m map[string]any, key, v string) {
	if v != "" {
		m[key] = v
	}
}

func copyMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	//workflowcheck:ignore copies a map into a map: the order cannot show
	for k, v := range m {
		out[k] = v
	}
	return out
}

// SortedKeys returns a map's keys in order; workflows iterate maps through it
// so that replay sees the same order.
func SortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	//workflowcheck:ignore the keys are sorted below
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
