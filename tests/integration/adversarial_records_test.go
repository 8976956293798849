package integration

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/odaflow/odaflow/activities"
	"github.com/odaflow/odaflow/dependency"
	"github.com/odaflow/odaflow/oda"
	"github.com/odaflow/odaflow/tests/fixtures"
)

// The adversarial tests of issue 31, items 4 and 5: a tenant (a user with
// a Role in its own namespaces only, every write made as that user) tries
// to reach another tenant's Service Inventory record, to become the
// Canvas's ingress, to make the worker call a host of its choosing, to
// smuggle a path into Keycloak's admin URLs, and to learn another tenant's
// namespace from a refusal. Each attack must fail with the victim
// untouched.

// ownedRecord is the inventory record of the DependentAPI in namespace ns
// whose component is component (nil when there is none), with its id.
func ownedRecord(ns, component string) (string, map[string]any) {
	for id, s := range stack.inventory.Services() {
		if dependency.Characteristic(s, dependency.CharOwnerNamespace) == ns && dependency.Characteristic(s, dependency.CharComponentName) == component {
			return id, s
		}
	}
	return "", nil
}

// steady checks cond for the whole of d: an attack that works shows within
// a few seconds (a signal, a reconcile, a status write).
func steady(t *testing.T, d time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(500 * time.Millisecond) {
		if ok, detail := cond(); !ok {
			t.Fatalf("%s: %s", what, detail)
		}
	}
}

// TestAttackerCannotRewriteOrDeleteAnotherTenantsRecord: a hand-made
// DependentAPI that carries the victim's component label and dependency
// name, resolved against the attacker's own provider, gets a record of
// its own; the victim's record is not rewritten, and stays when the
// attacker deletes its DependentAPI (the Python operator, and odaflow
// before, found records by those two names and did both).
func TestAttackerCannotRewriteOrDeleteAnotherTenantsRecord(t *testing.T) {
	const (
		nsV, nsA         = "it-advrec-victim", "it-advrec-attacker"
		victimProvider   = "advrec-vprov"
		victimComponent  = "advrec-victim"
		attackerProvider = "advrec-evil"
		catalog          = "-productcatalogmanagement-v4"
	)
	victim := newTenant(t, "advrec-victim", true, nsV)
	attacker := newTenant(t, "advrec-attacker", true, nsA)
	victim.Create(t, oda.KindComponent, fixtures.WithOwnPaths(fixtures.WithoutDependentAPIs(fixtures.ProductCatalog(nsV, victimProvider))))
	victim.Create(t, oda.KindComponent, fixtures.WithOwnPaths(fixtures.WithoutAPI(fixtures.ProductCatalog(nsV, victimComponent), "productcatalogmanagement")))
	providerURL, _ := apiStatus(waitExposed(t, nsV, victimProvider+catalog, true, true))
	var deps []string
	eventually(t, 60*time.Second, "the victim's DependentAPI", func() (bool, string) {
		deps = listChildren(t, oda.KindDependentAPI, nsV, victimComponent)
		return len(deps) == 1, fmt.Sprint(deps)
	})
	waitDependency(t, nsV, deps[0], providerURL, true)
	var victimID string
	var before map[string]any
	eventually(t, 30*time.Second, "the victim's record", func() (bool, string) {
		victimID, before = ownedRecord(nsV, victimComponent)
		return before != nil && dependency.Characteristic(before, dependency.CharURL) == providerURL && before["state"] == "active", fmt.Sprint(before)
	})

	// The attacker's provider, and a DependentAPI made by hand as the
	// victim's: its component label and its whole spec (dependency name,
	// specification).
	attacker.Create(t, oda.KindComponent, fixtures.WithOwnPaths(fixtures.WithoutDependentAPIs(fixtures.ProductCatalog(nsA, attackerProvider))))
	attackerURL, _ := apiStatus(waitExposed(t, nsA, attackerProvider+catalog, true, true))
	victimDep := mustGet(t, oda.KindDependentAPI, nsV, deps[0])
	spec, _, _ := unstructured.NestedMap(victimDep.Object, "spec")
	forged := child(oda.KindDependentAPI, nsA, "advrec-forged", spec)
	forged.SetLabels(map[string]string{oda.LabelComponentName: victimComponent})
	attacker.Create(t, oda.KindDependentAPI, forged)
	waitDependency(t, nsA, "advrec-forged", attackerURL, true)
	// The attacker's resolution is recorded, under its own namespace.
	eventually(t, 30*time.Second, "the attacker's own record", func() (bool, string) {
		_, rec := ownedRecord(nsA, victimComponent)
		return rec != nil && dependency.Characteristic(rec, dependency.CharURL) == attackerURL, fmt.Sprint(rec)
	})
	if after := stack.inventory.Services()[victimID]; !reflect.DeepEqual(after, before) {
		t.Fatalf("the victim's record was rewritten:\nbefore %v\nafter  %v", before, after)
	}

	if err := attacker.Dyn.Resource(oda.KindDependentAPI.GVR()).Namespace(nsA).Delete(context.Background(), "advrec-forged", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "the forged DependentAPI gone", func() (bool, string) {
		_, err := get(oda.KindDependentAPI, nsA, "advrec-forged")
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	if _, rec := ownedRecord(nsA, victimComponent); rec != nil {
		t.Errorf("the attacker's own record outlived its DependentAPI: %v", rec)
	}
	if after, ok := stack.inventory.Services()[victimID]; !ok || !reflect.DeepEqual(after, before) {
		t.Fatalf("the victim's record was deleted or changed (present %v):\nbefore %v\nafter  %v", ok, before, after)
	}
	waitDependency(t, nsV, deps[0], providerURL, true)
}

// TestAttackerIngressServiceIsIgnored: a tenant's LoadBalancer Service
// labelled like the Istio ingress, in a namespace that sorts before
// istio-ingress and with an address, does not become the Canvas's
// ingress: the victim's url stays. The stack's watcher is given no
// --ingress-namespace, so this is also the proof that an empty one is not
// "every namespace".
func TestAttackerIngressServiceIsIgnored(t *testing.T) {
	// The attacker's namespace need not be one odaflow serves: it only
	// holds the Service, and it sorts before istio-ingress.
	const nsV, nsA = "it-adving-victim", "ia-adving-attacker"
	if nsA >= "istio-ingress" {
		t.Fatal("the attacker's namespace must sort first to be the one a search of every namespace picks")
	}
	victim := newTenant(t, "adving-victim", true, nsV)
	attacker := newTenant(t, "adving-attacker", false, nsA)
	victim.Create(t, oda.KindComponent, fixtures.WithOwnPaths(fixtures.WithoutDependentAPIs(fixtures.ProductCatalog(nsV, "adving-victim"))))
	api := "adving-victim-productcatalogmanagement-v4"
	before, _ := apiStatus(waitExposed(t, nsV, api, true, true))

	ctx := context.Background()
	evil := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "istio-ingress", Namespace: nsA, Labels: map[string]string{"istio": "ingressgateway"}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{
			{Name: "http2", Port: 80, TargetPort: intstr.FromInt32(8080)},
			{Name: "https", Port: 443, TargetPort: intstr.FromInt32(8443)},
		}},
	}
	created, err := attacker.Core.CoreV1().Services(nsA).Create(ctx, evil, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("the attacker creates its Service: %v", err)
	}
	t.Cleanup(func() {
		_ = stack.core.CoreV1().Services(nsA).Delete(context.Background(), evil.Name, metav1.DeleteOptions{})
	})
	// The cloud's load balancer gives it an address, as it would to any
	// LoadBalancer Service: the tenant needs no status write for that.
	const evilIP = "203.0.113.66"
	created.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: evilIP}}
	if _, err := stack.core.CoreV1().Services(nsA).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	steady(t, 15*time.Second, "the victim's url", func() (bool, string) {
		u, err := get(oda.KindExposedAPI, nsV, api)
		if err != nil {
			return false, err.Error()
		}
		url, _ := apiStatus(u)
		return url == before && !strings.Contains(url, evilIP), fmt.Sprintf("url %q, was %q", url, before)
	})
}

// TestExternalNameHubIsRefused: an IdentityConfig whose partyRoleAPI names
// an ExternalName Service (which the cluster DNS answers with any host the
// tenant wrote) is Failed with HubRefused and a Warning Event; the worker
// does not call it.
func TestExternalNameHubIsRefused(t *testing.T) {
	const ns, name = "it-advhub-attacker", "advhub-ic"
	attacker := newTenant(t, "advhub-attacker", false, ns)
	alias := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "evilhub", Namespace: ns},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "metadata.attacker.example"},
	}
	if _, err := attacker.Core.CoreV1().Services(ns).Create(context.Background(), alias, metav1.CreateOptions{}); err != nil {
		t.Fatalf("the attacker creates its alias: %v", err)
	}
	attacker.Create(t, oda.KindIdentityConfig, child(oda.KindIdentityConfig, ns, name, map[string]any{
		"canvasSystemRole": "Admin",
		"partyRoleAPI":     map[string]any{"implementation": "evilhub", "path": "/advhub/partyRoleManagement/v4", "port": int64(8080)},
	}))
	waitIdentityCondition(t, ns, name, activities.ErrTypeHubRefused, "ExternalName")
	conds, _, _ := unstructured.NestedSlice(mustGet(t, oda.KindIdentityConfig, ns, name).Object, "status", "conditions")
	if len(conds) == 0 || conds[0].(map[string]any)["status"] != "False" {
		t.Errorf("conditions = %v, want Ready False", conds)
	}
}

// TestRoleNameWithASlashIsInvalid: a componentRole name that would be
// several path segments in Keycloak's admin URL is refused as InvalidSpec,
// and no Keycloak client is made for it.
func TestRoleNameWithASlashIsInvalid(t *testing.T) {
	const ns, name = "it-advrole-attacker", "advrole-ic"
	attacker := newTenant(t, "advrole-attacker", false, ns)
	attacker.Create(t, oda.KindIdentityConfig, child(oda.KindIdentityConfig, ns, name, map[string]any{
		"canvasSystemRole": "Admin",
		"componentRole":    []any{map[string]any{"name": "../../../../canvassystem/roles/Admin"}},
	}))
	waitIdentityCondition(t, ns, name, "InvalidSpec", "contains '/'")
	if _, ok := stack.keycloak.ClientSnapshot(keycloakRealm, name); ok {
		t.Error("a Keycloak client was made for an IdentityConfig with an invalid role name")
	}
}

// TestRefusalNamesNoOtherTenant: an attacker that takes the name of the
// victim's IdentityConfig is refused OwnedElsewhere, and nothing it can
// read in its namespace (the condition, any Event) names the victim's
// namespace.
func TestRefusalNamesNoOtherTenant(t *testing.T) {
	const nsV, nsA, name = "it-advname-victim", "it-advname-attacker", "advname-pc"
	ctx := context.Background()
	victim := newTenant(t, "advname-victim", false, nsV)
	attacker := newTenant(t, "advname-attacker", false, nsA)
	victim.Create(t, oda.KindIdentityConfig, child(oda.KindIdentityConfig, nsV, name, map[string]any{"canvasSystemRole": "Admin"}))
	eventually(t, 60*time.Second, "the victim's identity", func() (bool, string) {
		_, err := stack.core.CoreV1().Secrets(nsV).Get(ctx, name+"-secret", metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})
	attacker.Create(t, oda.KindIdentityConfig, child(oda.KindIdentityConfig, nsA, name, map[string]any{"canvasSystemRole": "Admin"}))
	waitIdentityCondition(t, nsA, name, oda.ReasonOwnedElsewhere, "another namespace")
	if _, msg := condition(mustGet(t, oda.KindIdentityConfig, nsA, name)); strings.Contains(msg, nsV) {
		t.Errorf("the attacker's condition names the victim's namespace: %s", msg)
	}
	events, err := attacker.Core.CoreV1().Events(nsA).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		if strings.Contains(e.Message, nsV) {
			t.Errorf("an Event in the attacker's namespace names the victim's: %s/%s: %s", e.Type, e.Reason, e.Message)
		}
	}
}
