package integration

// End to end on the real apiserver for the gateways other than istio:
// kong (Gateway API HTTPRoute + ReferenceGrant + KongPlugins), kong-admin
// (Kong's Admin API, here the internal/doubles/kongadmin double) and apisix
// (ApisixRoute + ApisixPluginConfig). Each test starts its own worker and
// watcher for that gateway (gatewaystack_test.go).
//
// Naming and the §4.6 conflict. The test kit's UC015 features install the
// productcatalog component as release "ctk" and look for
// "kong-api-route-ctk-productcatalogmanagement-productcatalogmanagement"
// (and the same suffix for the plugins and the APISIX objects). Under the v1
// naming rule of §1.8 — the one the Canvas's own component operator applies
// — the ExposedAPI of the TMF620 v4 API is
// "ctk-productcatalogmanagement-productcatalogmanagement-v4", and every
// gateway object is "<prefix>-<ExposedAPI name>". The two conflict; odaflow
// follows the operator: gateway names always derive from the ExposedAPI name,
// which keeps its major version, so that two specification versions of one
// API are two ExposedAPIs whose routes and plugins cannot collide. The tests
// below pin the versioned names (kong-api-route-…-productcatalogmanagement-v4);
// an ExposedAPI created without a version gets exactly the names UC015 checks.
// docs/gateways.md says the same for operators.

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/odaflow/odaflow/gateway"
	"github.com/odaflow/odaflow/oda"
	"github.com/odaflow/odaflow/tests/fixtures"
)

// The ExposedAPIs of the productcatalog fixture without promotionmanagement,
// and their implementation Services.
var gatewayTestAPIs = map[string]string{
	component + "-productcatalogmanagement-v4": "ctk-prodcatapi",
	component + "-metrics":                     "ctk-productcatalogmanagement-sm",
	component + "-partyrole-v4":                "ctk-partyroleapi",
}

// coreAPI carries the policies (fixtures.PluginPolicies).
const coreAPI = component + "-productcatalogmanagement-v4"

// gatewayCase is what differs between gateways: where their objects are
// and how to read a route's path and an API's plugins from them.
type gatewayCase struct {
	gateway   string
	ingressIP string
	// published checks the gateway objects of an API (names, owners,
	// contents) once they are all there; false with a reason until then.
	published func(t *testing.T, gs *gatewayStack, ns, api, path string) (bool, string)
	// routedPath is the path prefix the gateway routes for the API.
	routedPath func(t *testing.T, gs *gatewayStack, ns, api string) (string, error)
	// plugins lists the API's plugins, sorted; wantPlugins is that list
	// with every policy of fixtures.PluginPolicies on, and withoutRateLimit
	// with the rate limit switched off.
	plugins                       func(t *testing.T, gs *gatewayStack, ns, api string) ([]string, error)
	wantPlugins, withoutRateLimit func(ns, api string) []string
	// remaining lists what is left of the API's gateway objects (and Kong
	// entities) after its deletion: empty when clean.
	remaining func(t *testing.T, gs *gatewayStack, ns, api string) []string
}

func TestGatewayKong(t *testing.T) {
	runGatewayLifecycle(t, gatewayCase{
		gateway: "kong", ingressIP: "34.159.217.81",
		published: func(t *testing.T, _ *gatewayStack, ns, api, path string) (bool, string) {
			route, err := stack.dyn.Resource(httpRoutes).Namespace(ns).Get(context.Background(), gateway.HTTPRouteName(api), metav1.GetOptions{})
			if err != nil {
				return false, "HTTPRoute: " + err.Error()
			}
			if ok, why := ownedBy(route, api); !ok {
				return false, "HTTPRoute " + why
			}
			// The CRD defaults group and kind (Gateway) on the parentRef.
			parent, _, _ := unstructured.NestedSlice(route.Object, "spec", "parentRefs")
			if len(parent) != 1 || parent[0].(map[string]any)["name"] != "kong" || parent[0].(map[string]any)["namespace"] != "components" {
				return false, fmt.Sprintf("HTTPRoute parentRefs %v", parent)
			}
			rules, _, _ := unstructured.NestedSlice(route.Object, "spec", "rules")
			if len(rules) != 1 || !strings.Contains(fmt.Sprint(rules[0]), "name:istio-ingress namespace:istio-ingress port:80") {
				return false, fmt.Sprintf("HTTPRoute rules %v", rules)
			}
			if a := route.GetAnnotations(); a[gateway.AnnotationKongStripPath] != "false" || a[gateway.AnnotationKongProtocols] != "https" {
				return false, fmt.Sprintf("HTTPRoute annotations %v", a)
			}
			grant, err := stack.dyn.Resource(referenceGrants).Namespace("istio-ingress").Get(context.Background(), gateway.ReferenceGrantName(ns, api), metav1.GetOptions{})
			if err != nil {
				return false, "ReferenceGrant: " + err.Error()
			}
			// Cross-namespace: Kubernetes allows no owner reference, so the
			// annotation names the ExposedAPI and a finalizer deletes it.
			if len(grant.GetOwnerReferences()) != 0 || grant.GetAnnotations()[gateway.AnnotationExposedAPI] != ns+"/"+api {
				return false, fmt.Sprintf("ReferenceGrant owners %v annotations %v", grant.GetOwnerReferences(), grant.GetAnnotations())
			}
			if from := fmt.Sprint(grant.Object["spec"]); !strings.Contains(from, "namespace:"+ns) || !strings.Contains(from, "name:istio-ingress") {
				return false, "ReferenceGrant spec " + from
			}
			vs, err := stack.dyn.Resource(virtualServices).Namespace(ns).Get(context.Background(), api, metav1.GetOptions{})
			if err != nil {
				return false, "VirtualService (Kong forwards to the Istio ingress): " + err.Error()
			}
			if ok, why := ownedBy(vs, api); !ok {
				return false, "VirtualService " + why
			}
			if api != coreAPI {
				return true, ""
			}
			// Each enabled policy's KongPlugin, owned, of the right Kong
			// plugin type.
			for name, plugin := range map[string]string{
				gateway.RateLimitPluginName(api):         "rate-limiting",
				gateway.APIAuthenticationPluginName(api): "jwt",
				gateway.CORSPluginName(api):              "cors",
			} {
				p, err := stack.dyn.Resource(kongPlugins).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
				if err != nil {
					return false, "KongPlugin: " + err.Error()
				}
				if ok, why := ownedBy(p, api); !ok {
					return false, "KongPlugin " + name + " " + why
				}
				if p.Object["plugin"] != plugin {
					return false, fmt.Sprintf("KongPlugin %s plugin %v, want %s", name, p.Object["plugin"], plugin)
				}
			}
			rl, _ := stack.dyn.Resource(kongPlugins).Namespace(ns).Get(context.Background(), gateway.RateLimitPluginName(api), metav1.GetOptions{})
			if rl == nil || fmt.Sprint(rl.Object["config"]) != "map[minute:6 policy:local]" {
				return false, fmt.Sprintf("rate-limit KongPlugin config %v, want 6 a minute (limit \"6\", interval pm)", rl)
			}
			return true, ""
		},
		routedPath: func(_ *testing.T, _ *gatewayStack, ns, api string) (string, error) {
			route, err := stack.dyn.Resource(httpRoutes).Namespace(ns).Get(context.Background(), gateway.HTTPRouteName(api), metav1.GetOptions{})
			if err != nil {
				return "", err
			}
			rules, _, _ := unstructured.NestedSlice(route.Object, "spec", "rules")
			if len(rules) == 0 {
				return "", fmt.Errorf("no rules")
			}
			matches, _, _ := unstructured.NestedSlice(rules[0].(map[string]any), "matches")
			if len(matches) == 0 {
				return "", fmt.Errorf("no matches")
			}
			v, _, _ := unstructured.NestedString(matches[0].(map[string]any), "path", "value")
			return v, nil
		},
		plugins: func(_ *testing.T, _ *gatewayStack, ns, api string) ([]string, error) {
			l, err := stack.dyn.Resource(kongPlugins).Namespace(ns).List(context.Background(), metav1.ListOptions{})
			if err != nil {
				return nil, err
			}
			var names []string
			for _, p := range l.Items {
				if strings.HasSuffix(p.GetName(), "-"+api) && p.GetDeletionTimestamp() == nil {
					names = append(names, p.GetName())
				}
			}
			// The HTTPRoute must list exactly the plugins that exist.
			route, err := stack.dyn.Resource(httpRoutes).Namespace(ns).Get(context.Background(), gateway.HTTPRouteName(api), metav1.GetOptions{})
			if err != nil {
				return nil, err
			}
			listed := strings.Split(route.GetAnnotations()[gateway.AnnotationKongPlugins], ",")
			sort.Strings(names)
			sort.Strings(listed)
			if !slices.Equal(names, listed) {
				return nil, fmt.Errorf("KongPlugins %v but the HTTPRoute lists %v", names, listed)
			}
			return names, nil
		},
		wantPlugins: func(_, api string) []string {
			return sorted(gateway.APIAuthenticationPluginName(api), gateway.CORSPluginName(api), gateway.RateLimitPluginName(api))
		},
		withoutRateLimit: func(_, api string) []string {
			return sorted(gateway.APIAuthenticationPluginName(api), gateway.CORSPluginName(api))
		},
		remaining: func(t *testing.T, _ *gatewayStack, ns, api string) []string {
			return existing(t,
				objRef{httpRoutes, ns, gateway.HTTPRouteName(api)},
				objRef{referenceGrants, "istio-ingress", gateway.ReferenceGrantName(ns, api)},
				objRef{kongPlugins, ns, gateway.RateLimitPluginName(api)},
				objRef{kongPlugins, ns, gateway.APIAuthenticationPluginName(api)},
				objRef{kongPlugins, ns, gateway.CORSPluginName(api)},
				objRef{virtualServices, ns, api},
			)
		},
	})
}

func TestGatewayKongAdmin(t *testing.T) {
	kongName := func(ns, api string) string { return ns + "." + api }
	runGatewayLifecycle(t, gatewayCase{
		gateway: "kong-admin", ingressIP: "34.159.217.82",
		published: func(t *testing.T, gs *gatewayStack, ns, api, path string) (bool, string) {
			tag := gateway.KongAdminAPITagFor(ns, api)
			var svcID string
			for _, s := range kongEntities(t, gs, "services") {
				if s["name"] == kongName(ns, api) {
					svcID = fmt.Sprint(s["id"])
					if s["host"] != gatewayTestAPIs[api]+"."+ns+".svc" || !strings.Contains(fmt.Sprint(s["tags"]), tag) {
						return false, fmt.Sprintf("Kong service %v", s)
					}
				}
			}
			if svcID == "" {
				return false, "no Kong service " + kongName(ns, api)
			}
			var route map[string]any
			for _, r := range kongEntities(t, gs, "routes") {
				if r["name"] == kongName(ns, api) {
					route = r
				}
			}
			if route == nil {
				return false, "no Kong route " + kongName(ns, api)
			}
			if !strings.Contains(fmt.Sprint(route["service"]), svcID) || fmt.Sprint(route["paths"]) != "["+path+"]" {
				return false, fmt.Sprintf("Kong route %v", route)
			}
			// kong-admin writes no routing objects into the cluster.
			if got := existing(t, objRef{virtualServices, ns, api}, objRef{httpRoutes, ns, gateway.HTTPRouteName(api)}); len(got) > 0 {
				return false, fmt.Sprintf("unexpected cluster objects %v", got)
			}
			return true, ""
		},
		routedPath: func(t *testing.T, gs *gatewayStack, ns, api string) (string, error) {
			for _, r := range kongEntities(t, gs, "routes") {
				if r["name"] == kongName(ns, api) {
					paths, _ := r["paths"].([]any)
					if len(paths) == 1 {
						return fmt.Sprint(paths[0]), nil
					}
					return "", fmt.Errorf("paths %v", paths)
				}
			}
			return "", fmt.Errorf("no Kong route %s", kongName(ns, api))
		},
		plugins: func(t *testing.T, gs *gatewayStack, ns, api string) ([]string, error) {
			names := kongNames(t, gs, "plugins", gateway.KongAdminAPITagFor(ns, api))
			sort.Strings(names)
			return names, nil
		},
		wantPlugins: func(ns, api string) []string {
			n := kongName(ns, api)
			return sorted("apiauthentication-"+n, "cors-"+n, "rate-limit-"+n)
		},
		withoutRateLimit: func(ns, api string) []string {
			n := kongName(ns, api)
			return sorted("apiauthentication-"+n, "cors-"+n)
		},
		remaining: func(t *testing.T, gs *gatewayStack, ns, api string) []string {
			tag := gateway.KongAdminAPITagFor(ns, api)
			var left []string
			for _, table := range []string{"services", "routes", "plugins"} {
				for _, n := range kongNames(t, gs, table, tag) {
					left = append(left, "kong "+table+" "+n)
				}
			}
			return left
		},
	})
}

func TestGatewayApisix(t *testing.T) {
	apisixPlugins := func(_ *testing.T, _ *gatewayStack, ns, api string) ([]string, error) {
		cfg, err := stack.dyn.Resource(apisixPluginConfigs).Namespace("istio-ingress").Get(context.Background(), gateway.ApisixPluginConfigName(ns, api), metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		list, _, _ := unstructured.NestedSlice(cfg.Object, "spec", "plugins")
		var names []string
		for _, p := range list {
			names = append(names, fmt.Sprint(p.(map[string]any)["name"]))
		}
		sort.Strings(names)
		return names, nil
	}
	runGatewayLifecycle(t, gatewayCase{
		gateway: "apisix", ingressIP: "34.159.217.83",
		published: func(t *testing.T, _ *gatewayStack, ns, api, path string) (bool, string) {
			route, err := stack.dyn.Resource(apisixRoutes).Namespace("istio-ingress").Get(context.Background(), gateway.ApisixRouteName(ns, api), metav1.GetOptions{})
			if err != nil {
				return false, "ApisixRoute: " + err.Error()
			}
			// An ApisixRoute must sit with its backend Service, in
			// istio-ingress: no owner reference is possible.
			if len(route.GetOwnerReferences()) != 0 || route.GetAnnotations()[gateway.AnnotationExposedAPI] != ns+"/"+api {
				return false, fmt.Sprintf("ApisixRoute owners %v annotations %v", route.GetOwnerReferences(), route.GetAnnotations())
			}
			http, _, _ := unstructured.NestedSlice(route.Object, "spec", "http")
			if len(http) != 1 {
				return false, fmt.Sprintf("ApisixRoute http %v", http)
			}
			h := http[0].(map[string]any)
			if h["plugin_config_name"] != gateway.ApisixPluginConfigName(ns, api) || !strings.Contains(fmt.Sprint(h["backends"]), "serviceName:istio-ingress servicePort:80") {
				return false, fmt.Sprintf("ApisixRoute http %v", h)
			}
			cfg, err := stack.dyn.Resource(apisixPluginConfigs).Namespace("istio-ingress").Get(context.Background(), gateway.ApisixPluginConfigName(ns, api), metav1.GetOptions{})
			if err != nil {
				return false, "ApisixPluginConfig: " + err.Error()
			}
			if len(cfg.GetOwnerReferences()) != 0 || cfg.GetAnnotations()[gateway.AnnotationExposedAPI] != ns+"/"+api {
				return false, fmt.Sprintf("ApisixPluginConfig owners %v annotations %v", cfg.GetOwnerReferences(), cfg.GetAnnotations())
			}
			vs, err := stack.dyn.Resource(virtualServices).Namespace(ns).Get(context.Background(), api, metav1.GetOptions{})
			if err != nil {
				return false, "VirtualService (APISIX forwards to the Istio ingress): " + err.Error()
			}
			if ok, why := ownedBy(vs, api); !ok {
				return false, "VirtualService " + why
			}
			return true, ""
		},
		routedPath: func(_ *testing.T, _ *gatewayStack, ns, api string) (string, error) {
			route, err := stack.dyn.Resource(apisixRoutes).Namespace("istio-ingress").Get(context.Background(), gateway.ApisixRouteName(ns, api), metav1.GetOptions{})
			if err != nil {
				return "", err
			}
			http, _, _ := unstructured.NestedSlice(route.Object, "spec", "http")
			if len(http) == 0 {
				return "", fmt.Errorf("no http block")
			}
			paths, _, _ := unstructured.NestedStringSlice(http[0].(map[string]any), "match", "paths")
			if len(paths) != 2 || paths[1] != strings.TrimSuffix(paths[0], "/")+"/*" {
				return "", fmt.Errorf("paths %v", paths)
			}
			return paths[0], nil
		},
		plugins:          apisixPlugins,
		wantPlugins:      func(_, _ string) []string { return sorted("cors", "key-auth", "limit-req") },
		withoutRateLimit: func(_, _ string) []string { return sorted("cors", "key-auth") },
		remaining: func(t *testing.T, _ *gatewayStack, ns, api string) []string {
			return existing(t,
				objRef{apisixRoutes, "istio-ingress", gateway.ApisixRouteName(ns, api)},
				objRef{apisixPluginConfigs, "istio-ingress", gateway.ApisixPluginConfigName(ns, api)},
				objRef{virtualServices, ns, api},
			)
		},
	})
}

// runGatewayLifecycle is one Component's whole life under one gateway:
// install → gateway objects, url and ready → implementation down and up →
// an upgrade that moves a path → a policy switched off → uninstall, with
// every gateway object and Kong entity gone and the finalizers released.
func runGatewayLifecycle(t *testing.T, c gatewayCase) {
	// The proxy has no load-balancer address yet (pending).
	gs := startGatewayStack(t, c.gateway, "")
	ns := gs.nsPrefix + "e2e"
	createNamespace(t, ns)
	for _, svc := range gatewayTestAPIs {
		setEndpoints(t, ns, svc, true)
	}
	comp := fixtures.WithoutAPI(fixtures.WithoutDependentAPIs(fixtures.ProductCatalog(ns, component)), "promotionmanagement")
	comp = fixtures.WithGatewayConfiguration(comp, "productcatalogmanagement", fixtures.PluginPolicies())
	conflictsBefore := kubeRequestsBy(t, gs.metricsURL, "method", "code")["PATCH 409"]
	start := time.Now()
	create(t, oda.KindComponent, comp)

	// Install while the proxy has no address: the routes are published and
	// the APIs ready, but without a url; the workflows wait durably.
	eventually(t, 60*time.Second, c.gateway+" objects of "+coreAPI+" before the address", func() (bool, string) {
		u, err := get(oda.KindExposedAPI, ns, coreAPI)
		if err != nil {
			return false, err.Error()
		}
		path, _, _ := unstructured.NestedString(u.Object, "spec", "path")
		return c.published(t, gs, ns, coreAPI, path)
	})
	waitExposedWithin(t, ns, coreAPI, false, true, 60*time.Second)

	// The address appears: every API gets its url from the gateway's own
	// proxy address.
	ensureProxyService(t, proxyFor(c.gateway), c.ingressIP)
	paths := map[string]string{}
	for api := range gatewayTestAPIs {
		u := waitExposedWithin(t, ns, api, true, true, 60*time.Second)
		url, _ := apiStatus(u)
		path, _, _ := unstructured.NestedString(u.Object, "spec", "path")
		paths[api] = path
		if want := gs.scheme + "://" + c.ingressIP + path; url != want {
			t.Errorf("%s url = %q, want %q", api, url, want)
		}
		eventually(t, 60*time.Second, c.gateway+" objects of "+api, func() (bool, string) { return c.published(t, gs, ns, api, path) })
		// Every gateway here keeps something outside the ExposedAPI's
		// reach (another namespace, or Kong itself): a finalizer guards it.
		if !slices.Contains(u.GetFinalizers(), oda.Finalizer) {
			t.Errorf("%s has no %s finalizer: %v", api, oda.Finalizer, u.GetFinalizers())
		}
	}
	if c.gateway == "kong" {
		// §4.6: the name the BDD test kit looks for, with odaflow's "-v4".
		if _, err := stack.dyn.Resource(httpRoutes).Namespace(ns).Get(context.Background(),
			"kong-api-route-ctk-productcatalogmanagement-productcatalogmanagement-v4", metav1.GetOptions{}); err != nil {
			t.Errorf("the test kit's HTTPRoute (versioned): %v", err)
		}
	}
	waitPlugins(t, c, gs, ns, c.wantPlugins(ns, coreAPI))
	// The Component counts its APIs as ready: it leaves In-Progress-CompCon.
	// (What comes after, identity and secrets, is not the gateway's.)
	eventually(t, 60*time.Second, "Component past "+oda.StatusCompCon, func() (bool, string) {
		st := deploymentStatus(mustGet(t, oda.KindComponent, ns, component))
		return st != "" && st != oda.StatusCompCon && st != oda.StatusFailed, "deployment_status=" + st
	})
	t.Logf("%s: installed, every API exposed and ready, Component past CompCon after %s", c.gateway, time.Since(start).Round(time.Millisecond))
	// Adding the finalizer changed each ExposedAPI before its first status
	// write; that write is guarded by the version the finalizer made, so
	// no write of the install conflicts, not even with itself. (Only
	// writes: the metric is process-wide, and the test's own creates of
	// namespaces that exist answer 409 too.)
	if n := kubeRequestsBy(t, gs.metricsURL, "method", "code")["PATCH 409"] - conflictsBefore; n != 0 {
		t.Errorf("%s install: %v patches answered 409", c.gateway, n)
	}

	// The implementation goes down and comes back: ready follows both ways.
	impl := gatewayTestAPIs[coreAPI]
	setEndpoints(t, ns, impl, false)
	waitExposedWithin(t, ns, coreAPI, true, false, 60*time.Second)
	setEndpoints(t, ns, impl, true)
	waitExposedWithin(t, ns, coreAPI, true, true, 60*time.Second)

	// An upgrade moves the core API's path: the route follows, so does the url.
	moved := paths[coreAPI] + "-moved"
	updateComponent(t, ns, component, func(u *unstructured.Unstructured) {
		apis, _, _ := unstructured.NestedSlice(u.Object, "spec", "coreFunction", "exposedAPIs")
		apis[0].(map[string]any)["path"] = moved
		_ = unstructured.SetNestedSlice(u.Object, apis, "spec", "coreFunction", "exposedAPIs")
	})
	eventually(t, 60*time.Second, c.gateway+" route follows the new path", func() (bool, string) {
		p, err := c.routedPath(t, gs, ns, coreAPI)
		if err != nil {
			return false, err.Error()
		}
		return p == moved, p
	})
	eventually(t, 60*time.Second, "url follows the new path", func() (bool, string) {
		url, _ := apiStatus(mustGet(t, oda.KindExposedAPI, ns, coreAPI))
		return url == gs.scheme+"://"+c.ingressIP+moved, url
	})

	// The rate limit is switched off: its plugin goes, the others stay.
	updateComponent(t, ns, component, func(u *unstructured.Unstructured) {
		apis, _, _ := unstructured.NestedSlice(u.Object, "spec", "coreFunction", "exposedAPIs")
		gc := apis[0].(map[string]any)["gatewayConfiguration"].(map[string]any)
		gc["rateLimit"].(map[string]any)["enabled"] = false
		_ = unstructured.SetNestedSlice(u.Object, apis, "spec", "coreFunction", "exposedAPIs")
	})
	waitPlugins(t, c, gs, ns, c.withoutRateLimit(ns, coreAPI))
	t.Logf("%s: ready flipped, path moved, rate limit removed after %s", c.gateway, time.Since(start).Round(time.Millisecond))
	if c.gateway == "kong" {
		if _, err := stack.dyn.Resource(kongPlugins).Namespace(ns).Get(context.Background(), gateway.RateLimitPluginName(coreAPI), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("the rate-limit KongPlugin is still there (err=%v)", err)
		}
	}
	waitExposedWithin(t, ns, coreAPI, true, true, 60*time.Second)

	// Uninstall: the ExposedAPIs go once odaflow has removed what garbage
	// collection cannot reach and released its finalizer; garbage
	// collection takes the owned rest.
	if err := stack.dyn.Resource(oda.KindComponent.GVR()).Namespace(ns).Delete(context.Background(), component, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for api := range gatewayTestAPIs {
		eventually(t, 60*time.Second, "ExposedAPI "+api+" deleted (finalizer released)", func() (bool, string) {
			u, err := get(oda.KindExposedAPI, ns, api)
			if apierrors.IsNotFound(err) {
				return true, ""
			}
			if err != nil {
				return false, err.Error()
			}
			return false, fmt.Sprintf("still there, finalizers %v", u.GetFinalizers())
		})
		eventually(t, 60*time.Second, c.gateway+" objects of "+api+" gone", func() (bool, string) {
			left := c.remaining(t, gs, ns, api)
			return len(left) == 0, fmt.Sprint(left)
		})
	}
	// The Component and its other children (the IdentityConfig, whose
	// finalizer this stack's worker releases) go too, before the stack stops.
	eventually(t, 60*time.Second, "Component and IdentityConfig deleted", func() (bool, string) {
		_, err := get(oda.KindComponent, ns, component)
		ids := listChildren(t, oda.KindIdentityConfig, ns, component)
		return apierrors.IsNotFound(err) && len(ids) == 0, fmt.Sprintf("component: %v; identityconfigs %v", err, ids)
	})
	t.Logf("%s: uninstalled and clean after %s", c.gateway, time.Since(start).Round(time.Millisecond))
	if gs.kong != nil {
		// Nothing odaflow made is left in Kong, by any tag.
		for _, table := range []string{"services", "routes", "plugins"} {
			if n := gs.kong.Count(table); n != 0 {
				t.Errorf("Kong still holds %d %s: %v", n, table, kongEntities(t, gs, table))
			}
		}
	}
}

func waitPlugins(t *testing.T, c gatewayCase, gs *gatewayStack, ns string, want []string) {
	t.Helper()
	eventually(t, 60*time.Second, fmt.Sprintf("%s plugins of %s are %v", c.gateway, coreAPI, want), func() (bool, string) {
		got, err := c.plugins(t, gs, ns, coreAPI)
		if err != nil {
			return false, err.Error()
		}
		return slices.Equal(got, want), fmt.Sprint(got)
	})
}

func waitExposedWithin(t *testing.T, ns, name string, wantURL, wantReady bool, timeout time.Duration) *unstructured.Unstructured {
	t.Helper()
	var got *unstructured.Unstructured
	eventually(t, timeout, fmt.Sprintf("ExposedAPI %s url=%t ready=%t", name, wantURL, wantReady), func() (bool, string) {
		u, err := get(oda.KindExposedAPI, ns, name)
		if err != nil {
			return false, err.Error()
		}
		got = u
		url, ready := apiStatus(u)
		return (url != "") == wantURL && ready == wantReady, fmt.Sprintf("url=%q ready=%t conditions=%v", url, ready, u.Object["status"])
	})
	return got
}

// ownedBy checks the controller owner reference to the ExposedAPI.
func ownedBy(u *unstructured.Unstructured, api string) (bool, string) {
	owners := u.GetOwnerReferences()
	if len(owners) == 1 && owners[0].Kind == "ExposedAPI" && owners[0].Name == api && owners[0].Controller != nil && *owners[0].Controller {
		return true, ""
	}
	return false, fmt.Sprintf("owners %v, want the ExposedAPI %s as controller", owners, api)
}

type objRef struct {
	gvr       schema.GroupVersionResource
	namespace string
	name      string
}

// existing lists the objects that still exist (and are not being deleted).
func existing(t *testing.T, refs ...objRef) []string {
	t.Helper()
	var out []string
	for _, r := range refs {
		u, err := stack.dyn.Resource(r.gvr).Namespace(r.namespace).Get(context.Background(), r.name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			out = append(out, fmt.Sprintf("%s %s/%s: %v", r.gvr.Resource, r.namespace, r.name, err))
		default:
			out = append(out, fmt.Sprintf("%s %s/%s (deleting=%t)", r.gvr.Resource, r.namespace, r.name, u.GetDeletionTimestamp() != nil))
		}
	}
	return out
}

func sorted(s ...string) []string {
	sort.Strings(s)
	return s
}
