package integration

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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

// setFirst breaks one field of a segment's first exposed API.
func setFirst(seg, key string, v any) func(spec map[string]any) {
	return func(spec map[string]any) { firstAPI(spec, seg)[key] = v }
}

func firstSpec(spec map[string]any, seg string) map[string]any {
	return firstAPI(spec, seg)["specification"].([]any)[0].(map[string]any)
}

var badCases = []badCase{
	{"empty-role", "canvasSystemRole", func(s map[string]any) { s["securityFunction"].(map[string]any)["canvasSystemRole"] = "" }},
	{"no-role", "canvasSystemRole", func(s map[string]any) { delete(s["securityFunction"].(map[string]any), "canvasSystemRole") }},
	{"port-zero", "between 1 and 65535", setFirst("coreFunction", "port", int64(0))},
	{"port-too-big", "between 1 and 65535", setFirst("managementFunction", "port", int64(70000))},
	{"relative-path", "must start with /", setFirst("coreFunction", "path", "tmf-api/x")},
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
	{"underscore-name", "not a valid Kubernetes name", setFirst("coreFunction", "name", "product_catalog")},
	{"unicode-name", "not a valid Kubernetes name", setFirst("coreFunction", "name", "prodüctcatalog")},
	{"name-too-long", "not a valid Kubernetes name", setFirst("coreFunction", "name", strings.Repeat("a", 250))},
	{"path-like-name", "not a valid Kubernetes name", setFirst("coreFunction", "name", "../../etc")},
	{"empty-api-name", "name: is required", setFirst("coreFunction", "name", "")},
	{"event-no-name", "name: is required", func(s map[string]any) {
		s["eventNotification"] = map[string]any{"publishedEvents": []any{map[string]any{"description": "no name"}}}
	}},
	{"two-specs-same-version", "same ExposedAPI", func(s map[string]any) {
		api := firstAPI(s, "coreFunction")
		api["specification"] = append(api["specification"].([]any), map[string]any{"url": "https://example.com/TMF620-ProductCatalog-v4.1.0.swagger.json"})
	}},
	{"version-garbage", "not a valid Kubernetes name", func(s map[string]any) { firstSpec(s, "coreFunction")["version"] = "v4 beta!" }},
	{"subscribed-no-name", "name: is required", func(s map[string]any) {
		s["eventNotification"] = map[string]any{"subscribedEvents": []any{map[string]any{"description": "no name"}}}
	}},
	{"same-api-two-segments", "same ExposedAPI", func(s map[string]any) {
		firstAPI(s, "securityFunction")["name"] = firstAPI(s, "coreFunction")["name"]
		firstAPI(s, "securityFunction")["specification"] = firstAPI(s, "coreFunction")["specification"]
	}},
	{"version-underscore", "not a valid Kubernetes name", func(s map[string]any) { firstSpec(s, "coreFunction")["version"] = "V_4" }},
	{"name-with-space", "not a valid Kubernetes name", setFirst("coreFunction", "name", "product catalog")},
	{"trailing-dash", "not a valid Kubernetes name", setFirst("managementFunction", "name", "metrics-")},
	{"dots-name", "not a valid Kubernetes name", setFirst("managementFunction", "name", "...")},
	// Paths that would take other components' traffic, or that no URL holds.
	{"root-path", "every path on the gateway", setFirst("coreFunction", "path", "/")},
	{"slashes-path", "every path on the gateway", setFirst("coreFunction", "path", "///")},
	{"dotdot-path", "dot segment", func(s map[string]any) {
		firstAPI(s, "coreFunction")["path"] = "/bad-dotdot-path/../good-neighbour/tmf-api/productCatalogManagement/v4"
	}},
	{"encoded-dotdot-path", "dot segment", setFirst("coreFunction", "path", "/x/%2e%2e/good-neighbour")},
	{"unicode-path", "RFC 3986", setFirst("coreFunction", "path", "/prodüct/katalog")},
	{"query-path", "RFC 3986", setFirst("coreFunction", "path", "/bad-query-path/x?admin=true")},
	{"space-path", "RFC 3986", setFirst("coreFunction", "path", "/bad space/x")},
	{"empty-segment-path", "empty segment", setFirst("coreFunction", "path", "/bad-empty-segment-path//x")},
	{"bad-percent-path", "percent-encoded", setFirst("coreFunction", "path", "/bad-percent-path/%zz")},
	{"same-path-two-apis", "also the path of", func(s map[string]any) {
		firstAPI(s, "managementFunction")["path"] = firstAPI(s, "coreFunction")["path"]
	}},
	{"name-too-long-for-gateway", "the gateway objects named after it", func(s map[string]any) {
		firstAPI(s, "coreFunction")["name"] = strings.Repeat("n", 220)
	}},
	{"implementation-path-like", "not a Service name", setFirst("coreFunction", "implementation", "../../kube-system/kube-dns")},
	{"implementation-unicode", "not a Service name", setFirst("coreFunction", "implementation", "prodüct-api")},
	// Wrong types the schema lets through (fields it types loosely or not at all).
	{"port-negative", "between 1 and 65535", setFirst("coreFunction", "port", int64(-8080))},
	{"port-huge", "between 1 and 65535", setFirst("coreFunction", "port", int64(1)<<40)},
	{"dependent-unicode-name", "not a valid Kubernetes name", func(s map[string]any) {
		s["coreFunction"].(map[string]any)["dependentAPIs"].([]any)[0].(map[string]any)["name"] = "katalög"
	}},
	{"event-path-like-name", "not a valid Kubernetes name", func(s map[string]any) {
		s["eventNotification"] = map[string]any{"publishedEvents": []any{map[string]any{"name": "../../secrets"}}}
	}},
	{"huge-spec-near-limit", "canvasSystemRole", func(s map[string]any) {
		// 1.4 MiB in a field the schema keeps: the whole spec reaches
		// the workflow, and is refused for its missing role.
		s["componentMetadata"].(map[string]any)["description"] = strings.Repeat("x", 1400*1024)
		delete(s["securityFunction"].(map[string]any), "canvasSystemRole")
	}},
}

// schemaCase is refused by the apiserver at admission; the error must name
// the problem, and nothing reaches odaflow.
type schemaCase struct {
	name   string
	want   string // a fragment of the apiserver's error
	break_ func(u *unstructured.Unstructured)
}

// specCase is a schemaCase that breaks the spec.
func specCase(name, want string, breakSpec func(spec map[string]any)) schemaCase {
	return schemaCase{name, want, func(u *unstructured.Unstructured) { breakSpec(fixtures.Spec(u)) }}
}

var schemaCases = []schemaCase{
	// Fields the v1 schema types or requires.
	specCase("unknown-apitype", "apiType", func(s map[string]any) { firstAPI(s, "coreFunction")["apiType"] = "graphql" }),
	specCase("no-implementation", "must be defined either at the API root", func(s map[string]any) { delete(firstAPI(s, "coreFunction"), "implementation") }),
	specCase("no-path", "must be defined either at the API root", func(s map[string]any) { delete(firstAPI(s, "coreFunction"), "path") }),
	specCase("no-port", "must be defined either at the API root", func(s map[string]any) { delete(firstAPI(s, "coreFunction"), "port") }),
	specCase("dependent-no-name", "name: Required value", func(s map[string]any) {
		s["coreFunction"].(map[string]any)["dependentAPIs"] = []any{map[string]any{"apiType": "openapi"}}
	}),
	specCase("sman-wrong-type", "supported values: \"sideCar\"", func(s map[string]any) {
		s["securityFunction"].(map[string]any)["secretsManagement"] = map[string]any{"type": "vault", "podSelector": map[string]any{"name": "x"}}
	}),
	specCase("sman-no-selector", "podSelector: Required value", func(s map[string]any) {
		s["securityFunction"].(map[string]any)["secretsManagement"] = map[string]any{"type": "sideCar"}
	}),
	specCase("security-api-no-port", "must be defined either at the API root", func(s map[string]any) { delete(firstAPI(s, "securityFunction"), "port") }),
	specCase("port-word", "port in body must be of type integer", func(s map[string]any) { firstAPI(s, "coreFunction")["port"] = "http" }),
	specCase("spec-null-element", "specification[0] in body must be of type object", func(s map[string]any) {
		firstAPI(s, "coreFunction")["specification"] = []any{nil}
	}),
	specCase("spec-url-number", "url in body must be of type string", func(s map[string]any) { firstSpec(s, "coreFunction")["url"] = int64(42) }),
	specCase("role-object", "canvasSystemRole in body must be of type string", func(s map[string]any) {
		s["securityFunction"].(map[string]any)["canvasSystemRole"] = map[string]any{"admin": true}
	}),
	specCase("required-word", "required in body must be of type boolean", func(s map[string]any) {
		s["coreFunction"].(map[string]any)["dependentAPIs"].([]any)[0].(map[string]any)["required"] = "yes"
	}),
	specCase("gateway-config-list", "gatewayConfiguration in body must be of type object", func(s map[string]any) { firstAPI(s, "coreFunction")["gatewayConfiguration"] = []any{"rateLimit"} }),
	specCase("pod-selector-string", "podSelector in body must be of type object", func(s map[string]any) {
		s["securityFunction"].(map[string]any)["secretsManagement"] = map[string]any{"type": "sideCar", "podSelector": "all"}
	}),
	// Shapes and metadata the apiserver refuses.
	{"core-string", "coreFunction", func(u *unstructured.Unstructured) { fixtures.Spec(u)["coreFunction"] = "everything" }},
	{"exposed-object", "exposedAPIs", func(u *unstructured.Unstructured) {
		fixtures.Spec(u)["coreFunction"].(map[string]any)["exposedAPIs"] = map[string]any{"name": "x"}
	}},
	{"exposed-item-string", "exposedAPIs", func(u *unstructured.Unstructured) {
		fixtures.Spec(u)["coreFunction"].(map[string]any)["exposedAPIs"] = []any{"productcatalog"}
	}},
	{"port-float", "port", func(u *unstructured.Unstructured) { firstAPI(fixtures.Spec(u), "coreFunction")["port"] = 80.5 }},
	{"spec-number", "specification", func(u *unstructured.Unstructured) {
		firstAPI(fixtures.Spec(u), "coreFunction")["specification"] = int64(4)
	}},
	{"unicode-component-name", "metadata.name", func(u *unstructured.Unstructured) { u.SetName("prodüctcatalog") }},
	{"path-like-component-name", "metadata.name", func(u *unstructured.Unstructured) { u.SetName("..") }},
	{"annotation-number", "annotations", func(u *unstructured.Unstructured) {
		u.Object["metadata"].(map[string]any)["annotations"] = map[string]any{oda.AnnotationRotateCredentials: int64(1)}
	}},
	{"label-unicode", "metadata.labels", func(u *unstructured.Unstructured) { u.SetLabels(map[string]string{oda.LabelComponentName: "prodüct"}) }},
	{"huge-spec-over-limit", "too large", func(u *unstructured.Unstructured) {
		fixtures.Spec(u)["componentMetadata"].(map[string]any)["description"] = strings.Repeat("x", 1600*1024)
	}},
}

// condition returns the Ready condition's reason and message of any ODA object.
func condition(u *unstructured.Unstructured) (reason, message string) {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Ready" || len(conds) == 1 {
			return fmt.Sprint(m["reason"]), fmt.Sprint(m["message"])
		}
	}
	return "", ""
}

// child builds an ODA child object by hand, as a user could apply one.
func child(kind oda.Kind, ns, name string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": oda.APIVersion, "kind": kind.Name,
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     spec,
	}}
}

// assertNoWorkflowTaskFailed: a workflow that panicked or hit a
// non-determinism error shows WorkflowTaskFailed and is stuck behind it. A
// task failed because a signal arrived while it completed (UnhandledCommand)
// or because its sticky worker changed is Temporal's normal retry, not a
// crash.
func assertNoWorkflowTaskFailed(t *testing.T, workflowID string) {
	t.Helper()
	it := stack.tc.GetWorkflowHistory(context.Background(), workflowID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Errorf("history of %s: %v", workflowID, err)
			return
		}
		a := ev.GetWorkflowTaskFailedEventAttributes()
		if a == nil {
			continue
		}
		switch a.GetCause() {
		case enumspb.WORKFLOW_TASK_FAILED_CAUSE_UNHANDLED_COMMAND, enumspb.WORKFLOW_TASK_FAILED_CAUSE_RESET_STICKY_TASK_QUEUE:
			continue
		}
		t.Errorf("%s: workflow task failed (%s): %s", workflowID, a.GetCause(), a.GetFailure().GetMessage())
	}
}

// TestMalformedComponentsEachFailClearly applies the whole bad-input corpus
// at once in one namespace, next to healthy Components: every malformed
// Component is refused by the schema with a clear error or ends Failed with
// a condition and a Warning Event naming the problem; hand-made children
// with hostile paths or no owner end in their documented state; nothing
// crashes (no workflow task failure, both processes ready, no goroutine
// leak); and the healthy Components, two of them depending on each other's
// API, reach Complete meanwhile.
func TestMalformedComponentsEachFailClearly(t *testing.T) {
	ns := "it-badinput"
	createNamespace(t, ns)
	ensureIngress(t)
	setIngressAddress(t, "34.159.217.74")
	for _, svc := range []string{"ctk-prodcatapi", "ctk-promgmtapi", "ctk-productcatalogmanagement-sm", "ctk-partyroleapi"} {
		setEndpoints(t, ns, svc, true)
	}
	ctx := context.Background()
	goroutines := runtime.NumGoroutine()
	start := time.Now()
	res := stack.dyn.Resource(oda.KindComponent.GVR()).Namespace(ns)

	// The healthy ones first, so that they hold their paths.
	good := fixtures.WithOwnPaths(fixtures.WithoutDependentAPIs(fixtures.ProductCatalog(ns, "good-neighbour")))
	// Its catalogue API has a specification of its own, so that only the
	// loop pair below can satisfy each other's dependency.
	firstSpec(fixtures.Spec(good), "coreFunction")["url"] = "https://example.com/good-neighbour/TMF620-v4.0.0.swagger.json"
	create(t, oda.KindComponent, good)
	// A loop of dependencies: each of the pair depends on the
	// productcatalogmanagement API the other one exposes.
	for _, name := range []string{"loop-a", "loop-b"} {
		create(t, oda.KindComponent, fixtures.WithOwnPaths(fixtures.ProductCatalog(ns, name)))
	}

	cases := 0
	for _, c := range schemaCases {
		cases++
		u := fixtures.WithOwnPaths(fixtures.ProductCatalog(ns, "rej-"+c.name))
		c.break_(u)
		_, err := res.Create(ctx, u, metav1.CreateOptions{})
		switch {
		case err == nil:
			t.Errorf("%s: the apiserver accepted it; the corpus expects its schema to refuse it", c.name)
		case !strings.Contains(err.Error(), c.want):
			t.Errorf("%s: the apiserver's error %q does not mention %q", c.name, err, c.want)
		}
	}

	// A Component whose name cannot be a label value: its children could not
	// carry the oda.tmforum.org/componentName label the Canvas relies on.
	long := fixtures.WithOwnPaths(fixtures.ProductCatalog(ns, "bad-"+strings.Repeat("long", 16)))
	long.SetLabels(nil)
	if _, err := res.Create(ctx, long, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create the long-named Component: %v", err)
	}
	failing := map[string]string{long.GetName(): "label"}
	for _, c := range badCases {
		name := "bad-" + c.name
		u := fixtures.WithOwnPaths(fixtures.ProductCatalog(ns, name))
		c.breakSpec(fixtures.Spec(u))
		if _, err := res.Create(ctx, u, metav1.CreateOptions{}); err != nil {
			t.Errorf("%s: refused by the apiserver (%v); the corpus expects it to reach odaflow", c.name, err)
			continue
		}
		failing[name] = c.want
	}
	// Missing and empty specs: the schema requires neither.
	for name, spec := range map[string]map[string]any{"bad-no-spec": nil, "bad-empty-spec": {}} {
		u := fixtures.ProductCatalog(ns, name)
		if spec == nil {
			delete(u.Object, "spec")
		} else {
			u.Object["spec"] = spec
		}
		create(t, oda.KindComponent, u)
	}
	failing["bad-no-spec"] = "spec: is required"
	failing["bad-empty-spec"] = "is required"
	cases += 3 + len(badCases)

	// Hand-made ExposedAPIs without an owner: one asks for the gateway's
	// root, one for the good neighbour's path (it holds it already).
	goodPath := firstAPI(fixtures.Spec(good), "coreFunction")["path"].(string)
	orphanSpec := func(path string) map[string]any {
		return map[string]any{"name": "x", "apiType": "openapi", "implementation": "ctk-prodcatapi", "path": path, "port": int64(8080)}
	}
	eventually(t, 60*time.Second, "the good neighbour's ExposedAPIs", func() (bool, string) {
		apis := listChildren(t, oda.KindExposedAPI, ns, "good-neighbour")
		return len(apis) == 4, fmt.Sprint(apis)
	})
	orphans := map[string]string{"orphan-root": "every path on the gateway", "orphan-takeover": "already exposed by"}
	create(t, oda.KindExposedAPI, child(oda.KindExposedAPI, ns, "orphan-root", orphanSpec("/")))
	create(t, oda.KindExposedAPI, child(oda.KindExposedAPI, ns, "orphan-takeover", orphanSpec(goodPath)))
	// Policy values the gateway itself would refuse stay InvalidSpec (an
	// empty one is "not set", see the test kit's charts): APISIX's
	// limit-count takes a positive count only, and Kong's rate-limiting
	// plugin needs a number of requests per interval.
	for name, policy := range map[string]map[string]any{
		"orphan-quota-word": {"quota": map[string]any{"identifier": "consumer", "limit": "lots"}},
		"orphan-quota-zero": {"quota": map[string]any{"identifier": "consumer", "limit": "0"}},
		"orphan-rate-word":  {"rateLimit": map[string]any{"enabled": true, "identifier": "IP", "limit": "many", "interval": "pm"}},
	} {
		spec := orphanSpec("/" + name + "/x")
		for k, v := range policy {
			spec[k] = v
		}
		create(t, oda.KindExposedAPI, child(oda.KindExposedAPI, ns, name, spec))
	}
	orphans["orphan-quota-word"] = `spec.quota.limit: must be a positive integer, got "lots"`
	orphans["orphan-quota-zero"] = `spec.quota.limit: must be a positive integer, got "0"`
	orphans["orphan-rate-word"] = `spec.rateLimit.limit: must be a positive integer, got "many"`
	// A child whose owner reference names the good neighbour with the wrong
	// uid: the garbage collector removes it, as for any dangling owner.
	fake := child(oda.KindExposedAPI, ns, "wrong-owner-uid", orphanSpec("/wrong-owner-uid/x"))
	fake.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: oda.APIVersion, Kind: oda.KindComponent.Name, Name: "good-neighbour", UID: "00000000-0000-0000-0000-000000000000"}})
	create(t, oda.KindExposedAPI, fake)
	// Other kinds without an owner end as they would under a Component
	// (the Canvas too handles them alone), with nothing to report to.
	looseWant := map[string]string{"DependentAPI": "NoProvider", "IdentityConfig": "Ready", "SecretsManagement": "Ready"}
	loose := []*unstructured.Unstructured{
		child(oda.KindDependentAPI, ns, "orphan-dependentapi", map[string]any{"name": "d", "apiType": "openapi", "specification": map[string]any{"url": "https://nowhere.example/x-v1.json"}}),
		child(oda.KindIdentityConfig, ns, "orphan-identityconfig", map[string]any{"canvasSystemRole": "Admin"}),
		child(oda.KindSecretsManagement, ns, "orphan-secretsmanagement", map[string]any{"type": "sideCar", "podSelector": map[string]any{"name": "none"}}),
	}
	for _, u := range loose {
		kind, _ := oda.KindByName(u.GetKind())
		create(t, kind, u)
	}
	// Hostile children (docs/tenancy.md): a reserved Keycloak client, hub
	// URLs that leave the namespace, a SecretsManagement reaching into
	// kube-system. Each is refused before any outside system is called.
	hub := func(impl, path string) map[string]any {
		return map[string]any{"canvasSystemRole": "Admin", "partyRoleAPI": map[string]any{"implementation": impl, "path": path, "port": int64(80)}}
	}
	hostile := []struct {
		u         *unstructured.Unstructured
		want      string
		nothingAt string // a Secret that must not appear
	}{
		{child(oda.KindIdentityConfig, ns, "canvassystem", map[string]any{"canvasSystemRole": "Admin"}), "reserved Keycloak client", "canvassystem-secret"},
		{child(oda.KindIdentityConfig, ns, "realm-management", map[string]any{"canvasSystemRole": "Admin"}), "reserved Keycloak client", "realm-management-secret"},
		{child(oda.KindIdentityConfig, ns, "hostile-metadata", hub("169.254.169.254/latest/meta-data?", "/x")), "must be the name of a Service", "hostile-metadata-secret"},
		{child(oda.KindIdentityConfig, ns, "hostile-path", hub("ctk-partyroleapi", "/@169.254.169.254/../x?y")), "segments may hold only", "hostile-path-secret"},
		{child(oda.KindSecretsManagement, ns, "hostile-kube-system", map[string]any{"type": "sideCar", "podSelector": map[string]any{"namespace": "kube-system"}}), "does not match the SecretsManagement's namespace", ""},
	}
	for _, h := range hostile {
		kind, _ := oda.KindByName(h.u.GetKind())
		create(t, kind, h.u)
	}
	cases += len(orphans) + 1 + len(loose) + len(hostile)
	if cases < 50 {
		t.Errorf("the corpus has %d cases; it must have at least 50", cases)
	}

	for name, want := range failing {
		u := waitPhase(t, ns, name, oda.StatusFailed, 60*time.Second)
		if _, msg := condition(u); !strings.Contains(msg, want) {
			t.Errorf("%s: condition message %q does not mention %q", name, msg, want)
		}
	}
	// No child was created for an invalid spec (listed by owner: the
	// long name cannot be a label selector).
	all, err := stack.dyn.Resource(oda.KindExposedAPI.GVR()).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list ExposedAPIs: %v", err)
	}
	for _, it := range all.Items {
		for _, o := range it.GetOwnerReferences() {
			if _, bad := failing[o.Name]; bad {
				t.Errorf("%s: child %s was created for an invalid spec", o.Name, it.GetName())
			}
		}
	}
	for name, want := range failing {
		eventually(t, 30*time.Second, name+": a Warning Event", func() (bool, string) {
			evs := eventsFor(t, ns, name)
			return containsAny(evs, "Warning/InvalidSpec: ") && containsAny(evs, want), fmt.Sprint(evs)
		})
		assertNoWorkflowTaskFailed(t, oda.WorkflowID(oda.KindComponent.Name, ns, name))
	}
	for name, want := range orphans {
		eventually(t, 60*time.Second, name+" Failed with a reason", func() (bool, string) {
			u, err := get(oda.KindExposedAPI, ns, name)
			if err != nil {
				return false, err.Error()
			}
			_, msg := condition(u)
			return strings.Contains(msg, want) && containsAny(eventsFor(t, ns, name), "Warning/"), msg
		})
		assertNoWorkflowTaskFailed(t, oda.WorkflowID(oda.KindExposedAPI.Name, ns, name))
	}
	eventually(t, 60*time.Second, "the child with a wrong owner uid is garbage-collected", func() (bool, string) {
		_, err := get(oda.KindExposedAPI, ns, "wrong-owner-uid")
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	for _, u := range loose {
		kind, _ := oda.KindByName(u.GetKind())
		eventually(t, 60*time.Second, u.GetKind()+" without owner has a condition", func() (bool, string) {
			got, err := get(kind, ns, u.GetName())
			if err != nil {
				return false, err.Error()
			}
			reason, msg := condition(got)
			return reason == looseWant[u.GetKind()], reason + ": " + msg
		})
		got := mustGet(t, kind, ns, u.GetName())
		reason, msg := condition(got)
		t.Logf("%s without owner: %s: %s", u.GetKind(), reason, msg)
		assertNoWorkflowTaskFailed(t, oda.WorkflowID(u.GetKind(), ns, u.GetName()))
	}

	for _, h := range hostile {
		kind, _ := oda.KindByName(h.u.GetKind())
		name := h.u.GetName()
		eventually(t, 60*time.Second, name+" refused with the reason and a Warning Event", func() (bool, string) {
			got, err := get(kind, ns, name)
			if err != nil {
				return false, err.Error()
			}
			reason, msg := condition(got)
			return reason == "InvalidSpec" && strings.Contains(msg, h.want) && containsAny(eventsFor(t, ns, name), "Warning/InvalidSpec"), reason + ": " + msg
		})
		if h.nothingAt != "" {
			if _, err := stack.core.CoreV1().Secrets(ns).Get(ctx, h.nothingAt, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("%s: Secret %s exists (%v)", name, h.nothingAt, err)
			}
		}
		assertNoWorkflowTaskFailed(t, oda.WorkflowID(h.u.GetKind(), ns, name))
	}

	// Other resources progress: the neighbour and the dependency loop.
	for _, name := range []string{"good-neighbour", "loop-a", "loop-b"} {
		waitPhase(t, ns, name, oda.StatusComplete, 90*time.Second)
		assertNoWorkflowTaskFailed(t, oda.WorkflowID(oda.KindComponent.Name, ns, name))
	}
	for _, name := range []string{"loop-a", "loop-b"} {
		other := map[string]string{"loop-a": "loop-b", "loop-b": "loop-a"}[name]
		// Its partner's API, in the same namespace: another Component's
		// API wins over its own, which it may hold for a moment while its
		// partner's is not ready yet.
		var url string
		eventually(t, 30*time.Second, name+" resolved to another component's API", func() (bool, string) {
			u := mustGet(t, oda.KindComponent, ns, name)
			deps, _, _ := unstructured.NestedSlice(u.Object, "status", "coreDependentAPIs")
			url = ""
			if len(deps) == 1 {
				url = fmt.Sprint(deps[0].(map[string]any)["url"])
			}
			return strings.Contains(url, "/"+other+"/"), fmt.Sprintf("coreDependentAPIs %v, want a url of its partner %s, in its namespace", deps, other)
		})
		t.Logf("%s depends on %s", name, url)
	}

	// Nothing crashed: both processes still report ready, and the corpus
	// left no goroutines behind in them.
	for what, addr := range map[string]string{"worker": stack.workerHTTP, "watcher": stack.watcherHTTP} {
		if code, body := readyz(addr); code != 200 {
			t.Errorf("%s /readyz: %d %s", what, code, body)
		}
	}
	eventually(t, 30*time.Second, "goroutines back near where they were", func() (bool, string) {
		n := runtime.NumGoroutine()
		return n < goroutines+200, fmt.Sprintf("%d goroutines, %d before", n, goroutines)
	})
	t.Logf("%d bad-input cases (%d refused by the schema, %d Failed by odaflow, %d hand-made children) in %s; the 3 healthy Components Complete",
		cases, len(schemaCases), len(failing), len(orphans)+1+len(loose), time.Since(start).Round(time.Second))
}
