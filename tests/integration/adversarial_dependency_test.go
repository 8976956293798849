package integration

import (
	"context"
	"fmt"
	"path"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/odaflow/odaflow/dependency"
	"github.com/odaflow/odaflow/oda"
)

// sharedAPINamespaces is the main watcher's --shared-api-namespaces: the
// namespaces whose ExposedAPIs provide for every namespace.
const sharedAPINamespaces = "it-shared-*"

// The adversarial dependency tests: a victim tenant and an attacker
// tenant, each with a Role in its own namespace only, every write made as
// that user (tenant.Dyn). Each test has a specification URL of its own, so
// that no other test's ExposedAPI can provide it.

// advIngressIP is the address readyNamespace gives the stack's ingress.
const advIngressIP = "34.159.217.74"

// advAPI is an ExposedAPI serving spec on path, implemented by impl.
func advAPI(ns, name, spec, path, impl string) *unstructured.Unstructured {
	return child(oda.KindExposedAPI, ns, name, map[string]any{
		"name": name, "apiType": "openapi", "path": path, "port": int64(8080), "implementation": impl,
		"specification": map[string]any{"url": spec},
	})
}

// advDependency is a DependentAPI on spec; selectorNS, when set, is its
// selector.namespace.
func advDependency(ns, name, spec, selectorNS string) *unstructured.Unstructured {
	s := map[string]any{"name": name, "apiType": "openapi", "specification": map[string]any{"url": spec}}
	if selectorNS != "" {
		s["selector"] = map[string]any{"namespace": selectorNS}
	}
	return child(oda.KindDependentAPI, ns, name, s)
}

// victimState is what the victim sees of its DependentAPI: url, ready,
// the Ready condition's reason, and the object's resourceVersion (any
// write to it changes it).
func victimState(t *testing.T, ns, name string) (url string, ready bool, reason, version string) {
	t.Helper()
	u := mustGet(t, oda.KindDependentAPI, ns, name)
	url, ready = dependencyStatus(u)
	reason, _ = condition(u)
	return url, ready, reason, u.GetResourceVersion()
}

// holdsUnchanged checks, for d, that the victim's DependentAPI is not
// written at all (its status, url and readiness stay as they were) and
// that neither it nor any Service Inventory record holds a url with one of
// the forbidden parts, nor a host the attacker forged. That something did
// not happen can only be sampled; the watcher reacts to an ExposedAPI in
// milliseconds, and each test first waits until the attacker's object has
// been handled (its status written by odaflow).
func holdsUnchanged(t *testing.T, d time.Duration, ns, name string, forbidden ...string) {
	t.Helper()
	forbidden = append(forbidden, "evil.attacker.example", "169.254.169.254")
	bad := func(url string) bool {
		for _, f := range forbidden {
			if strings.Contains(url, f) {
				return true
			}
		}
		return false
	}
	url, ready, reason, version := victimState(t, ns, name)
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
		gotURL, gotReady, gotReason, gotVersion := victimState(t, ns, name)
		if gotURL != url || gotReady != ready || gotReason != reason || gotVersion != version {
			t.Fatalf("the victim's DependentAPI %s/%s changed: url %q ready %v reason %s (version %s), was %q %v %s (%s)",
				ns, name, gotURL, gotReady, gotReason, gotVersion, url, ready, reason, version)
		}
		if bad(gotURL) {
			t.Fatalf("the victim's DependentAPI resolved to the attacker: %s", gotURL)
		}
		for _, s := range stack.inventory.Services() {
			if bad(dependency.Characteristic(s, dependency.CharURL)) {
				t.Fatalf("a Service Inventory record points at the attacker: %v", s)
			}
		}
	}
}

// waitAPIReason waits for an ExposedAPI's Ready condition reason.
func waitAPIReason(t *testing.T, ns, name, reason string) *unstructured.Unstructured {
	t.Helper()
	var got *unstructured.Unstructured
	eventually(t, 60*time.Second, fmt.Sprintf("ExposedAPI %s/%s %s", ns, name, reason), func() (bool, string) {
		u, err := get(oda.KindExposedAPI, ns, name)
		if err != nil {
			return false, err.Error()
		}
		got = u
		r, msg := condition(u)
		return r == reason, r + ": " + msg
	})
	return got
}

// forgeStatus writes, as the tenant, a status the tenant made up on its
// own ExposedAPI: ready, with url. A cluster that refuses the write (a
// status subresource or an admission policy) has stopped the attack
// already; the test goes on to show odaflow would not trust it either.
func forgeStatus(t *testing.T, tn tenant, ns, name, url string) {
	t.Helper()
	patch := fmt.Sprintf(`{"status":{"apiStatus":{"url":%q,"ip":"169.254.169.254"},"implementation":{"ready":true}}}`, url)
	_, err := tn.Dyn.Resource(oda.KindExposedAPI.GVR()).Namespace(ns).Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	switch {
	case err == nil:
		eventually(t, 10*time.Second, "the forged status stored", func() (bool, string) {
			got, _ := apiStatus(mustGet(t, oda.KindExposedAPI, ns, name))
			return got == url, got
		})
	case apierrors.IsForbidden(err) || apierrors.IsInvalid(err):
		t.Logf("the cluster refused the forged status: %v", err)
	default:
		t.Fatalf("forge the status of %s/%s: %v", ns, name, err)
	}
}

// advCase is one attack: a victim and an attacker tenant, each with a
// namespace of its own where the productcatalog implementations are
// ready, and the specification URL the victim depends on.
type advCase struct {
	victim, attacker     tenant
	victimNS, attackerNS string
	spec                 string
}

func newAdvCase(t *testing.T, attack string) advCase {
	t.Helper()
	c := advCase{victimNS: "it-adv-" + attack + "-victim", attackerNS: "it-adv-" + attack + "-attacker",
		spec: "https://example.com/it-adv-" + attack + "/TMF620-ProductCatalog-v4.0.0.swagger.json"}
	c.victim = newTenant(t, c.victimNS, true, c.victimNS)
	c.attacker = newTenant(t, c.attackerNS, true, c.attackerNS)
	return c
}

// victimNamesTheAttacker has the victim depend on the spec with a
// selector naming the attacker's namespace, which makes the attacker's
// ExposedAPIs candidates, and waits for it to wait for a provider.
func (c advCase) victimNamesTheAttacker(t *testing.T) {
	t.Helper()
	c.victim.Create(t, oda.KindDependentAPI, advDependency(c.victimNS, "needs-catalog", c.spec, c.attackerNS))
	waitDependency(t, c.victimNS, "needs-catalog", "", false)
}

// TestAdversarialDependencyHijackFromAnotherNamespace: an attacker exposes
// the specification the victim depends on, in its own namespace, with a
// name that sorts first and a ready implementation. The victim keeps its
// own namespace's provider and, when that one goes, waits: it never
// resolves to the attacker.
func TestAdversarialDependencyHijackFromAnotherNamespace(t *testing.T) {
	c := newAdvCase(t, "hijack")
	victim, attacker, victimNS, attackerNS, spec := c.victim, c.attacker, c.victimNS, c.attackerNS, c.spec

	victim.Create(t, oda.KindExposedAPI, advAPI(victimNS, "catalog", spec, "/"+victimNS+"/catalog", "ctk-prodcatapi"))
	victim.Create(t, oda.KindDependentAPI, advDependency(victimNS, "needs-catalog", spec, ""))
	ownURL, _ := apiStatus(waitExposed(t, victimNS, "catalog", true, true))
	if ownURL != "https://"+advIngressIP+"/"+victimNS+"/catalog" {
		t.Fatalf("the victim's provider url %q", ownURL)
	}
	waitDependency(t, victimNS, "needs-catalog", ownURL, true)

	attacker.Create(t, oda.KindExposedAPI, advAPI(attackerNS, "aaa-catalog", spec, "/"+attackerNS+"/catalog", "ctk-prodcatapi"))
	waitExposed(t, attackerNS, "aaa-catalog", true, true) // a ready provider, in its own namespace
	holdsUnchanged(t, 5*time.Second, victimNS, "needs-catalog", "/"+attackerNS+"/")
	if url, ready, _, _ := victimState(t, victimNS, "needs-catalog"); url != ownURL || !ready {
		t.Fatalf("victim url %q ready %v, want its own namespace's %s", url, ready, ownURL)
	}

	// The victim's own provider goes: it waits rather than take the
	// attacker's.
	if err := victim.Dyn.Resource(oda.KindExposedAPI.GVR()).Namespace(victimNS).Delete(context.Background(), "catalog", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete the victim's provider: %v", err)
	}
	waitDependency(t, victimNS, "needs-catalog", "", false)
	eventually(t, 30*time.Second, "the victim waiting for a provider", func() (bool, string) {
		u := mustGet(t, oda.KindDependentAPI, victimNS, "needs-catalog")
		reason, msg := condition(u)
		return reason == "NoProvider", reason + ": " + msg
	})
	holdsUnchanged(t, 3*time.Second, victimNS, "needs-catalog", "/"+attackerNS+"/")
}

// TestAdversarialDependencyForeignHostnameIsRefused: an ExposedAPI whose
// spec.hostname is a host the Canvas does not allow is refused (Failed,
// reason HostnameNotAllowed, in its Ready condition and a Warning Event)
// and provides nothing, even to a victim whose selector names the
// attacker's namespace. Without the hostname, the same API provides, at the
// Canvas's address: the refusal is what stopped it.
func TestAdversarialDependencyForeignHostnameIsRefused(t *testing.T) {
	c := newAdvCase(t, "host")
	attacker, victimNS, attackerNS, spec := c.attacker, c.victimNS, c.attackerNS, c.spec
	const evil = "evil.attacker.example"
	c.victimNamesTheAttacker(t)

	api := advAPI(attackerNS, "catalog", spec, "/"+attackerNS+"/catalog", "ctk-prodcatapi")
	_ = unstructured.SetNestedField(api.Object, evil, "spec", "hostname")
	attacker.Create(t, oda.KindExposedAPI, api)
	got := waitAPIReason(t, attackerNS, "catalog", "HostnameNotAllowed")
	if _, msg := condition(got); !strings.Contains(msg, evil) {
		t.Errorf("the condition does not name the host: %s", msg)
	}
	if url, ready := apiStatus(got); url != "" || ready {
		t.Errorf("the refused API has url %q ready %v", url, ready)
	}
	if conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions"); len(conds) == 0 || conds[0].(map[string]any)["status"] != "False" {
		t.Errorf("the refused API's conditions %v, want Ready False", conds)
	}
	eventually(t, 30*time.Second, "a Warning Event HostnameNotAllowed", func() (bool, string) {
		evs := eventsFor(t, attackerNS, "catalog")
		return containsAny(evs, "Warning/HostnameNotAllowed"), fmt.Sprint(evs)
	})
	holdsUnchanged(t, 5*time.Second, victimNS, "needs-catalog", "/"+attackerNS+"/")

	// It forges the url its status would have had, and readiness: still no
	// provider.
	forgeStatus(t, attacker, attackerNS, "catalog", "https://"+evil+"/"+attackerNS+"/catalog")
	holdsUnchanged(t, 5*time.Second, victimNS, "needs-catalog", "/"+attackerNS+"/")

	// Without the hostname it is exposed at the Canvas's address and,
	// named by the victim's selector, provides.
	if _, err := attacker.Dyn.Resource(oda.KindExposedAPI.GVR()).Namespace(attackerNS).Patch(context.Background(), "catalog",
		types.MergePatchType, []byte(`{"spec":{"hostname":null}}`), metav1.PatchOptions{}); err != nil {
		t.Fatalf("drop the hostname: %v", err)
	}
	want := "https://" + advIngressIP + "/" + attackerNS + "/catalog"
	waitDependency(t, victimNS, "needs-catalog", want, true)
}

// TestAdversarialDependencyForgedStatusIsNotTrusted: the attacker writes
// its own ExposedAPI's status (these CRDs have no status subresource): a
// url pointing at the cloud metadata service, and ready. The victim, whose
// selector names the attacker's namespace, does not resolve while the API
// is not ready in fact, and once it is, resolves to the url odaflow
// computed, never to the forged one, however often it is forged again.
func TestAdversarialDependencyForgedStatusIsNotTrusted(t *testing.T) {
	c := newAdvCase(t, "forge")
	attacker, victimNS, attackerNS, spec := c.attacker, c.victimNS, c.attackerNS, c.spec
	const metadata = "http://169.254.169.254/latest/meta-data/iam/security-credentials/"
	c.victimNamesTheAttacker(t)

	// An implementation without endpoints: not ready.
	attacker.Create(t, oda.KindExposedAPI, advAPI(attackerNS, "catalog", spec, "/"+attackerNS+"/catalog", "it-adv-down"))
	waitAPIReason(t, attackerNS, "catalog", "ImplementationNotReady")
	forgeStatus(t, attacker, attackerNS, "catalog", metadata)
	holdsUnchanged(t, 5*time.Second, victimNS, "needs-catalog", "/"+attackerNS+"/")

	// Ready in fact: the victim resolves to the computed url.
	computed := "https://" + advIngressIP + "/" + attackerNS + "/catalog"
	setEndpoints(t, attackerNS, "it-adv-down", true)
	waitDependency(t, victimNS, "needs-catalog", computed, true)

	// Forged again, and again with a spec change that re-drives both
	// workflows: the url stays the computed one.
	forgeStatus(t, attacker, attackerNS, "catalog", metadata)
	holdsUnchanged(t, 5*time.Second, victimNS, "needs-catalog") // resolved to the attacker's computed url, which its selector names
	if _, err := attacker.Dyn.Resource(oda.KindExposedAPI.GVR()).Namespace(attackerNS).Patch(context.Background(), "catalog",
		types.MergePatchType, []byte(`{"spec":{"developerUI":"/`+attackerNS+`/catalog/docs"},"status":{"apiStatus":{"url":"`+metadata+`"}}}`), metav1.PatchOptions{}); err != nil && !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) {
		t.Fatalf("change the spec with a forged status: %v", err)
	}
	eventually(t, 30*time.Second, "odaflow's own status back on the attacker's API", func() (bool, string) {
		url, _ := apiStatus(mustGet(t, oda.KindExposedAPI, attackerNS, "catalog"))
		return url == computed, url
	})
	if url, ready, _, _ := victimState(t, victimNS, "needs-catalog"); url != computed || !ready {
		t.Fatalf("victim url %q ready %v, want the computed %s", url, ready, computed)
	}
}

// TestAdversarialDependencySharedNamespaceProvides: the deliberate path. A
// namespace the Canvas operator shares (--shared-api-namespaces) provides
// for a DependentAPI in another namespace that names no namespace; once
// the consumer's own namespace has a provider, that one wins.
func TestAdversarialDependencySharedNamespaceProvides(t *testing.T) {
	const (
		consumerNS = "it-adv-consumer"
		sharedNS   = "it-shared-catalog"
		spec       = "https://example.com/it-adv-shared/TMF620-ProductCatalog-v4.0.0.swagger.json"
	)
	if ok, _ := path.Match(sharedAPINamespaces, sharedNS); !ok {
		t.Fatalf("%s is not shared by %s", sharedNS, sharedAPINamespaces)
	}
	consumer := newTenant(t, "it-adv-consumer", true, consumerNS)
	platform := newTenant(t, "it-shared-platform", true, sharedNS)
	consumer.Create(t, oda.KindDependentAPI, advDependency(consumerNS, "needs-catalog", spec, ""))
	waitDependency(t, consumerNS, "needs-catalog", "", false)

	platform.Create(t, oda.KindExposedAPI, advAPI(sharedNS, "catalog", spec, "/"+sharedNS+"/catalog", "ctk-prodcatapi"))
	sharedURL, _ := apiStatus(waitExposed(t, sharedNS, "catalog", true, true))
	if sharedURL != "https://"+advIngressIP+"/"+sharedNS+"/catalog" {
		t.Fatalf("the shared provider's url %q", sharedURL)
	}
	waitDependency(t, consumerNS, "needs-catalog", sharedURL, true)

	// A provider in the consumer's own namespace wins over the shared one.
	consumer.Create(t, oda.KindExposedAPI, advAPI(consumerNS, "catalog", spec, "/"+consumerNS+"/catalog", "ctk-prodcatapi"))
	ownURL, _ := apiStatus(waitExposed(t, consumerNS, "catalog", true, true))
	waitDependency(t, consumerNS, "needs-catalog", ownURL, true)
}
