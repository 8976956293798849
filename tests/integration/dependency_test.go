package integration

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/odaflow/odaflow/dependency"
	"github.com/odaflow/odaflow/oda"
	"github.com/odaflow/odaflow/tests/fixtures"
)

const (
	providerComponent  = "r-cat-productcatalogmanagement"
	dependantComponent = "f-cat-productcatalogmanagement"
)

// dependencyStatus reads a DependentAPI's url and ready flag.
func dependencyStatus(u *unstructured.Unstructured) (string, bool) {
	url, _, _ := unstructured.NestedString(u.Object, "status", "depapiStatus", "url")
	ready, _, _ := unstructured.NestedBool(u.Object, "status", "implementation", "ready")
	return url, ready
}

func waitDependency(t *testing.T, ns, name, wantURL string, wantReady bool) {
	t.Helper()
	eventually(t, 60*time.Second, "DependentAPI "+name, func() (bool, string) {
		u, err := get(oda.KindDependentAPI, ns, name)
		if err != nil {
			return false, err.Error()
		}
		url, ready := dependencyStatus(u)
		return url == wantURL && ready == wantReady, "url " + url + ", ready " + map[bool]string{true: "true", false: "false"}[ready]
	})
}

// inventoryRecord returns the Service Inventory's record of the dependant's
// dependency: its state and url ("" when there is none).
func inventoryRecord(component string) (state, url string, n int) {
	for _, s := range stack.inventory.Services() {
		if dependency.Characteristic(s, dependency.CharComponentName) == component {
			n++
			state, _ = s["state"].(string)
			url = dependency.Characteristic(s, dependency.CharURL)
		}
	}
	return state, url, n
}

// installDependencyPair installs the provider and the dependant in the given
// order and checks that both reach Complete with the dependency resolved to
// the provider.
//
// With the provider first, the dependant is the Canvas's dependent-API
// example: it exposes the TMF620 API it depends on, and the provider's
// wins over its own. With the provider later, the dependant only consumes
// the API: one that exposes it would resolve against itself and never
// wait (dependency.Match rule 3).
func installDependencyPair(t *testing.T, ns string, providerFirst bool) (depName, providerURL string) {
	readyNamespace(t, ns)
	provider := fixtures.WithOwnPaths(fixtures.WithoutDependentAPIs(fixtures.ProductCatalog(ns, providerComponent)))
	dependant := fixtures.WithOwnPaths(fixtures.ProductCatalog(ns, dependantComponent))
	if !providerFirst {
		dependant = fixtures.WithoutAPI(dependant, "productcatalogmanagement")
	}
	if providerFirst {
		create(t, oda.KindComponent, provider)
		waitPhase(t, ns, providerComponent, oda.StatusComplete, 60*time.Second)
		create(t, oda.KindComponent, dependant)
	} else {
		create(t, oda.KindComponent, dependant)
		// With no provider the dependant waits, truthfully, at its
		// dependent-API step.
		waitPhase(t, ns, dependantComponent, oda.StatusDepAPI, 60*time.Second)
		deps := listChildren(t, oda.KindDependentAPI, ns, dependantComponent)
		if len(deps) != 1 {
			t.Fatalf("DependentAPIs = %v, want one", deps)
		}
		waitDependency(t, ns, deps[0], "", false)
		create(t, oda.KindComponent, provider)
	}
	var deps []string
	eventually(t, 60*time.Second, "the dependant's DependentAPI", func() (bool, string) {
		deps = listChildren(t, oda.KindDependentAPI, ns, dependantComponent)
		return len(deps) == 1, fmt.Sprint(deps)
	})
	api := waitExposed(t, ns, providerComponent+"-productcatalogmanagement-v4", true, true)
	providerURL, _ = apiStatus(api)
	waitDependency(t, ns, deps[0], providerURL, true)
	waitPhase(t, ns, providerComponent, oda.StatusComplete, 60*time.Second)
	done := waitPhase(t, ns, dependantComponent, oda.StatusComplete, 60*time.Second)
	// The Component's own entry carries the url (every segment, not only core).
	entries, _, _ := unstructured.NestedSlice(done.Object, "status", "coreDependentAPIs")
	if len(entries) != 1 || entries[0].(map[string]any)["url"] != providerURL || entries[0].(map[string]any)["ready"] != true {
		t.Fatalf("coreDependentAPIs = %v, want the provider's url and ready", entries)
	}
	return deps[0], providerURL
}

func TestDependencyResolvedWhenTheProviderComesLater(t *testing.T) {
	ns := "it-deps-later"
	depName, providerURL := installDependencyPair(t, ns, false)
	eventually(t, 30*time.Second, "Service Inventory record", func() (bool, string) {
		state, url, n := inventoryRecord(dependantComponent)
		return state == "active" && url == providerURL && n == 1, state + " " + url
	})
	recordHistory(t, oda.WorkflowID(oda.KindDependentAPI.Name, ns, depName), "dependentapi-lifecycle.json")

	// The provider goes away: the dependant is told, and so is its Component.
	deleteComponent(t, ns, providerComponent)
	waitDependency(t, ns, depName, "", false)
	waitPhase(t, ns, dependantComponent, oda.StatusDepAPI, 60*time.Second)
	eventually(t, 30*time.Second, "Service Inventory record inactive", func() (bool, string) {
		state, _, n := inventoryRecord(dependantComponent)
		return state == "inactive" && n == 1, state
	})

	// Uninstalling the dependant removes its record.
	deleteComponent(t, ns, dependantComponent)
	eventually(t, 60*time.Second, "DependentAPI gone", func() (bool, string) {
		_, err := get(oda.KindDependentAPI, ns, depName)
		return err != nil, "still there"
	})
	if _, _, n := inventoryRecord(dependantComponent); n != 0 {
		t.Fatalf("Service Inventory still holds %d record(s) of %s", n, dependantComponent)
	}
}

// TestDependencyOnItsOwnAPIUntilAnotherProvides: a Component that depends
// on an API it exposes itself (the Canvas's productcatalog-enhanced-v1)
// completes alone, resolved against its own ExposedAPI, as in the Canvas.
// Another Component's ExposedAPI, once ready, wins; when that one leaves,
// the dependency falls back to its own and the Component stays Complete.
// The API has a specification URL of this test's own, so that no other
// test's Component can provide it.
func TestDependencyOnItsOwnAPIUntilAnotherProvides(t *testing.T) {
	const (
		ns       = "it-deps-own"
		self     = "o-cat-productcatalogmanagement"
		other    = "p-cat-productcatalogmanagement"
		ownSpec  = "https://example.com/it-deps-own/TMF620-ProductCatalog-v4.0.0.swagger.json"
		catalog  = "-productcatalogmanagement-v4"
		deadline = 60 * time.Second
	)
	readyNamespace(t, ns)
	dependant := fixtures.WithOwnPaths(fixtures.ProductCatalog(ns, self))
	firstSpec(fixtures.Spec(dependant), "coreFunction")["url"] = ownSpec
	deps, _, _ := unstructured.NestedSlice(dependant.Object, "spec", "coreFunction", "dependentAPIs")
	deps[0].(map[string]any)["specification"] = []any{map[string]any{"url": ownSpec}}
	_ = unstructured.SetNestedSlice(dependant.Object, deps, "spec", "coreFunction", "dependentAPIs")
	create(t, oda.KindComponent, dependant)

	var depName string
	eventually(t, deadline, "the DependentAPI", func() (bool, string) {
		names := listChildren(t, oda.KindDependentAPI, ns, self)
		if len(names) == 1 {
			depName = names[0]
		}
		return len(names) == 1, fmt.Sprint(names)
	})
	ownURL, _ := apiStatus(waitExposed(t, ns, self+catalog, true, true))
	waitDependency(t, ns, depName, ownURL, true)
	waitPhase(t, ns, self, oda.StatusComplete, deadline)
	eventually(t, 30*time.Second, "Service Inventory record of its own API", func() (bool, string) {
		state, url, n := inventoryRecord(self)
		return state == "active" && url == ownURL && n == 1, state + " " + url
	})

	// Another Component provides the API: it wins over the own one.
	provider := fixtures.WithOwnPaths(fixtures.WithoutDependentAPIs(fixtures.ProductCatalog(ns, other)))
	firstSpec(fixtures.Spec(provider), "coreFunction")["url"] = ownSpec
	create(t, oda.KindComponent, provider)
	otherURL, _ := apiStatus(waitExposed(t, ns, other+catalog, true, true))
	if otherURL == ownURL {
		t.Fatalf("the two Components' APIs share the url %s", ownURL)
	}
	waitDependency(t, ns, depName, otherURL, true)
	eventually(t, 30*time.Second, "Service Inventory record of the other's API", func() (bool, string) {
		state, url, n := inventoryRecord(self)
		return state == "active" && url == otherURL && n == 1, state + " " + url
	})

	// It leaves: the dependency falls back to the Component's own API.
	deleteComponent(t, ns, other)
	waitDependency(t, ns, depName, ownURL, true)
	eventually(t, deadline, "the Component Complete with its own API's url", func() (bool, string) {
		u, err := get(oda.KindComponent, ns, self)
		if err != nil {
			return false, err.Error()
		}
		entries, _, _ := unstructured.NestedSlice(u.Object, "status", "coreDependentAPIs")
		ok := len(entries) == 1 && entries[0].(map[string]any)["url"] == ownURL && entries[0].(map[string]any)["ready"] == true
		return ok && deploymentStatus(u) == oda.StatusComplete, fmt.Sprintf("%s, coreDependentAPIs %v", deploymentStatus(u), entries)
	})
	deleteComponent(t, ns, self)
}

func TestDependencyResolvedWhenTheProviderIsThereFirst(t *testing.T) {
	ns := "it-deps-first"
	depName, _ := installDependencyPair(t, ns, true)
	// An upgrade of the provider that moves its API: the dependant follows.
	updateComponent(t, ns, providerComponent, func(cur *unstructured.Unstructured) {
		apis, _, _ := unstructured.NestedSlice(cur.Object, "spec", "coreFunction", "exposedAPIs")
		for _, a := range apis {
			m := a.(map[string]any)
			if m["name"] == "productcatalogmanagement" {
				m["path"] = "/" + providerComponent + "/tmf-api/productCatalogManagement/v4-moved"
			}
		}
		_ = unstructured.SetNestedSlice(cur.Object, apis, "spec", "coreFunction", "exposedAPIs")
	})
	eventually(t, 60*time.Second, "dependant follows the moved provider", func() (bool, string) {
		u, err := get(oda.KindDependentAPI, ns, depName)
		if err != nil {
			return false, err.Error()
		}
		url, ready := dependencyStatus(u)
		return ready && len(url) > 0 && url[len(url)-6:] == "-moved", url
	})
}
