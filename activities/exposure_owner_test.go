package activities

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/odaflow/odaflow/gateway"
	"github.com/odaflow/odaflow/oda"
)

var referenceGrants = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1beta1", Resource: "referencegrants"}

// ownerHarness is an Exposure on the kong gateway over a fake apiserver
// holding objects; it records the objects patched (the fake cannot
// server-side apply, so a patch is answered with a new uid).
type ownerHarness struct {
	e       *Exposure
	dyn     *dynamicfake.FakeDynamicClient
	patched []string
}

func newOwnerHarness(t *testing.T, objs ...runtime.Object) *ownerHarness {
	t.Helper()
	h := &ownerHarness{}
	h.dyn = dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		referenceGrants: "ReferenceGrantList",
	}, objs...)
	h.dyn.PrependReactor("patch", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		p := a.(k8stesting.PatchAction)
		h.patched = append(h.patched, a.GetResource().Resource+" "+p.GetNamespace()+"/"+p.GetName())
		u := &unstructured.Unstructured{}
		u.SetName(p.GetName())
		u.SetUID(types.UID("uid-" + p.GetName()))
		return true, u, nil
	})
	h.e = &Exposure{Kube: &Kube{Dynamic: h.dyn}, Config: gateway.Config{Gateway: gateway.GatewayKong, VirtualServiceAPIVersion: gateway.DefaultVirtualServiceAPIVersion}}
	return h
}

func (h *ownerHarness) grant(t *testing.T, name string) (*unstructured.Unstructured, bool) {
	t.Helper()
	u, err := h.dyn.Resource(referenceGrants).Namespace("istio-ingress").Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return u, true
}

// sharedGrant is a ReferenceGrant in istio-ingress written for owner.
func sharedGrant(name, uid, owner string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("gateway.networking.k8s.io/v1beta1")
	u.SetKind("ReferenceGrant")
	u.SetNamespace("istio-ingress")
	u.SetName(name)
	u.SetUID(types.UID(uid))
	if owner != "" {
		u.SetAnnotations(map[string]string{gateway.AnnotationExposedAPI: owner})
	}
	return u
}

func ownerTestAPI(ns string) gateway.API {
	return gateway.API{Name: "r1-api", Namespace: ns, UID: "api-uid-" + ns, Spec: map[string]any{
		"name": "api", "apiType": "openapi", "implementation": "svc", "path": "/" + ns + "/api", "port": int64(8080),
	}}
}

// TestExposeDoesNotOverwriteAnotherAPIsObject: an object in the shared
// namespace under the name odaflow would apply, written for another
// ExposedAPI (or for none odaflow knows), is refused, not overwritten.
func TestExposeDoesNotOverwriteAnotherAPIsObject(t *testing.T) {
	api := ownerTestAPI("attacker")
	name := gateway.ReferenceGrantName(api.Namespace, api.Name)
	for owner, refused := range map[string]bool{"victim/r1-api": true, "": true, "attacker/r1-api": false} {
		t.Run("owner "+owner, func(t *testing.T) {
			h := newOwnerHarness(t, sharedGrant(name, "grant-uid", owner))
			_, err := h.e.Expose(context.Background(), ExposeInput{API: api})
			patchedGrant := false
			for _, p := range h.patched {
				patchedGrant = patchedGrant || strings.HasPrefix(p, "referencegrants ")
			}
			if refused {
				if err == nil || !strings.Contains(err.Error(), "was not written for this ExposedAPI") {
					t.Errorf("Expose = %v, want a refusal", err)
				}
				if patchedGrant {
					t.Errorf("patched %v: the other API's ReferenceGrant was overwritten", h.patched)
				}
				return
			}
			if err != nil || !patchedGrant {
				t.Errorf("Expose = %v, patched %v: want this API's own ReferenceGrant applied", err, h.patched)
			}
		})
	}
}

// TestUnexposeDeletesOnlyItsOwnSharedObjects: on deletion, an object in the
// shared namespace goes only if it still says it was written for this API
// and is the object applied.
func TestUnexposeDeletesOnlyItsOwnSharedObjects(t *testing.T) {
	const legacy = "kong-ref-grant-r1-api" // a name from before namespaces
	tests := []struct {
		name     string
		existing *unstructured.Unstructured
		gone     bool
	}{
		{"its own", sharedGrant(legacy, "g1", "victim/r1-api"), true},
		{"another tenant's, same name", sharedGrant(legacy, "g1", "attacker/r1-api"), false},
		{"no owner annotation", sharedGrant(legacy, "g1", ""), false},
		{"its own annotation, another object", sharedGrant(legacy, "g2", "victim/r1-api"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newOwnerHarness(t, tt.existing)
			ref := ObjectRef{APIVersion: "gateway.networking.k8s.io/v1beta1", Kind: "ReferenceGrant", Namespace: "istio-ingress", Name: legacy, UID: "g1"}
			if err := h.e.Unexpose(context.Background(), UnexposeInput{Ref: oda.Ref{Kind: "ExposedAPI", Namespace: "victim", Name: "r1-api"}, Applied: []ObjectRef{ref}}); err != nil {
				t.Fatalf("Unexpose: %v", err)
			}
			if _, exists := h.grant(t, legacy); exists == tt.gone {
				t.Errorf("ReferenceGrant exists = %v, want gone = %v", exists, tt.gone)
			}
		})
	}
}

// TestExposeMigratesSharedObjectsToNamespacedNames: an API whose
// ReferenceGrant was applied under the name of odaflow v0.1.0 (the
// ExposedAPI's name alone) gets it under the current name, and the old one
// deleted, even when its spec did not change (SkipApply).
func TestExposeMigratesSharedObjectsToNamespacedNames(t *testing.T) {
	const legacy = "kong-ref-grant-r1-api"
	api := ownerTestAPI("victim")
	h := newOwnerHarness(t, sharedGrant(legacy, "g1", "victim/r1-api"))
	applied := []ObjectRef{
		{APIVersion: gateway.DefaultVirtualServiceAPIVersion, Kind: "VirtualService", Namespace: "victim", Name: "r1-api", UID: "vs", Owned: true},
		{APIVersion: "gateway.networking.k8s.io/v1beta1", Kind: "ReferenceGrant", Namespace: "istio-ingress", Name: legacy, UID: "g1"},
	}
	res, err := h.e.Expose(context.Background(), ExposeInput{API: api, SkipApply: true, Applied: applied})
	if err != nil {
		t.Fatalf("Expose: %v", err)
	}
	if _, exists := h.grant(t, legacy); exists {
		t.Errorf("the old-named ReferenceGrant is still there")
	}
	want := gateway.ReferenceGrantName("victim", "r1-api")
	found := false
	for _, r := range res.Applied {
		found = found || (r.Kind == "ReferenceGrant" && r.Name == want)
	}
	if !found {
		t.Errorf("applied %+v, want ReferenceGrant %s", res.Applied, want)
	}
	// Up to date: nothing is applied again.
	h.patched = nil
	if _, err := h.e.Expose(context.Background(), ExposeInput{API: api, SkipApply: true, Applied: res.Applied}); err != nil || len(h.patched) != 0 {
		t.Errorf("Expose with current names = %v, patched %v; want nothing applied", err, h.patched)
	}
}
