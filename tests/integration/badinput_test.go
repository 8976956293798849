package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/odaflow/odaflow/oda"
	"github.com/odaflow/odaflow/tests/fixtures"
)

// badCase breaks a valid Component in a way the CRD schema lets through;
// odaflow must answer with Failed and a message naming the problem.
type badCase struct {
	name      string
	want      string // a fragment of the message
	breakSpec func(spec map[string]any)
}

func firstAPI(spec map[string]any, seg string) map[string]any {
	return spec[seg].(map[string]any)["exposedAPIs"].([]any)[0].(map[string]any)
}

func firstSpec(spec map[string]any, seg string) map[string]any {
	return firstAPI(spec, seg)["specification"].([]any)[0].(map[string]any)
}

var badCases = []badCase{
	{"empty-role", "canvasSystemRole", func(s map[string]any) { s["securityFunction"].(map[string]any)["canvasSystemRole"] = "" }},
	{"no-role", "canvasSystemRole", func(s map[string]any) { delete(s["securityFunction"].(map[string]any), "canvasSystemRole") }},
	{"unknown-apitype", "unknown API type", func(s map[string]any) { firstAPI(s, "coreFunction")["apiType"] = "graphql" }},
	{"no-implementation", "implementation", func(s map[string]any) { delete(firstAPI(s, "coreFunction"), "implementation") }},
	{"no-path", "path", func(s map[string]any) { delete(firstAPI(s, "coreFunction"), "path") }},
	{"no-port", "port", func(s map[string]any) { delete(firstAPI(s, "coreFunction"), "port") }},
	{"port-zero", "between 1 and 65535", func(s map[string]any) { firstAPI(s, "coreFunction")["port"] = int64(0) }},
	{"port-too-big", "between 1 and 65535", func(s map[string]any) { firstAPI(s, "managementFunction")["port"] = int64(70000) }},
	{"relative-path", "must start with /", func(s map[string]any) { firstAPI(s, "coreFunction")["path"] = "tmf-api/x" }},
	{"duplicate-api", "same ExposedAPI", func(s map[string]any) {
		core := s["coreFunction"].(map[string]any)
		apis := core["exposedAPIs"].([]any)
		dup := map[string]any{}
		for k, v := range apis[0].(map[string]any) {
			dup[k] = v
		}
		dup["path"] = "/elsewhere"
		core["exposedAPIs"] = append(apis, dup)
	}},
	{"underscore-name", "not a valid Kubernetes name", func(s map[string]any) { firstAPI(s, "coreFunction")["name"] = "product_catalog" }},
	{"unicode-name", "not a valid Kubernetes name", func(s map[string]any) { firstAPI(s, "coreFunction")["name"] = "prodüctcatalog" }},
	{"name-too-long", "not a valid Kubernetes name", func(s map[string]any) { firstAPI(s, "coreFunction")["name"] = strings.Repeat("a", 250) }},
	{"path-like-name", "not a valid Kubernetes name", func(s map[string]any) { firstAPI(s, "coreFunction")["name"] = "../../etc" }},
	{"empty-api-name", "name: is required", func(s map[string]any) { firstAPI(s, "coreFunction")["name"] = "" }},
	{"dependent-no-name", "name: is required", func(s map[string]any) {
		s["coreFunction"].(map[string]any)["dependentAPIs"] = []any{map[string]any{"apiType": "openapi"}}
	}},
	{"sman-wrong-type", "must be sideCar", func(s map[string]any) {
		s["securityFunction"].(map[string]any)["secretsManagement"] = map[string]any{"type": "vault", "podSelector": map[string]any{"name": "x"}}
	}},
	{"sman-no-selector", "podSelector", func(s map[string]any) {
		s["securityFunction"].(map[string]any)["secretsManagement"] = map[string]any{"type": "sideCar"}
	}},
	{"event-no-name", "name: is required", func(s map[string]any) {
		s["eventNotification"] = map[string]any{"publishedEvents": []any{map[string]any{"description": "no name"}}}
	}},
	{"two-specs-same-version", "same ExposedAPI", func(s map[string]any) {
		api := firstAPI(s, "coreFunction")
		api["specification"] = append(api["specification"].([]any), map[string]any{"url": "https://example.com/TMF620-ProductCatalog-v4.1.0.swagger.json"})
	}},
	{"version-garbage", "not a valid Kubernetes name", func(s map[string]any) { firstSpec(s, "coreFunction")["version"] = "v4 beta!" }},
	{"security-api-no-port", "port", func(s map[string]any) { delete(firstAPI(s, "securityFunction"), "port") }},
	{"subscribed-no-name", "name: is required", func(s map[string]any) {
		s["eventNotification"] = map[string]any{"subscribedEvents": []any{map[string]any{"description": "no name"}}}
	}},
	{"same-api-two-segments", "same ExposedAPI", func(s map[string]any) {
		firstAPI(s, "securityFunction")["name"] = firstAPI(s, "coreFunction")["name"]
		firstAPI(s, "securityFunction")["specification"] = firstAPI(s, "coreFunction")["specification"]
	}},
	{"version-underscore", "not a valid Kubernetes name", func(s map[string]any) { firstSpec(s, "coreFunction")["version"] = "V_4" }},
	{"name-with-space", "not a valid Kubernetes name", func(s map[string]any) { firstAPI(s, "coreFunction")["name"] = "product catalog" }},
	{"trailing-dash", "not a valid Kubernetes name", func(s map[string]any) { firstAPI(s, "managementFunction")["name"] = "metrics-" }},
	{"dots-name", "not a valid Kubernetes name", func(s map[string]any) { firstAPI(s, "managementFunction")["name"] = "..." }},
}

func TestMalformedComponentsEachFailClearly(t *testing.T) {
	ns := "it-badinput"
	createNamespace(t, ns)
	ctx := context.Background()
	accepted := 0
	var created []string
	// A Component whose name cannot be a label value: its children could not
	// carry the oda.tmforum.org/componentName label the Canvas relies on.
	long := fixtures.WithOwnPaths(fixtures.ProductCatalog(ns, "bad-"+strings.Repeat("long", 16)))
	long.SetLabels(nil)
	if _, err := stack.dyn.Resource(oda.KindComponent.GVR()).Namespace(ns).Create(ctx, long, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create the long-named Component: %v", err)
	}
	accepted++
	for _, c := range badCases {
		name := "bad-" + c.name
		u := fixtures.WithOwnPaths(fixtures.ProductCatalog(ns, name))
		c.breakSpec(fixtures.Spec(u))
		if _, err := stack.dyn.Resource(oda.KindComponent.GVR()).Namespace(ns).Create(ctx, u, metav1.CreateOptions{}); err != nil {
			t.Logf("%s: refused by the apiserver's schema (a clear error too): %v", c.name, err)
			continue
		}
		accepted++
		created = append(created, c.name)
	}
	// A good Component next to them still progresses.
	good := fixtures.WithOwnPaths(fixtures.WithoutDependentAPIs(fixtures.ProductCatalog(ns, "good-neighbour")))
	create(t, oda.KindComponent, good)
	for _, c := range badCases {
		found := false
		for _, n := range created {
			found = found || n == c.name
		}
		if !found {
			continue
		}
		name := "bad-" + c.name
		u := waitPhase(t, ns, name, oda.StatusFailed, 30*time.Second)
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		msg := ""
		if len(conds) > 0 {
			msg = fmt.Sprint(conds[0].(map[string]any)["message"])
		}
		if !strings.Contains(msg, c.want) {
			t.Errorf("%s: condition message %q does not mention %q", c.name, msg, c.want)
		}
	}
	u := waitPhase(t, ns, long.GetName(), oda.StatusFailed, 30*time.Second)
	if conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions"); len(conds) == 0 || !strings.Contains(fmt.Sprint(conds[0]), "label") {
		t.Errorf("long name: conditions %v do not mention the label", conds)
	}
	waitPhase(t, ns, "good-neighbour", oda.StatusCompCon, 30*time.Second)
	if accepted < 20 {
		t.Errorf("only %d malformed Components got past the schema; the corpus must exercise odaflow's own checks with at least 20", accepted)
	}
	t.Logf("%d malformed Components, each Failed with a clear message", accepted)
}
