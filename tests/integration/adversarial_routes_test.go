package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/odaflow/odaflow/gateway"
	"github.com/odaflow/odaflow/oda"
)

// Adversarial tests of issue 31 (routes and shared-namespace objects): two
// tenants, each a user with a Role in its own namespaces only (newTenant);
// every ExposedAPI an attacker makes is created as that user through the
// apiserver. Each attack must fail with the victim's route, url and
// objects unchanged.

// routeImpl is the implementation Service behind every API here.
const routeImpl = "route-svc"

// routeTenants makes the victim and the attacker, each a user named after
// its one namespace, with routeImpl ready there (and, with istio, the
// Istio ingress addressed: readyNamespace).
func routeTenants(t *testing.T, istio bool, victimNS, attackerNS string) (victim, attacker tenant) {
	t.Helper()
	victim = newTenant(t, victimNS, istio, victimNS)
	attacker = newTenant(t, attackerNS, istio, attackerNS)
	setEndpoints(t, victimNS, routeImpl, true)
	setEndpoints(t, attackerNS, routeImpl, true)
	return victim, attacker
}

func routeAPI(ns, name, path string) *unstructured.Unstructured {
	return child(oda.KindExposedAPI, ns, name, map[string]any{
		"name": name, "apiType": "openapi", "implementation": routeImpl, "path": path, "port": int64(8080),
	})
}

// routeSnapshot is what the victim must keep: its url and phase, and its
// VirtualService, unchanged (uid, version and the prefix it routes).
type routeSnapshot struct {
	url, phase         string
	vsUID, vsVersion   string
	vsPrefix, vsTarget string
}

func snapshotRoute(t *testing.T, ns, name string) routeSnapshot {
	t.Helper()
	u := mustGet(t, oda.KindExposedAPI, ns, name)
	url, _ := apiStatus(u)
	vs, err := stack.dyn.Resource(virtualServices).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("VirtualService %s/%s: %v", ns, name, err)
	}
	http, _, _ := unstructured.NestedSlice(vs.Object, "spec", "http")
	s := routeSnapshot{url: url, phase: deploymentStatus(u), vsUID: string(vs.GetUID()), vsVersion: vs.GetResourceVersion()}
	if len(http) == 1 {
		s.vsPrefix = fmt.Sprint(http[0].(map[string]any)["match"])
		s.vsTarget = fmt.Sprint(http[0].(map[string]any)["route"])
	}
	return s
}

// awaitRefused waits for the attacker's ExposedAPI to fail with reason
// PathConflict and a Warning Event, and checks that neither names the
// victim's namespace or API, and that it got no VirtualService.
func awaitRefused(t *testing.T, ns, name, victimNS string) {
	t.Helper()
	eventually(t, 60*time.Second, "the attacker's claim refused", func() (bool, string) {
		u, err := get(oda.KindExposedAPI, ns, name)
		if err != nil {
			return false, err.Error()
		}
		reason, msg := condition(u)
		return reason == "PathConflict", reason + ": " + msg
	})
	eventually(t, 30*time.Second, "a PathConflict Event", func() (bool, string) {
		ev := eventsFor(t, ns, name)
		return containsAny(ev, "PathConflict"), fmt.Sprint(ev)
	})
	_, msg := condition(mustGet(t, oda.KindExposedAPI, ns, name))
	for _, text := range append(eventsFor(t, ns, name), msg) {
		if strings.Contains(text, victimNS) {
			t.Errorf("the attacker's namespace is told of the victim's: %q", text)
		}
	}
	if _, err := stack.dyn.Resource(virtualServices).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the refused claim has a VirtualService (err %v)", err)
	}
}

// assertVictimKept checks the victim is still Exposed with the route it had
// before the attack, a while after the attack was refused (a late eviction
// would show).
func assertVictimKept(t *testing.T, ns, name string, before routeSnapshot) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		after := snapshotRoute(t, ns, name)
		if after != before {
			t.Fatalf("the victim's route changed:\n before %+v\n after  %+v", before, after)
		}
		if time.Now().After(deadline) {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// TestAttackRouteStringPrefixHijack: the victim exposes
// /it-route-victim/tmf-api/v4; the attacker claims /it-route-vic, which
// shares no path segment with it but is a string prefix: a VirtualService on
// it would receive every request for the victim's API. The claim is
// refused and the victim's VirtualService and url stay as they were.
func TestAttackRouteStringPrefixHijack(t *testing.T) {
	const victimNS, attackerNS = "it-route-victim", "it-route-attacker"
	victim, attacker := routeTenants(t, true, victimNS, attackerNS)

	victim.Create(t, oda.KindExposedAPI, routeAPI(victimNS, "api", "/it-route-victim/tmf-api/v4"))
	waitExposed(t, victimNS, "api", true, true)
	before := snapshotRoute(t, victimNS, "api")

	attacker.Create(t, oda.KindExposedAPI, routeAPI(attackerNS, "api", "/it-route-vic"))
	awaitRefused(t, attackerNS, "api", victimNS)
	assertVictimKept(t, victimNS, "api", before)
}

// TestAttackRouteSameSecondTakeover: the attacker's ExposedAPI is created
// in the same second as the victim's, from a namespace that sorts first,
// on a path of its own; once the victim is Exposed it moves to the
// victim's exact path. Ordered by creationTimestamp and namespace, it
// would win; the victim holds the path and keeps it.
func TestAttackRouteSameSecondTakeover(t *testing.T) {
	const victimNS, attackerNS = "it-route-holder", "it-route-aaa"
	victim, attacker := routeTenants(t, true, victimNS, attackerNS)
	// The path does not spell the victim's namespace, so that the refusal
	// (which repeats the attacker's own path) can be checked for it.
	const victimPath = "/holder-api/tmf-api/v4"

	var name string
	for i := 0; ; i++ {
		name = fmt.Sprintf("api-%d", i)
		v := victim.Create(t, oda.KindExposedAPI, routeAPI(victimNS, name, victimPath+fmt.Sprintf("/%d", i)))
		a := attacker.Create(t, oda.KindExposedAPI, routeAPI(attackerNS, name, fmt.Sprintf("/it-route-aaa/parked/%d", i)))
		vt, at := v.GetCreationTimestamp(), a.GetCreationTimestamp()
		if vt.Equal(&at) {
			break
		}
		if i == 4 {
			t.Fatalf("five pairs of creates never fell in one second")
		}
	}
	path := victimPath + "/" + strings.TrimPrefix(name, "api-")
	waitExposed(t, victimNS, name, true, true)
	waitExposed(t, attackerNS, name, true, true)
	before := snapshotRoute(t, victimNS, name)

	moved := mustGet(t, oda.KindExposedAPI, attackerNS, name)
	if err := unstructured.SetNestedField(moved.Object, path, "spec", "path"); err != nil {
		t.Fatal(err)
	}
	if _, err := attacker.Dyn.Resource(oda.KindExposedAPI.GVR()).Namespace(attackerNS).Update(context.Background(), moved, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("the attacker moves to the victim's path: %v", err)
	}
	awaitRefused(t, attackerNS, name, victimNS)
	assertVictimKept(t, victimNS, name, before)
}

// sharedCase is what a gateway writes into the shared istio-ingress for an
// ExposedAPI.
type sharedCase struct {
	gateway, ip string
	objects     func(ns, api string) []objRef
}

// TestAttackSharedObjectsKong and TestAttackSharedObjectsApisix: two
// tenants with an ExposedAPI of the same name (the same release) get
// separate objects in the shared namespace; the attacker's apply and its
// deletion leave the victim's objects as they were (key-auth included); an
// object there that names another owner is neither overwritten nor deleted.
func TestAttackSharedObjectsKong(t *testing.T) {
	runSharedObjectsAttack(t, sharedCase{gateway: "kong", ip: "34.159.217.91", objects: func(ns, api string) []objRef {
		return []objRef{{referenceGrants, "istio-ingress", gateway.ReferenceGrantName(ns, api)}}
	}})
}

func TestAttackSharedObjectsApisix(t *testing.T) {
	runSharedObjectsAttack(t, sharedCase{gateway: "apisix", ip: "34.159.217.92", objects: func(ns, api string) []objRef {
		return []objRef{
			{apisixPluginConfigs, "istio-ingress", gateway.ApisixPluginConfigName(ns, api)},
			{apisixRoutes, "istio-ingress", gateway.ApisixRouteName(ns, api)},
		}
	}})
}

func runSharedObjectsAttack(t *testing.T, c sharedCase) {
	gs := startGatewayStack(t, c.gateway, c.ip)
	victimNS, attackerNS := gs.nsPrefix+"victim", gs.nsPrefix+"attacker"
	victim, attacker := routeTenants(t, false, victimNS, attackerNS)
	const api = "r1-api" // the same release in both namespaces

	protected := routeAPI(victimNS, api, "/"+victimNS+"/api")
	protected.Object["spec"].(map[string]any)["apiKeyVerification"] = map[string]any{"enabled": true, "location": "header"}
	victim.Create(t, oda.KindExposedAPI, protected)
	waitExposedWithin(t, victimNS, api, true, true, 60*time.Second)
	before := sharedObjects(t, c.objects(victimNS, api), victimNS+"/"+api)

	attacker.Create(t, oda.KindExposedAPI, routeAPI(attackerNS, api, "/"+attackerNS+"/api"))
	waitExposedWithin(t, attackerNS, api, true, true, 60*time.Second)
	theirs := sharedObjects(t, c.objects(attackerNS, api), attackerNS+"/"+api)
	for i := range before {
		if theirs[i].GetName() == before[i].GetName() {
			t.Errorf("both tenants' %s is %s", before[i].GetKind(), before[i].GetName())
		}
	}
	assertUnchanged(t, before)

	// An object that names another owner, under the name the attacker's
	// next API would get: not overwritten, and the API is refused.
	squat := c.objects(attackerNS, "r2-api")[0]
	squatter := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": squat.gvr.GroupVersion().String(), "kind": before[0].GetKind(),
		"metadata": map[string]any{"name": squat.name, "namespace": squat.namespace,
			"annotations": map[string]any{gateway.AnnotationExposedAPI: victimNS + "/" + api}},
		"spec": before[0].Object["spec"],
	}}
	created, err := stack.dyn.Resource(squat.gvr).Namespace(squat.namespace).Create(context.Background(), squatter, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create the other owner's object: %v", err)
	}
	attacker.Create(t, oda.KindExposedAPI, routeAPI(attackerNS, "r2-api", "/"+attackerNS+"/other"))
	eventually(t, 60*time.Second, "r2-api refused", func() (bool, string) {
		reason, msg := condition(mustGet(t, oda.KindExposedAPI, attackerNS, "r2-api"))
		return reason == "GatewayRejected" && strings.Contains(msg, "not written for this ExposedAPI"), reason + ": " + msg
	})
	assertUnchanged(t, []*unstructured.Unstructured{created})
	deleteAs(t, attacker, attackerNS, "r2-api")
	assertUnchanged(t, []*unstructured.Unstructured{created})

	// The attacker's own object, re-annotated for another owner (as two
	// same-named APIs left it before odaflow named them apart): the
	// attacker's deletion does not take it.
	mine := sharedObjects(t, c.objects(attackerNS, api), attackerNS+"/"+api)[0]
	mine.SetAnnotations(map[string]string{gateway.AnnotationExposedAPI: victimNS + "/" + api})
	relabelled, err := stack.dyn.Resource(c.objects(attackerNS, api)[0].gvr).Namespace("istio-ingress").Update(context.Background(), mine, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("re-annotate: %v", err)
	}
	deleteAs(t, attacker, attackerNS, api)
	assertUnchanged(t, []*unstructured.Unstructured{relabelled})
	// The attacker's other objects (its own annotation) are gone; the
	// victim's are as they were and it is still Exposed.
	for _, r := range c.objects(attackerNS, api)[1:] {
		if left := existing(t, r); len(left) > 0 {
			t.Errorf("the deleted API's own object stays: %v", left)
		}
	}
	assertUnchanged(t, before)
	if url, ready := apiStatus(mustGet(t, oda.KindExposedAPI, victimNS, api)); url == "" || !ready {
		t.Errorf("the victim lost its url or readiness: url=%q ready=%t", url, ready)
	}
}

// sharedObjects reads the objects, each annotated for owner.
func sharedObjects(t *testing.T, refs []objRef, owner string) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, r := range refs {
		var u *unstructured.Unstructured
		eventually(t, 30*time.Second, r.gvr.Resource+" "+r.name, func() (bool, string) {
			var err error
			u, err = stack.dyn.Resource(r.gvr).Namespace(r.namespace).Get(context.Background(), r.name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return u.GetAnnotations()[gateway.AnnotationExposedAPI] == owner, fmt.Sprint(u.GetAnnotations())
		})
		out = append(out, u)
	}
	return out
}

// assertUnchanged checks each object still exists at the version read.
func assertUnchanged(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	for _, o := range objs {
		gvr := schema.GroupVersionResource{Group: o.GroupVersionKind().Group, Version: o.GroupVersionKind().Version, Resource: strings.ToLower(o.GetKind()) + "s"}
		now, err := stack.dyn.Resource(gvr).Namespace(o.GetNamespace()).Get(context.Background(), o.GetName(), metav1.GetOptions{})
		if err != nil {
			t.Errorf("%s %s/%s: %v", o.GetKind(), o.GetNamespace(), o.GetName(), err)
			continue
		}
		if now.GetResourceVersion() != o.GetResourceVersion() || now.GetDeletionTimestamp() != nil {
			t.Errorf("%s %s/%s changed: version %s → %s, annotations %v, spec %v", o.GetKind(), o.GetNamespace(), o.GetName(),
				o.GetResourceVersion(), now.GetResourceVersion(), now.GetAnnotations(), now.Object["spec"])
		}
	}
}

// deleteAs deletes an ExposedAPI as the tenant and waits until it is gone
// (odaflow's finalizer released: its cleanup has run).
func deleteAs(t *testing.T, tn tenant, ns, name string) {
	t.Helper()
	if err := tn.Dyn.Resource(oda.KindExposedAPI.GVR()).Namespace(ns).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("%s deletes %s/%s: %v", tn.User, ns, name, err)
	}
	eventually(t, 60*time.Second, "ExposedAPI "+ns+"/"+name+" gone", func() (bool, string) {
		_, err := get(oda.KindExposedAPI, ns, name)
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
}
