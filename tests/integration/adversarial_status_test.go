package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/odaflow/odaflow/activities"
	"github.com/odaflow/odaflow/oda"
	"github.com/odaflow/odaflow/tests/fixtures"
)

// forgedURL is where a hostile tenant would send another team's consumers:
// the cloud metadata service.
const forgedURL = "http://169.254.169.254/latest/meta-data/iam/security-credentials/"

// maxFence is the largest fence there is: before seals, odaflow took every
// later write of its own for a stale one and skipped it.
const maxFence = "9223372036854775807.9223372036854775807"

// TestTenantForgedStatusIsRepaired: a tenant (a user with a Role in its own
// namespace, every write through the apiserver as that user) writes its own
// ExposedAPI's status.apiStatus.url and a maximal status-fence. The
// integration stack installs no admission policy (its worker is cluster
// admin), so the writes go in: this proves odaflow's own check. Within one
// reconcile the status is odaflow's again (its computed url), under a fence
// and seal of odaflow's; so after a forgery of the status alone, under
// odaflow's fence and seal.
func TestTenantForgedStatusIsRepaired(t *testing.T) {
	ns, name := "it-advstatus", "adv-api"
	tn := newTenant(t, "it-adv-status", true, ns)
	setEndpoints(t, ns, "adv-impl", true)
	tn.Create(t, oda.KindExposedAPI, child(oda.KindExposedAPI, ns, name, map[string]any{
		"name": "adv", "apiType": "openapi", "path": "/" + ns + "/adv/tmf620", "port": int64(8080), "implementation": "adv-impl",
	}))
	u := waitExposed(t, ns, name, true, true)
	odaflowsURL, _ := apiStatus(u)
	if !strings.Contains(odaflowsURL, "34.159.217.74") {
		t.Fatalf("odaflow's url %q is not on the ingress's address", odaflowsURL)
	}
	expectSealed(t, u)

	attack := func(what, body string) {
		t.Helper()
		forged, err := tn.Dyn.Resource(oda.KindExposedAPI.GVR()).Namespace(ns).Patch(context.Background(), name, types.MergePatchType, []byte(body), metav1.PatchOptions{})
		if err != nil {
			t.Fatalf("%s: the tenant's write was refused (%v); this stack has no admission policy, the test proves odaflow's own check", what, err)
		}
		if url, _ := apiStatus(forged); url != forgedURL {
			t.Fatalf("%s: the forged url did not go in: %q", what, url)
		}
		eventually(t, 30*time.Second, what+": odaflow's status back", func() (bool, string) {
			u := mustGet(t, oda.KindExposedAPI, ns, name)
			url, ready := apiStatus(u)
			fence := u.GetAnnotations()[oda.AnnotationStatusFence]
			return url == odaflowsURL && ready && fence != maxFence && sealed(u), fmt.Sprintf("url %q ready %v fence %q sealed %v", url, ready, fence, sealed(u))
		})
	}
	attack("a forged url under a maximal fence", fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}},"status":{"apiStatus":{"url":%q}}}`,
		oda.AnnotationStatusFence, maxFence, forgedURL))
	// The status alone, leaving odaflow's fence and seal in place.
	attack("a forged url under odaflow's fence", fmt.Sprintf(`{"status":{"apiStatus":{"url":%q}}}`, forgedURL))
	// A member odaflow does not write, inside a key it does: the repair
	// sets the key whole.
	attack("a forged developerUI", fmt.Sprintf(`{"status":{"apiStatus":{"url":%q,"developerUI":%q}}}`, forgedURL, forgedURL))
	u = mustGet(t, oda.KindExposedAPI, ns, name)
	if ui, _, _ := unstructured.NestedString(u.Object, "status", "apiStatus", "developerUI"); ui == forgedURL {
		t.Errorf("the forged developerUI stayed: %q", ui)
	}
}

// TestForgedFenceDoesNotStopWrites drives the status write activity with
// the stack's key on the real apiserver, in a namespace no watcher serves:
// a tenant's maximal fence does not stop odaflow's write, whether the
// workflow's last fence is still there or not; a fence odaflow wrote still
// stops a stale write (the fence's purpose, TestStatusFenceOnRealAPIServer).
func TestForgedFenceDoesNotStopWrites(t *testing.T) {
	ns, name := "it-xseal", "seal-api"
	tn := newTenant(t, "it-xseal", false, ns)
	created := tn.Create(t, oda.KindExposedAPI, child(oda.KindExposedAPI, ns, name, map[string]any{
		"name": "seal", "apiType": "openapi", "path": "/seal", "port": int64(8080), "implementation": "seal",
	}))
	kube := activities.NewKube(stack.dyn, stack.core, slog.New(slog.NewTextHandler(io.Discard, nil)))
	kube.StatusKey = stack.statusKey
	ref := oda.Ref{Kind: oda.KindExposedAPI.Name, Namespace: ns, Name: name}
	write := func(url string, replace bool, seq int64, previous string) {
		t.Helper()
		err := kube.WriteStatus(context.Background(), activities.WriteStatusInput{
			Ref: ref, UID: string(created.GetUID()), Replace: replace,
			Status: map[string]any{"apiStatus": map[string]any{"url": url}},
			Fence:  &activities.StatusFence{RunStart: 1, Seq: seq, Previous: previous},
		})
		if err != nil {
			t.Fatalf("write %s at %d: %v", url, seq, err)
		}
	}
	expect := func(step, url, fence string) {
		t.Helper()
		u := mustGet(t, oda.KindExposedAPI, ns, name)
		if got, _ := apiStatus(u); got != url {
			t.Errorf("%s: url %q, want %q", step, got, url)
		}
		if got := u.GetAnnotations()[oda.AnnotationStatusFence]; got != fence {
			t.Errorf("%s: fence %q, want %q", step, got, fence)
		}
		if !sealed(u) {
			t.Errorf("%s: the status is not sealed", step)
		}
	}
	forge := func(body string) {
		t.Helper()
		if _, err := tn.Dyn.Resource(oda.KindExposedAPI.GVR()).Namespace(ns).Patch(context.Background(), name, types.MergePatchType, []byte(body), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	write("https://a.example/1", false, 5, "")
	expect("first write", "https://a.example/1", "1.5")
	forge(fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}},"status":{"apiStatus":{"url":%q,"extra":"x"}}}`, oda.AnnotationStatusFence, maxFence, forgedURL))
	write("https://a.example/2", true, 9, "1.5")
	expect("after a maximal fence", "https://a.example/2", "1.9")
	if u := mustGet(t, oda.KindExposedAPI, ns, name); u.Object["status"].(map[string]any)["apiStatus"].(map[string]any)["extra"] != nil {
		t.Error("a member the tenant added inside apiStatus survived odaflow's write")
	}
	// The tenant copies odaflow's seal beside its maximal fence: the seal
	// vouches for odaflow's fence only.
	u := mustGet(t, oda.KindExposedAPI, ns, name)
	forge(fmt.Sprintf(`{"metadata":{"annotations":{%q:%q,%q:%q}}}`, oda.AnnotationStatusFence, maxFence, oda.AnnotationStatusSeal, u.GetAnnotations()[oda.AnnotationStatusSeal]))
	write("https://a.example/3", true, 12, "1.9")
	expect("after a maximal fence under a copied seal", "https://a.example/3", "1.12")
	// A stale task after a newer one is still refused.
	write("https://a.example/stale", true, 10, "1.9")
	expect("a stale task after a newer one", "https://a.example/3", "1.12")
}

// sealed reports whether the object's status and fence are vouched for by
// the stack's key: odaflow wrote them.
func sealed(u *unstructured.Unstructured) bool {
	status, _ := u.Object["status"].(map[string]any)
	a := u.GetAnnotations()
	return oda.SealVouchesStatus(stack.statusKey, string(u.GetUID()), a[oda.AnnotationStatusFence], a[oda.AnnotationStatusSeal], status)
}

func expectSealed(t *testing.T, u *unstructured.Unstructured) {
	t.Helper()
	if !sealed(u) {
		b, _ := json.Marshal(u.Object["status"])
		t.Fatalf("odaflow's own status is not sealed: annotations %v status %s", u.GetAnnotations(), b)
	}
}

// TestOdaflowsOwnStatusIsSealed: a whole Component lifecycle, as a tenant
// installs it, ends with every status odaflow wrote (the Component's and
// each child's) carrying a seal that vouches for it. The watcher signals a
// repair only for a status whose seal does not vouch for it, so odaflow's
// own writes cost no repair: no extra signal, reconcile or write.
func TestOdaflowsOwnStatusIsSealed(t *testing.T) {
	ns, name := "it-advsealed", "sealed-productcatalogmanagement"
	tn := newTenant(t, "it-adv-sealed", true, ns)
	tn.Create(t, oda.KindComponent, fixtures.ProductCatalog(ns, name))
	waitPhase(t, ns, name, oda.StatusComplete, 60*time.Second)
	n := 0
	eventually(t, 30*time.Second, "every status odaflow wrote is sealed", func() (bool, string) {
		var unsealed []string
		n = 0
		for _, kind := range []oda.Kind{oda.KindComponent, oda.KindExposedAPI, oda.KindDependentAPI, oda.KindIdentityConfig, oda.KindSecretsManagement} {
			list, err := stack.dyn.Resource(kind.GVR()).Namespace(ns).List(context.Background(), metav1.ListOptions{})
			if err != nil {
				return false, err.Error()
			}
			for i := range list.Items {
				u := &list.Items[i]
				n++
				if !sealed(u) {
					unsealed = append(unsealed, kind.Name+"/"+u.GetName())
				}
			}
		}
		return n > 1 && len(unsealed) == 0, fmt.Sprintf("%d resources, unsealed: %v", n, unsealed)
	})
	t.Logf("%d resources, each status sealed", n)
}
