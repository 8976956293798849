package gateway

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/odaflow/odaflow/oda"
)

// FuzzGatewayObjectNames: an ExposedAPI that the Component rules accept
// (oda.DesiredChildren and oda.GatewayProblems) must be accepted by every gateway, and every
// gateway object derived from its name (VirtualService, ServiceMonitor,
// HTTPRoute, ReferenceGrant, KongPlugins, ApisixRoute, ApisixPluginConfig)
// must be a valid Kubernetes name, distinct within its kind. Otherwise a
// Component would look fine and its API would fail later at the gateway.
// testdata/fuzz keeps the input that found a 240-character API name passing
// the Component rules and failing every gateway. The same API in two
// tenants' namespaces must get distinct objects in the shared namespaces
// (SharedName): one tenant must never write or delete the other's.
func FuzzGatewayObjectNames(f *testing.F) {
	f.Add("ctk-productcatalogmanagement", "productcatalogmanagement", "v4.0.0", "/ctk/tmf-api/productCatalogManagement/v4")
	f.Add("r1", "metrics", "", "/metrics")
	f.Add("a", strings.Repeat("b", 200), "v1", "/x")
	f.Fuzz(func(t *testing.T, component, api, version, path string) {
		spec := map[string]any{
			"securityFunction": map[string]any{"canvasSystemRole": "Admin"},
			"coreFunction": map[string]any{"exposedAPIs": []any{map[string]any{
				"name": api, "apiType": "openapi", "implementation": "svc", "path": path, "port": int64(8080),
				"specification": []any{map[string]any{"url": "https://x/spec.json", "version": version}},
				"gatewayConfiguration": map[string]any{
					"apiKeyVerification": map[string]any{"enabled": true, "location": "header"},
					"rateLimit":          map[string]any{"enabled": true, "identifier": "IP", "limit": "10", "interval": "minute"},
					"CORS":               map[string]any{"enabled": true},
				},
			}}},
		}
		d, errs := oda.DesiredChildren(component, spec)
		if len(errs) == 0 {
			errs = oda.GatewayProblems(d)
		}
		if len(errs) > 0 {
			return
		}
		child := d.ByKind(oda.KindExposedAPI.Name)[0]
		parsed, err := ParseSpec(child.Spec)
		if err != nil {
			t.Fatalf("the Component accepted ExposedAPI %q but the gateway refuses its spec: %v", child.Name, err)
		}
		for _, gw := range []string{GatewayIstio, GatewayKong, GatewayApisix} {
			seen := map[string]string{}
			// Two tenants with the same Component and API names.
			for _, ns := range []string{"components", "components-" + strings.SplitN(child.Name, "-", 2)[0]} {
				a := API{Name: child.Name, Namespace: ns, UID: "uid", Labels: map[string]string{oda.LabelComponentName: component}, Spec: child.Spec}
				objs, err := Desired(Config{Gateway: gw}.WithDefaults(), a, parsed)
				if err != nil {
					t.Fatalf("the Component accepted ExposedAPI %q but gateway %s refuses it: %v", child.Name, gw, err)
				}
				for _, o := range objs {
					if msgs := validation.IsDNS1123Subdomain(o.Name()); len(msgs) > 0 {
						t.Fatalf("%s %s name %q: %v", gw, o.Kind(), o.Name(), msgs)
					}
					key := o.Kind() + "/" + o.Namespace() + "/" + o.Name()
					if prev, dup := seen[key]; dup {
						t.Fatalf("%s: two objects %s (for namespaces %s and %s)", gw, key, prev, ns)
					}
					seen[key] = ns
				}
			}
		}
	})
}
