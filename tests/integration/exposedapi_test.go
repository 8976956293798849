package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/odaflow/odaflow/oda"
	"github.com/odaflow/odaflow/tests/fixtures"
)

var virtualServices = schema.GroupVersionResource{Group: "networking.istio.io", Version: "v1", Resource: "virtualservices"}

var serviceMonitors = schema.GroupVersionResource{Group: "monitoring.coreos.com", Version: "v1", Resource: "servicemonitors"}

// ensureIngress creates the Istio ingress Service without an address.
func ensureIngress(t *testing.T) {
	t.Helper()
	cluster().EnsureIngress(t)
}

func setIngressAddress(t *testing.T, ip string) {
	t.Helper()
	cluster().SetIngressAddress(t, ip)
}

// setEndpoints creates or updates the implementation Service's EndpointSlice.
func setEndpoints(t *testing.T, ns, service string, ready bool) {
	t.Helper()
	cluster().SetEndpoints(t, ns, service, ready)
}

func apiStatus(u *unstructured.Unstructured) (url string, ready bool) {
	url, _, _ = unstructured.NestedString(u.Object, "status", "apiStatus", "url")
	ready, _, _ = unstructured.NestedBool(u.Object, "status", "implementation", "ready")
	return url, ready
}

func waitExposed(t *testing.T, ns, name string, wantURL bool, wantReady bool) *unstructured.Unstructured {
	t.Helper()
	var got *unstructured.Unstructured
	eventually(t, 30*time.Second, fmt.Sprintf("ExposedAPI %s url=%t ready=%t", name, wantURL, wantReady), func() (bool, string) {
		u, err := get(oda.KindExposedAPI, ns, name)
		if err != nil {
			return false, err.Error()
		}
		got = u
		url, ready := apiStatus(u)
		return (url != "") == wantURL && ready == wantReady, fmt.Sprintf("url=%q ready=%t", url, ready)
	})
	return got
}

func TestExposedAPILifecycleOnRealServers(t *testing.T) {
	ns := "it-expose"
	createNamespace(t, ns)
	ensureIngress(t)
	setIngressAddress(t, "")
	comp := fixtures.WithoutAPI(fixtures.WithoutDependentAPIs(fixtures.ProductCatalog(ns, component)), "promotionmanagement")
	impls := map[string]string{
		component + "-productcatalogmanagement-v4": "ctk-prodcatapi",
		component + "-metrics":                     "ctk-productcatalogmanagement-sm",
		component + "-partyrole-v4":                "ctk-partyroleapi",
	}
	for _, svc := range impls {
		setEndpoints(t, ns, svc, false)
	}
	create(t, oda.KindComponent, comp)
	core := component + "-productcatalogmanagement-v4"

	// Route published; no address yet: the workflow waits durably.
	eventually(t, 30*time.Second, "VirtualService published", func() (bool, string) {
		vs, err := stack.dyn.Resource(virtualServices).Namespace(ns).Get(context.Background(), core, metav1.GetOptions{})
		if err != nil {
			api, _ := get(oda.KindExposedAPI, ns, core)
			return false, fmt.Sprintf("%v; ExposedAPI status %v", err, api)
		}
		owners := vs.GetOwnerReferences()
		return len(owners) == 1 && owners[0].Kind == "ExposedAPI" && owners[0].Name == core, fmt.Sprint(owners)
	})
	waitExposed(t, ns, core, false, false)
	waitPhase(t, ns, component, oda.StatusCompCon, 10*time.Second)
	// The metrics API is scraped through a ServiceMonitor on its
	// implementation, owned by the ExposedAPI (§2.2.1).
	metrics := component + "-metrics"
	eventually(t, 30*time.Second, "ServiceMonitor of the metrics API", func() (bool, string) {
		sm, err := stack.dyn.Resource(serviceMonitors).Namespace(ns).Get(context.Background(), metrics, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		sel, _, _ := unstructured.NestedString(sm.Object, "spec", "selector", "matchLabels", "name")
		owners := sm.GetOwnerReferences()
		return sel == "ctk-productcatalogmanagement-sm" && len(owners) == 1 && owners[0].Name == metrics, fmt.Sprintf("selector %q owners %v", sel, owners)
	})

	// The address appears: every url is filled.
	setIngressAddress(t, "34.159.217.74")
	for name := range impls {
		u := waitExposed(t, ns, name, true, false)
		url, _ := apiStatus(u)
		path, _, _ := unstructured.NestedString(u.Object, "spec", "path")
		if url != "https://34.159.217.74"+path {
			t.Errorf("%s url = %q, want https://34.159.217.74%s", name, url, path)
		}
	}

	// Implementations become ready, then one goes down, then up again.
	for _, svc := range impls {
		setEndpoints(t, ns, svc, true)
	}
	for name := range impls {
		waitExposed(t, ns, name, true, true)
	}
	waitPhase(t, ns, component, oda.StatusComplete, 30*time.Second)
	setEndpoints(t, ns, "ctk-prodcatapi", false)
	waitExposed(t, ns, core, true, false)
	waitPhase(t, ns, component, oda.StatusCompCon, 30*time.Second)
	setEndpoints(t, ns, "ctk-prodcatapi", true)
	waitExposed(t, ns, core, true, true)
	waitPhase(t, ns, component, oda.StatusComplete, 30*time.Second)
	recordHistory(t, oda.WorkflowID("ExposedAPI", ns, core), "exposedapi-lifecycle.json")
	// A metrics API's readiness changes call Expose again (its pods are
	// annotated in the annotation metrics modes): replayed too.
	recordHistory(t, oda.WorkflowID("ExposedAPI", ns, metrics), "exposedapi-metrics.json")

	// An upgrade that changes the path moves the route.
	updateComponent(t, ns, component, func(cur *unstructured.Unstructured) {
		apis, _, _ := unstructured.NestedSlice(cur.Object, "spec", "coreFunction", "exposedAPIs")
		apis[0].(map[string]any)["path"] = "/ctk-productcatalogmanagement/tmf-api/productCatalogManagement/v4-moved"
		_ = unstructured.SetNestedSlice(cur.Object, apis, "spec", "coreFunction", "exposedAPIs")
	})
	eventually(t, 30*time.Second, "VirtualService follows the new path", func() (bool, string) {
		vs, err := stack.dyn.Resource(virtualServices).Namespace(ns).Get(context.Background(), core, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return strings.Contains(fmt.Sprint(vs.Object["spec"]), "v4-moved"), fmt.Sprint(vs.Object["spec"])
	})
	eventually(t, 30*time.Second, "url follows the new path", func() (bool, string) {
		url, _ := apiStatus(mustGet(t, oda.KindExposedAPI, ns, core))
		return strings.HasSuffix(url, "v4-moved"), url
	})

	// A second ExposedAPI claiming the same path prefix loses, visibly, and
	// so does one claiming a prefix of it (its route would take the first
	// one's requests); the first is untouched.
	path, _, _ := unstructured.NestedString(mustGet(t, oda.KindExposedAPI, ns, core).Object, "spec", "path")
	for name, claim := range map[string]string{"intruder": path, "prefix-intruder": path[:strings.LastIndex(path, "/")]} {
		intruder := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": oda.APIVersion, "kind": "ExposedAPI",
			"metadata": map[string]any{"name": name, "namespace": ns},
			"spec":     map[string]any{"name": name, "apiType": "openapi", "implementation": "ctk-prodcatapi", "path": claim, "port": int64(8080)},
		}}
		create(t, oda.KindExposedAPI, intruder)
		eventually(t, 30*time.Second, name+" is Failed with a PathConflict", func() (bool, string) {
			u := mustGet(t, oda.KindExposedAPI, ns, name)
			conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
			if len(conds) == 0 {
				return false, "no condition"
			}
			c := conds[0].(map[string]any)
			return c["reason"] == "PathConflict" && strings.Contains(fmt.Sprint(c["message"]), ns+"/"+core), fmt.Sprint(c)
		})
		if _, err := stack.dyn.Resource(virtualServices).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("the losing ExposedAPI %s has a VirtualService (err=%v)", name, err)
		}
		eventually(t, 15*time.Second, "a Warning event for the conflict of "+name, func() (bool, string) {
			evs := eventsFor(t, ns, name)
			return containsAny(evs, "Warning/PathConflict"), fmt.Sprint(evs)
		})
	}
	if url, ready := apiStatus(mustGet(t, oda.KindExposedAPI, ns, core)); url == "" || !ready {
		t.Errorf("the first ExposedAPI changed: url=%q ready=%t", url, ready)
	}

	// Uninstall: ExposedAPIs and their VirtualServices go with the Component.
	if err := stack.dyn.Resource(oda.KindComponent.GVR()).Namespace(ns).Delete(context.Background(), component, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// (The older intruder now takes the free path over: that is the rule.)
	eventually(t, 60*time.Second, "the component's VirtualServices garbage-collected", func() (bool, string) {
		l, err := stack.dyn.Resource(virtualServices).Namespace(ns).List(context.Background(), metav1.ListOptions{LabelSelector: oda.LabelComponentName + "=" + component})
		if err != nil {
			return false, err.Error()
		}
		return len(l.Items) == 0, fmt.Sprint(len(l.Items))
	})
	coreID := oda.WorkflowID("ExposedAPI", ns, core)
	eventually(t, 30*time.Second, "the ExposedAPI's lifecycle closed", func() (bool, string) {
		st, err := workflowStatus(coreID)
		return err == nil && st == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, fmt.Sprint(st, err)
	})
	recordHistory(t, coreID, "exposedapi-upgrade-delete.json")
}
