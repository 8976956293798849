package integration

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/odaflow/odaflow/gateway"
	"github.com/odaflow/odaflow/internal/doubles/kongadmin"
	"github.com/odaflow/odaflow/oda"
	"github.com/odaflow/odaflow/tests/fixtures"
)

// outage is how long Keycloak, Kong's Admin API and the Service Inventory
// stay down together. It is longer than the two minutes a Kong write is
// retried inside one attempt, so that the failure reaches the status.
const outage = 150 * time.Second

// readyReason is the reason of an object's Ready condition.
func readyReason(u *unstructured.Unstructured) string {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, _ := c.(map[string]any); m["type"] == "Ready" {
			return fmt.Sprint(m["status"], "/", m["reason"])
		}
	}
	return ""
}

// TestExternalServicesDownForMinutes takes the Keycloak, Kong Admin and
// Service Inventory doubles down together for minutes while two Components
// (each with an identity, Kong-exposed APIs and a dependency recorded in the
// inventory) are installed: the status says why, a Warning Event is there,
// the requests made meanwhile are bounded by the backoff, and once the
// doubles are back everything converges with one create per object.
func TestExternalServicesDownForMinutes(t *testing.T) {
	gs := startGatewayStack(t, "kong-admin", "34.159.217.82")
	ns := gs.nsPrefix + "down"
	createNamespace(t, ns)
	for _, svc := range faultImplementations {
		setEndpoints(t, ns, svc, true)
	}
	// The provider is installed before the outage: the dependants resolve
	// their dependency to it while the inventory is down.
	provider := "dp-productcatalogmanagement"
	create(t, oda.KindComponent, fixtures.WithOwnPaths(fixtures.WithoutDependentAPIs(fixtures.ProductCatalog(ns, provider))))
	waitPhase(t, ns, provider, oda.StatusComplete, 90*time.Second)
	providerAPI := provider + "-productcatalogmanagement-v4"
	providerURL, _ := apiStatus(mustGet(t, oda.KindExposedAPI, ns, providerAPI))

	kcMark, invMark := len(stack.keycloak.Requests()), len(stack.inventory.Requests())
	gs.kong.ClearRequests()
	stack.keycloak.SetUnavailable(http.StatusServiceUnavailable)
	gs.kong.SetFault(kongadmin.FaultUnavailable)
	stack.inventory.SetDown(true)
	down := time.Now()
	restored := false
	restore := func() {
		if !restored {
			stack.keycloak.SetUnavailable(0)
			gs.kong.SetFault(kongadmin.FaultNone)
			stack.inventory.SetDown(false)
			restored = true
		}
	}
	t.Cleanup(restore)

	dependants := []string{"dd1-productcatalogmanagement", "dd2-productcatalogmanagement"}
	for _, name := range dependants {
		create(t, oda.KindComponent, fixtures.WithOwnPaths(fixtures.ProductCatalog(ns, name)))
	}

	// While they are down: each dependant's IdentityConfig, ExposedAPIs and
	// DependentAPI say why they are not ready, with a Warning Event.
	want := map[string]string{} // object → reason
	for _, name := range dependants {
		want["IdentityConfig/"+name] = "KeycloakUnavailable"
		want["ExposedAPI/"+name+"-productcatalogmanagement-v4"] = "ExposeFailed"
	}
	eventually(t, outage, "every reason in status and a Warning Event", func() (bool, string) {
		var missing []string
		for obj, reason := range want {
			kind, name, _ := strings.Cut(obj, "/")
			k := oda.KindIdentityConfig
			if kind == "ExposedAPI" {
				k = oda.KindExposedAPI
			}
			u, err := get(k, ns, name)
			if err != nil || readyReason(u) != "False/"+reason || !containsAny(eventsFor(t, ns, name), "Warning/"+reason) {
				missing = append(missing, obj+" "+reason)
			}
		}
		for _, name := range dependants {
			deps := listChildren(t, oda.KindDependentAPI, ns, name)
			if len(deps) != 1 {
				missing = append(missing, fmt.Sprintf("DependentAPIs of %s: %v", name, deps))
				continue
			}
			u, err := get(oda.KindDependentAPI, ns, deps[0])
			// Resolved (Ready True) but not recorded: the reason says so.
			if err != nil || !strings.HasSuffix(readyReason(u), "/ServiceInventoryUnavailable") || !containsAny(eventsFor(t, ns, deps[0]), "Warning/ServiceInventoryUnavailable") {
				missing = append(missing, "DependentAPI "+deps[0]+" ServiceInventoryUnavailable")
			}
		}
		return len(missing) == 0, fmt.Sprint(missing)
	})
	seen := time.Since(down)
	for _, name := range dependants {
		c := mustGet(t, oda.KindComponent, ns, name)
		if st := deploymentStatus(c); st == oda.StatusComplete || st == "" {
			t.Errorf("%s deployment_status %q while everything it needs is down", name, st)
		}
		t.Logf("during the outage %s is %s, Ready %s", name, deploymentStatus(c), readyReason(c))
	}
	// Stay down for the whole outage, then count what was asked meanwhile.
	time.Sleep(time.Until(down.Add(outage)))
	kcDuring := stack.keycloak.Requests()[kcMark:]
	kongDuring := gs.kong.Requests()
	invDuring := stack.inventory.Requests()[invMark:]
	outageLen := time.Since(down)
	restore()
	back := time.Now()
	rate := func(n int) float64 { return float64(n) / outageLen.Seconds() }
	t.Logf("down %s (every reason reported after %s): Keycloak %d requests (%.2f/s), Kong %d (%.2f/s), Service Inventory %d (%.2f/s)",
		outageLen.Round(time.Second), seen.Round(time.Second), len(kcDuring), rate(len(kcDuring)), len(kongDuring), rate(len(kongDuring)), len(invDuring), rate(len(invDuring)))

	for _, name := range dependants {
		waitPhase(t, ns, name, oda.StatusComplete, 5*time.Minute)
	}
	converge := time.Since(back)
	t.Logf("every Component Complete %s after the doubles came back", converge.Round(time.Second))

	providerURLs := map[string]bool{providerURL: true}
	for _, name := range dependants {
		url, _ := apiStatus(mustGet(t, oda.KindExposedAPI, ns, name+"-productcatalogmanagement-v4"))
		providerURLs[url] = true
	}
	// One create per object: one Keycloak client and one inventory record
	// per dependant, one Kong service and route per API.
	clients := 0
	for _, r := range stack.keycloak.Requests()[kcMark:] {
		if r.Method == http.MethodPost && r.Path == "/admin/realms/"+keycloakRealm+"/clients" && r.Status == http.StatusCreated {
			clients++
		}
	}
	records := 0
	for _, r := range stack.inventory.Requests()[invMark:] {
		if r.Method == http.MethodPost && r.Status == http.StatusCreated {
			records++
		}
	}
	if clients != len(dependants) || records != len(dependants) {
		t.Errorf("Keycloak clients created %d, inventory records created %d; want %d each", clients, records, len(dependants))
	}
	for _, name := range dependants {
		if _, ok := stack.keycloak.ClientSecret(keycloakRealm, name); !ok {
			t.Errorf("no Keycloak client %s", name)
		}
		// Any other Component's ready TMF620 API satisfies the dependency
		// (the other dependant's too, once it is exposed).
		if state, url, n := inventoryRecord(name); n != 1 || state != "active" || !providerURLs[url] || strings.Contains(url, "/"+name+"/") {
			t.Errorf("inventory records of %s: %d (state %q, url %q), want one active with another Component's url of %v", name, n, state, url, providerURLs)
		}
		for _, api := range listChildren(t, oda.KindExposedAPI, ns, name) {
			tag := gateway.KongAdminAPITagFor(ns, api)
			if svcs, routes := kongNames(t, gs, "services", tag), kongNames(t, gs, "routes", tag); len(svcs) != 1 || len(routes) != 1 {
				t.Errorf("Kong entities of %s: services %v routes %v, want one each", api, svcs, routes)
			}
		}
		if runs := runsOf(t, oda.WorkflowID(oda.KindComponent.Name, ns, name)); len(runs) != 1 {
			t.Errorf("runs of %s = %v, want one", name, runs)
		}
	}
	// No retry storm: while down, every object costs a few attempts per
	// backoff step (one minute, doubling), not a busy loop. A step is at
	// most 8 attempts (the apiserver-call policy Kong writes run under) of
	// a request or two, and the window holds at most two steps, hence the
	// budget of 12 requests per object per minute; a loop without backoff
	// would make hundreds.
	const perObjectPerMinute = 12.0
	objects := map[string]int{"Keycloak": len(dependants), "Kong": 4 * len(dependants), "Service Inventory": len(dependants)}
	for double, n := range map[string]int{"Keycloak": len(kcDuring), "Kong": len(kongDuring), "Service Inventory": len(invDuring)} {
		perMinute := float64(n) / float64(objects[double]) / outageLen.Minutes()
		if n == 0 || perMinute > perObjectPerMinute {
			t.Errorf("%s was asked %d times in %s by %d objects (%.1f per object per minute): want some attempts, at most %.0f",
				double, n, outageLen.Round(time.Second), objects[double], perMinute, perObjectPerMinute)
		}
	}
	writeResult(t, "doubles-outage.json", map[string]any{
		"components": len(dependants), "outageSeconds": outageLen.Seconds(), "reasonsReportedAfterSeconds": seen.Seconds(),
		"requestsDuringOutage":     map[string]int{"keycloak": len(kcDuring), "kongAdmin": len(kongDuring), "serviceInventory": len(invDuring)},
		"requestsPerSecond":        map[string]float64{"keycloak": rate(len(kcDuring)), "kongAdmin": rate(len(kongDuring)), "serviceInventory": rate(len(invDuring))},
		"convergeAfterBackSeconds": converge.Seconds(),
	})
}
