package watcher

import (
	"encoding/json"
	"errors"
	"path"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/odaflow/odaflow/gateway"
	"github.com/odaflow/odaflow/oda"
	"github.com/odaflow/odaflow/workflows"
)

func TestNamespaceFilter(t *testing.T) {
	tests := []struct {
		name     string
		patterns []string
		match    []string
		noMatch  []string
		wantPats []string
	}{
		{
			name:    "empty serves every namespace",
			match:   []string{"components", "odacompns-1", "kube-system", ""},
			noMatch: nil,
		},
		{
			name:     "blank patterns are dropped, so they serve everything too",
			patterns: []string{"", "  "},
			match:    []string{"components", "anything"},
		},
		{
			name:     "exact names",
			patterns: []string{"components", "canvas"},
			match:    []string{"components", "canvas"},
			noMatch:  []string{"component", "components2", "xcomponents", "odacompns-1"},
			wantPats: []string{"components", "canvas"},
		},
		{
			name:     "globs",
			patterns: []string{" components ", "odacompns-*"},
			match:    []string{"components", "odacompns-", "odacompns-1", "odacompns-abc-def"},
			noMatch:  []string{"odacompns", "xodacompns-1", "default"},
			wantPats: []string{"components", "odacompns-*"},
		},
		{
			name:     "character classes and single characters",
			patterns: []string{"team-?", "ns-[ab]"},
			match:    []string{"team-1", "ns-a", "ns-b"},
			noMatch:  []string{"team-12", "ns-c"},
			wantPats: []string{"team-?", "ns-[ab]"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := NewNamespaceFilter(tt.patterns)
			if err != nil {
				t.Fatalf("NewNamespaceFilter(%q): %v", tt.patterns, err)
			}
			if diff := cmp.Diff(tt.wantPats, f.patterns); diff != "" {
				t.Errorf("patterns (-want +got):\n%s", diff)
			}
			for _, ns := range tt.match {
				if !f.Matches(ns) {
					t.Errorf("Matches(%q) = false, want true", ns)
				}
			}
			for _, ns := range tt.noMatch {
				if f.Matches(ns) {
					t.Errorf("Matches(%q) = true, want false", ns)
				}
			}
		})
	}
}

func TestNamespaceFilterBadPattern(t *testing.T) {
	for _, p := range []string{"odacompns-[", "[", `x\`, "a[b-"} {
		t.Run(p, func(t *testing.T) {
			_, err := NewNamespaceFilter([]string{"components", p})
			var bad *BadPatternError
			if !errors.As(err, &bad) {
				t.Fatalf("NewNamespaceFilter(%q) error = %v, want a *BadPatternError", p, err)
			}
			if bad.Pattern != p || !errors.Is(bad.Err, path.ErrBadPattern) {
				t.Errorf("BadPatternError = %+v, want pattern %q and path.ErrBadPattern", bad, p)
			}
			if want := "namespace pattern " + p + " is not a valid glob: " + path.ErrBadPattern.Error(); err.Error() != want {
				t.Errorf("Error() = %q, want %q", err.Error(), want)
			}
		})
	}
}

// component builds a Component with everything DesiredStateHash reads and
// everything it must ignore.
func component() *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": oda.APIVersion,
		"kind":       "Component",
		"metadata": map[string]any{
			"name":            "r1-productcatalog",
			"namespace":       "components",
			"uid":             "uid-1",
			"generation":      int64(3),
			"resourceVersion": "100",
			"labels":          map[string]any{"oda.tmforum.org/componentName": "r1-productcatalog"},
			"annotations": map[string]any{
				"team":                     "catalog",
				oda.AnnotationObservedHash: "0123456789abcdef",
				"kopf.zalando.org/last-handled-configuration": `{"spec":{}}`,
			},
			"finalizers": []any{oda.Finalizer},
			"managedFields": []any{map[string]any{
				"manager": "kubectl", "operation": "Update", "apiVersion": oda.APIVersion,
			}},
		},
		"spec": map[string]any{
			"version": "1.0.0",
			"coreFunction": map[string]any{
				"exposedAPIs": []any{map[string]any{"name": "productcatalogmanagement", "port": int64(8080)}},
			},
		},
		"status": map[string]any{
			"summary/status": map[string]any{"deployment_status": "In-Progress-CompCon"},
		},
	}}
	return u
}

func TestDesiredStateHash(t *testing.T) {
	base := DesiredStateHash(component())
	if len(base) != 16 {
		t.Fatalf("hash %q: want 16 hex digits", base)
	}
	if again := DesiredStateHash(component()); again != base {
		t.Fatalf("hash is not deterministic: %s then %s", base, again)
	}
	tests := []struct {
		name    string
		mutate  func(u *unstructured.Unstructured)
		changes bool
	}{
		// What the workflow acts on.
		{"spec field", func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, "1.0.1", "spec", "version")
		}, true},
		{"nested spec field", func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{"name": "productcatalogmanagement", "port": int64(8081)}}, "spec", "coreFunction", "exposedAPIs")
		}, true},
		{"spec removed", func(u *unstructured.Unstructured) { delete(u.Object, "spec") }, true},
		{"label added", func(u *unstructured.Unstructured) {
			u.SetLabels(map[string]string{"oda.tmforum.org/componentName": "r1-productcatalog", "tier": "gold"})
		}, true},
		{"label changed", func(u *unstructured.Unstructured) {
			u.SetLabels(map[string]string{"oda.tmforum.org/componentName": "other"})
		}, true},
		{"annotation added", func(u *unstructured.Unstructured) { setAnnotation(u, "owner", "someone") }, true},
		{"annotation changed", func(u *unstructured.Unstructured) { setAnnotation(u, "team", "billing") }, true},
		{"kubectl last-applied-configuration is ignored", func(u *unstructured.Unstructured) {
			setAnnotation(u, "kubectl.kubernetes.io/last-applied-configuration", `{"x":1}`)
		}, false},
		{"another controller's finalizer added", func(u *unstructured.Unstructured) {
			u.SetFinalizers(append(u.GetFinalizers(), "example.com/cleanup"))
		}, true},
		// odaflow's own finalizer is its own write, like status.
		{"odaflow's finalizer added", func(u *unstructured.Unstructured) {
			u.SetFinalizers(append(u.GetFinalizers(), oda.Finalizer))
		}, false},
		// The base's only finalizer is odaflow's: taking it off (the
		// workflow's own write at deletion) is no new desired state either.
		{"odaflow's finalizer removed", func(u *unstructured.Unstructured) { u.SetFinalizers(nil) }, false},
		{"deletionTimestamp set", func(u *unstructured.Unstructured) {
			now := metav1.NewTime(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC))
			u.SetDeletionTimestamp(&now)
		}, true},
		// What it must ignore: its own writes and the apiserver's bookkeeping.
		{"status", func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, "Complete", "status", "summary/status", "deployment_status")
		}, false},
		{"status removed", func(u *unstructured.Unstructured) { delete(u.Object, "status") }, false},
		{"resourceVersion", func(u *unstructured.Unstructured) { u.SetResourceVersion("101") }, false},
		{"generation", func(u *unstructured.Unstructured) { u.SetGeneration(4) }, false},
		{"managedFields", func(u *unstructured.Unstructured) {
			u.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "odaflow", Operation: metav1.ManagedFieldsOperationApply}})
		}, false},
		{"observed-hash annotation", func(u *unstructured.Unstructured) {
			setAnnotation(u, oda.AnnotationObservedHash, "fedcba9876543210")
		}, false},
		{"observed-hash annotation removed", func(u *unstructured.Unstructured) {
			a := u.GetAnnotations()
			delete(a, oda.AnnotationObservedHash)
			u.SetAnnotations(a)
		}, false},
		{"kopf last-handled-configuration annotation", func(u *unstructured.Unstructured) {
			setAnnotation(u, "kopf.zalando.org/last-handled-configuration", `{"spec":{"version":"0.9"}}`)
		}, false},
		{"uid", func(u *unstructured.Unstructured) { u.SetUID("uid-2") }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := component()
			tt.mutate(u)
			got := DesiredStateHash(u)
			if changed := got != base; changed != tt.changes {
				t.Errorf("hash %s → %s: changed = %t, want %t", base, got, changed, tt.changes)
			}
		})
	}
}

func TestEarlierHashesStillRecognised(t *testing.T) {
	u := component()
	u.SetFinalizers(append(u.GetFinalizers(), oda.Finalizer))
	// A watcher before the change counted odaflow's finalizer: its
	// annotation must still match after an upgrade.
	withOwn := desiredStateHash(u, hashWithOwnFinalizer)
	if withOwn == DesiredStateHash(u) || !slices.Contains(earlierDesiredStateHashes(u), withOwn) {
		t.Fatal("with odaflow's finalizer the hash that counted it must differ from today's and be accepted")
	}
	plain := component()
	if desiredStateHash(plain, hashWithOwnFinalizer) != DesiredStateHash(plain) && !slices.Contains(plain.GetFinalizers(), oda.Finalizer) {
		t.Fatal("without odaflow's finalizer both hashes must agree")
	}
	// A watcher that hashed the emptied list as []: odaflow's finalizer
	// alone gave another hash than none, and that annotation is accepted.
	alone := component()
	alone.SetFinalizers([]string{oda.Finalizer})
	emptied := desiredStateHash(alone, hashEmptiedFinalizers)
	if emptied == DesiredStateHash(alone) || !slices.Contains(earlierDesiredStateHashes(alone), emptied) {
		t.Fatal("the emptied-list hash must differ from today's and be accepted")
	}
}

// The workflow adds odaflow's finalizer itself, often as the object's only
// one: that write must not look like a new desired state (it re-drove
// every IdentityConfig's whole reconcile once).
func TestOwnFinalizerAloneLeavesTheHash(t *testing.T) {
	none := component()
	none.SetFinalizers(nil)
	for name, finalizers := range map[string][]string{
		"odaflow's finalizer alone": {oda.Finalizer},
		"an empty list":             {},
	} {
		u := component()
		u.SetFinalizers(finalizers)
		if got, want := DesiredStateHash(u), DesiredStateHash(none); got != want {
			t.Errorf("%s: hash %s, without finalizers %s", name, got, want)
		}
	}
	kopf := component()
	kopf.SetFinalizers([]string{oda.KopfFinalizer})
	if DesiredStateHash(kopf) == DesiredStateHash(none) {
		t.Error("another controller's finalizer must change the hash")
	}
}

func setAnnotation(u *unstructured.Unstructured, k, v string) {
	a := u.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[k] = v
	u.SetAnnotations(a)
}

func TestResourceEventOf(t *testing.T) {
	deleting := component()
	now := metav1.NewTime(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC))
	deleting.SetDeletionTimestamp(&now)
	bare := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": oda.APIVersion, "kind": "Component",
		"metadata": map[string]any{"name": "bare", "namespace": "components", "uid": "uid-9"},
	}}
	tests := []struct {
		name string
		obj  *unstructured.Unstructured
		want workflows.ResourceEvent
	}{
		{
			name: "every field",
			obj:  component(),
			want: workflows.ResourceEvent{
				UID: "uid-1", Generation: 3, Hash: DesiredStateHash(component()),
				Labels: map[string]string{"oda.tmforum.org/componentName": "r1-productcatalog"},
				Spec: map[string]any{
					"version": "1.0.0",
					"coreFunction": map[string]any{
						"exposedAPIs": []any{map[string]any{"name": "productcatalogmanagement", "port": int64(8080)}},
					},
				},
				Status:          map[string]any{"summary/status": map[string]any{"deployment_status": "In-Progress-CompCon"}},
				Finalizers:      []string{oda.Finalizer},
				ResourceVersion: "100",
			},
		},
		{
			name: "deleting",
			obj:  deleting,
			want: func() workflows.ResourceEvent {
				ev := ResourceEventOf(component())
				ev.Hash = DesiredStateHash(deleting)
				ev.Deleting = true
				return ev
			}(),
		},
		{
			name: "no spec, no status",
			obj:  bare,
			want: workflows.ResourceEvent{UID: "uid-9", Hash: DesiredStateHash(bare)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, ResourceEventOf(tt.obj)); diff != "" {
				t.Errorf("ResourceEventOf (-want +got):\n%s", diff)
			}
		})
	}
	if ev := ResourceEventOf(deleting); ev.Hash == ResourceEventOf(component()).Hash {
		t.Errorf("a deletion does not change the hash")
	}
}

func child(kind string, owners ...metav1.OwnerReference) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetAPIVersion(oda.APIVersion)
	u.SetKind(kind)
	u.SetNamespace("components")
	u.SetName("r1-productcatalog-productcatalogmanagement-v4")
	u.SetUID("child-uid")
	u.SetOwnerReferences(owners)
	return u
}

func TestParentComponent(t *testing.T) {
	ref := func(apiVersion, kind, name string, controller *bool) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID(name + "-uid"), Controller: controller}
	}
	yes, no := ptr.To(true), ptr.To(false)
	tests := []struct {
		name   string
		owners []metav1.OwnerReference
		want   string
		ok     bool
	}{
		{"no owner", nil, "", false},
		{"controller Component", []metav1.OwnerReference{ref("oda.tmforum.org/v1", "Component", "r1", yes)}, "r1", true},
		{"controller Component, other version", []metav1.OwnerReference{ref("oda.tmforum.org/v1beta3", "Component", "r1", yes)}, "r1", true},
		{"Component that is not the controller", []metav1.OwnerReference{ref("oda.tmforum.org/v1", "Component", "r1", no)}, "", false},
		{"Component with controller unset", []metav1.OwnerReference{ref("oda.tmforum.org/v1", "Component", "r1", nil)}, "", false},
		{"Component of another group", []metav1.OwnerReference{ref("example.com/v1", "Component", "r1", yes)}, "", false},
		{"group that only starts like oda's", []metav1.OwnerReference{ref("oda.tmforum.org.evil/v1", "Component", "r1", yes)}, "", false},
		{"group that only ends like oda's", []metav1.OwnerReference{ref("x.oda.tmforum.org/v1", "Component", "r1", yes)}, "", false},
		{"another kind in the oda group", []metav1.OwnerReference{ref("oda.tmforum.org/v1", "ExposedAPI", "r1", yes)}, "", false},
		{"a Deployment controls it", []metav1.OwnerReference{ref("apps/v1", "Deployment", "d1", yes)}, "", false},
		{"controller Component after other owners", []metav1.OwnerReference{
			ref("oda.tmforum.org/v1", "Component", "not-controller", no),
			ref("v1", "ConfigMap", "cm", nil),
			ref("oda.tmforum.org/v1", "Component", "r2", yes),
		}, "r2", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ParentComponent(child("ExposedAPI", tt.owners...))
			if got != tt.want || ok != tt.ok {
				t.Errorf("ParentComponent = (%q, %t), want (%q, %t)", got, ok, tt.want, tt.ok)
			}
		})
	}
}

func withStatus(u *unstructured.Unstructured, status map[string]any) *unstructured.Unstructured {
	if status != nil {
		u.Object["status"] = status
	}
	return u
}

func TestChildStatusOf(t *testing.T) {
	const name = "r1-productcatalog-productcatalogmanagement-v4"
	tests := []struct {
		name   string
		kind   string
		status map[string]any
		want   workflows.ChildStatus
	}{
		{
			name: "ExposedAPI without status",
			kind: oda.KindExposedAPI.Name,
			want: workflows.ChildStatus{Kind: "ExposedAPI", Name: name, UID: "child-uid"},
		},
		{
			name: "ExposedAPI published",
			kind: oda.KindExposedAPI.Name,
			status: map[string]any{
				"implementation": map[string]any{"ready": true},
				"apiStatus": map[string]any{
					"url": "http://34.159.217.74/r1/tmf620", "developerUI": "http://34.159.217.74/r1/tmf620/docs",
					"ip": "34.159.217.74", "path": "/r1/tmf620", "implementation": "r1-prodcatapi", "port": int64(8080),
				},
			},
			want: workflows.ChildStatus{
				Kind: "ExposedAPI", Name: name, UID: "child-uid", Ready: true,
				URL: "http://34.159.217.74/r1/tmf620", DeveloperUI: "http://34.159.217.74/r1/tmf620/docs",
				IP: "34.159.217.74", Path: "/r1/tmf620", Implementation: "r1-prodcatapi", Port: ptr.To[int64](8080),
			},
		},
		{
			name: "ExposedAPI port as a JSON float",
			kind: oda.KindExposedAPI.Name,
			status: map[string]any{
				"implementation": map[string]any{"ready": false},
				"apiStatus":      map[string]any{"port": float64(443)},
			},
			want: workflows.ChildStatus{Kind: "ExposedAPI", Name: name, UID: "child-uid", Port: ptr.To[int64](443)},
		},
		{
			name: "DependentAPI resolved",
			kind: oda.KindDependentAPI.Name,
			status: map[string]any{
				"implementation": map[string]any{"ready": true},
				"depapiStatus":   map[string]any{"url": "http://other/tmf620"},
			},
			want: workflows.ChildStatus{Kind: "DependentAPI", Name: name, UID: "child-uid", Ready: true, URL: "http://other/tmf620"},
		},
		{
			name: "IdentityConfig registered",
			kind: oda.KindIdentityConfig.Name,
			status: map[string]any{
				"identityConfig": map[string]any{"identityProvider": "Keycloak", "listenerRegistered": true},
			},
			want: workflows.ChildStatus{Kind: "IdentityConfig", Name: name, UID: "child-uid", IdentityProvider: "Keycloak", ListenerRegistered: true},
		},
		{
			name:   "SecretsManagement ready",
			kind:   oda.KindSecretsManagement.Name,
			status: map[string]any{"implementation": map[string]any{"ready": true}},
			want:   workflows.ChildStatus{Kind: "SecretsManagement", Name: name, UID: "child-uid", Ready: true},
		},
		{
			name:   "ready of the wrong type is not ready",
			kind:   oda.KindSecretsManagement.Name,
			status: map[string]any{"implementation": map[string]any{"ready": "true"}},
			want:   workflows.ChildStatus{Kind: "SecretsManagement", Name: name, UID: "child-uid"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ChildStatusOf(tt.kind, withStatus(child(tt.kind), tt.status))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ChildStatusOf (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParentKnows(t *testing.T) {
	parent := func(status map[string]any) *unstructured.Unstructured {
		return withStatus(&unstructured.Unstructured{Object: map[string]any{"apiVersion": oda.APIVersion, "kind": "Component"}}, status)
	}
	api := func(name, uid, url string, ready bool) map[string]any {
		m := map[string]any{"name": name, "uid": uid, "ready": ready}
		if url != "" {
			m["url"] = url
		}
		return m
	}
	exposed := workflows.ChildStatus{Kind: "ExposedAPI", Name: "r1-tmf620", UID: "u1", Ready: true, URL: "http://gw/r1/tmf620"}
	dependent := workflows.ChildStatus{Kind: "DependentAPI", Name: "r1-party", UID: "u2", Ready: true, URL: "http://gw/party"}
	identity := workflows.ChildStatus{Kind: "IdentityConfig", Name: "r1", UID: "u3", IdentityProvider: "Keycloak", ListenerRegistered: true}
	secrets := workflows.ChildStatus{Kind: "SecretsManagement", Name: "r1", UID: "u4", Ready: true}
	tests := []struct {
		name   string
		status map[string]any
		child  workflows.ChildStatus
		want   bool
	}{
		{"no status at all", nil, exposed, false},
		{"empty status", map[string]any{}, exposed, false},
		{"ExposedAPI listed alike in coreAPIs", map[string]any{
			"coreAPIs": []any{api("r1-other", "u0", "", false), api("r1-tmf620", "u1", "http://gw/r1/tmf620", true)},
		}, exposed, true},
		{"ExposedAPI listed alike in securityAPIs", map[string]any{
			"coreAPIs": []any{}, "managementAPIs": []any{}, "securityAPIs": []any{api("r1-tmf620", "u1", "http://gw/r1/tmf620", true)},
		}, exposed, true},
		{"ExposedAPI listed with another ready", map[string]any{
			"coreAPIs": []any{api("r1-tmf620", "u1", "http://gw/r1/tmf620", false)},
		}, exposed, false},
		{"ExposedAPI listed with another url", map[string]any{
			"coreAPIs": []any{api("r1-tmf620", "u1", "http://old/r1/tmf620", true)},
		}, exposed, false},
		{"ExposedAPI listed with another uid (re-created)", map[string]any{
			"coreAPIs": []any{api("r1-tmf620", "u0", "http://gw/r1/tmf620", true)},
		}, exposed, false},
		{"ExposedAPI not listed", map[string]any{"coreAPIs": []any{api("r1-other", "u1", "http://gw/r1/tmf620", true)}}, exposed, false},
		{"ExposedAPI listed only among the dependent APIs", map[string]any{
			"coreDependentAPIs": []any{api("r1-tmf620", "u1", "http://gw/r1/tmf620", true)},
		}, exposed, false},
		{"DependentAPI listed alike", map[string]any{
			"managementDependentAPIs": []any{api("r1-party", "u2", "http://gw/party", true)},
		}, dependent, true},
		{"DependentAPI listed among the exposed APIs only", map[string]any{
			"coreAPIs": []any{api("r1-party", "u2", "http://gw/party", true)},
		}, dependent, false},
		{"DependentAPI not resolved yet", map[string]any{
			"coreDependentAPIs": []any{api("r1-party", "u2", "", false)},
		}, dependent, false},
		{"IdentityConfig alike", map[string]any{
			"identityConfig": map[string]any{"identityProvider": "Keycloak", "listenerRegistered": true},
		}, identity, true},
		{"IdentityConfig listener not yet registered", map[string]any{
			"identityConfig": map[string]any{"identityProvider": "Keycloak", "listenerRegistered": false},
		}, identity, false},
		{"IdentityConfig missing", map[string]any{"coreAPIs": []any{}}, identity, false},
		{"SecretsManagement alike", map[string]any{
			"securitySecretsManagement": map[string]any{"name": "r1", "uid": "u4", "ready": true},
		}, secrets, true},
		{"SecretsManagement not ready", map[string]any{
			"securitySecretsManagement": map[string]any{"name": "r1", "uid": "u4", "ready": false},
		}, secrets, false},
		{"SecretsManagement of another uid", map[string]any{
			"securitySecretsManagement": map[string]any{"name": "r1", "uid": "u0", "ready": true},
		}, secrets, false},
		{"SecretsManagement empty", map[string]any{"securitySecretsManagement": map[string]any{}}, secrets, false},
		{"kinds a Component does not list", map[string]any{"coreAPIs": []any{}}, workflows.ChildStatus{Kind: "PublishedNotification", Name: "n"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ParentKnows(parent(tt.status), tt.child); got != tt.want {
				t.Errorf("ParentKnows = %t, want %t", got, tt.want)
			}
		})
	}
}

// TestChildStatusRoundTrip checks ParentKnows against the status the
// Component workflow actually renders: a child digested by ChildStatusOf and
// written by oda.StatusObject must be known.
func TestChildStatusRoundTrip(t *testing.T) {
	ea := ChildStatusOf("ExposedAPI", withStatus(child("ExposedAPI"), map[string]any{
		"implementation": map[string]any{"ready": true},
		"apiStatus":      map[string]any{"url": "http://gw/r1/tmf620", "path": "/r1/tmf620", "implementation": "svc", "port": int64(8080)},
	}))
	sm := ChildStatusOf("SecretsManagement", withStatus(child("SecretsManagement"), map[string]any{
		"implementation": map[string]any{"ready": true},
	}))
	id := ChildStatusOf("IdentityConfig", withStatus(child("IdentityConfig"), map[string]any{
		"identityConfig": map[string]any{"identityProvider": "Keycloak", "listenerRegistered": true},
	}))
	s := oda.ComponentStatus{
		APIs: map[oda.Segment][]oda.APIEntry{oda.SegmentManagement: {{
			Name: ea.Name, UID: ea.UID, Ready: ea.Ready, URL: ea.URL, Path: ea.Path, Port: ea.Port, Implementation: ea.Implementation,
		}}},
		SecretsManagement: &oda.SecretsEntry{Name: sm.Name, UID: sm.UID, Ready: sm.Ready},
		Identity:          &oda.IdentityStatus{IdentityProvider: id.IdentityProvider, ListenerRegistered: id.ListenerRegistered},
	}
	// Through JSON, as the apiserver hands it back.
	status := roundTripJSON(t, oda.StatusObject(s, oda.Condition{Type: "Ready", Status: "False"}))
	p := withStatus(&unstructured.Unstructured{Object: map[string]any{}}, status)
	for _, cs := range []workflows.ChildStatus{ea, sm, id} {
		if !ParentKnows(p, cs) {
			t.Errorf("ParentKnows(%s) = false for the status the Component renders: %v", cs.Kind, status)
		}
	}
}

func TestImplementationReady(t *testing.T) {
	ep := func(ready *bool) discoveryv1.Endpoint {
		return discoveryv1.Endpoint{Addresses: []string{"10.0.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: ready}}
	}
	slice := func(eps ...discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
		return &discoveryv1.EndpointSlice{Endpoints: eps}
	}
	yes, no := ptr.To(true), ptr.To(false)
	tests := []struct {
		name   string
		slices []*discoveryv1.EndpointSlice
		want   bool
	}{
		{"no slices", nil, false},
		{"a slice without endpoints", []*discoveryv1.EndpointSlice{slice()}, false},
		{"ready true", []*discoveryv1.EndpointSlice{slice(ep(yes))}, true},
		{"ready unset counts as ready", []*discoveryv1.EndpointSlice{slice(ep(nil))}, true},
		{"ready false", []*discoveryv1.EndpointSlice{slice(ep(no))}, false},
		{"one ready among not-ready ones", []*discoveryv1.EndpointSlice{slice(ep(no), ep(no), ep(yes))}, true},
		{"several slices, none ready", []*discoveryv1.EndpointSlice{slice(ep(no)), slice(), slice(ep(no))}, false},
		{"several slices, the last has a ready one", []*discoveryv1.EndpointSlice{slice(ep(no)), slice(), slice(ep(no), ep(yes))}, true},
		{"several slices, an unset one", []*discoveryv1.EndpointSlice{slice(), slice(ep(nil))}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ImplementationReady(tt.slices); got != tt.want {
				t.Errorf("ImplementationReady = %t, want %t", got, tt.want)
			}
		})
	}
}

func TestIngressOf(t *testing.T) {
	svc := func(ns, name string, ingress []corev1.LoadBalancerIngress, ports ...corev1.ServicePort) *corev1.Service {
		return &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec:       corev1.ServiceSpec{Ports: ports},
			Status:     corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: ingress}},
		}
	}
	ip := func(s string) []corev1.LoadBalancerIngress { return []corev1.LoadBalancerIngress{{IP: s}} }
	http := corev1.ServicePort{Name: "http2", Port: 80}
	https := corev1.ServicePort{Name: "https", Port: 443}
	tests := []struct {
		name     string
		services func() []*corev1.Service
		want     *gateway.Ingress
	}{
		{"no services", func() []*corev1.Service { return nil }, nil},
		{"pending load balancer", func() []*corev1.Service {
			return []*corev1.Service{svc("istio-ingress", "istio-ingress", nil, http)}
		}, nil},
		{"empty ingress entry", func() []*corev1.Service {
			return []*corev1.Service{svc("istio-ingress", "istio-ingress", []corev1.LoadBalancerIngress{{}}, http)}
		}, nil},
		{"an IP and its ports", func() []*corev1.Service {
			return []*corev1.Service{svc("istio-ingress", "istio-ingress", ip("34.159.217.74"), http, https)}
		}, &gateway.Ingress{IP: "34.159.217.74", Ports: []gateway.Port{{Name: "http2", Port: 80}, {Name: "https", Port: 443}}}},
		{"a host name", func() []*corev1.Service {
			return []*corev1.Service{svc("istio-ingress", "istio-ingress", []corev1.LoadBalancerIngress{{Hostname: "lb.example.com"}}, http)}
		}, &gateway.Ingress{Hostname: "lb.example.com", Ports: []gateway.Port{{Name: "http2", Port: 80}}}},
		{"the first by namespace/name wins, whatever the list order", func() []*corev1.Service {
			return []*corev1.Service{
				svc("z-ingress", "gw", ip("10.0.0.3")),
				svc("istio-ingress", "b", ip("10.0.0.2")),
				svc("istio-ingress", "a", ip("10.0.0.1")),
			}
		}, &gateway.Ingress{IP: "10.0.0.1"}},
		{"services without an address are skipped", func() []*corev1.Service {
			return []*corev1.Service{
				svc("istio-ingress", "b", ip("10.0.0.2"), https),
				svc("istio-ingress", "a", nil, http),
			}
		}, &gateway.Ingress{IP: "10.0.0.2", Ports: []gateway.Port{{Name: "https", Port: 443}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, IngressOf(tt.services())); diff != "" {
				t.Errorf("IngressOf (-want +got):\n%s", diff)
			}
			// Every permutation gives the same answer (replicas agree).
			s := tt.services()
			for i := range s {
				rot := append(append([]*corev1.Service{}, s[i:]...), s[:i]...)
				if diff := cmp.Diff(tt.want, IngressOf(rot)); diff != "" {
					t.Errorf("IngressOf rotated by %d (-want +got):\n%s", i, diff)
				}
			}
		})
	}
}

func TestConflictWinner(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	claim := func(ns, name, uid string, created time.Time, held, deleting bool) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"path": "/p"}}}
		u.SetNamespace(ns)
		u.SetName(name)
		u.SetUID(types.UID(uid))
		u.SetCreationTimestamp(metav1.NewTime(created))
		if held {
			u.Object["status"] = map[string]any{"apiStatus": map[string]any{"path": "/p"}}
		}
		if deleting {
			d := metav1.NewTime(created.Add(time.Hour))
			u.SetDeletionTimestamp(&d)
		}
		return u
	}
	heldElsewhere := claim("victim", "moved", "0", t0, false, false)
	heldElsewhere.Object["status"] = map[string]any{"apiStatus": map[string]any{"path": "/other"}}
	tests := []struct {
		name   string
		claims []*unstructured.Unstructured
		want   string
	}{
		{"no claims", nil, ""},
		{"one claim", []*unstructured.Unstructured{claim("a", "x", "1", t0, false, false)}, "a/x"},
		{"the older wins", []*unstructured.Unstructured{
			claim("a", "new", "1", t0.Add(time.Second), false, false), claim("z", "old", "2", t0, false, false),
		}, "z/old"},
		{"a tie goes by uid, not by namespace/name", []*unstructured.Unstructured{
			claim("a", "a", "c", t0, false, false), claim("b", "z", "a", t0, false, false), claim("a", "y", "b", t0, false, false),
		}, "b/z"},
		{"the claim holding the path keeps it against a same-second one", []*unstructured.Unstructured{
			claim("victim", "api", "z", t0, true, false), claim("aaa", "api", "a", t0, false, false),
		}, "victim/api"},
		{"status for another path holds nothing", []*unstructured.Unstructured{
			heldElsewhere, claim("victim", "api", "z", t0.Add(time.Hour), true, false),
		}, "victim/api"},
		{"a deleting claim is ignored even if older", []*unstructured.Unstructured{
			claim("a", "leaving", "1", t0, true, true), claim("b", "staying", "2", t0.Add(time.Minute), false, false),
		}, "b/staying"},
		{"only deleting claims", []*unstructured.Unstructured{
			claim("a", "x", "1", t0, false, true), claim("b", "y", "2", t0, false, true),
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ConflictWinner(tt.claims); got != tt.want {
				t.Errorf("ConflictWinner = %q, want %q", got, tt.want)
			}
			rev := make([]*unstructured.Unstructured, len(tt.claims))
			for i, c := range tt.claims {
				rev[len(rev)-1-i] = c
			}
			if got := ConflictWinner(rev); got != tt.want {
				t.Errorf("ConflictWinner (reversed) = %q, want %q", got, tt.want)
			}
		})
	}
}

// roundTripJSON gives a value the shape the apiserver hands back.
func roundTripJSON(t *testing.T, v map[string]any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(append(append([]byte(`{"apiVersion":"v1","kind":"X","status":`), b...), '}')); err != nil {
		t.Fatal(err)
	}
	return u.Object["status"].(map[string]any)
}

func TestInComponentTree(t *testing.T) {
	owner := func(apiVersion, kind string) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: "pc", UID: "u"}
	}
	tests := []struct {
		name string
		refs []metav1.OwnerReference
		want bool
	}{
		{"no owner: a workload from the component's chart", nil, false},
		{"owned by its Component", []metav1.OwnerReference{owner(oda.APIVersion, "Component")}, true},
		{"owned by an older version of the Component", []metav1.OwnerReference{owner(oda.Group+"/v1beta3", "Component")}, true},
		{"the credentials Secret, owned by its IdentityConfig", []metav1.OwnerReference{owner(oda.APIVersion, "IdentityConfig")}, true},
		{"owned by a Deployment only", []metav1.OwnerReference{owner("apps/v1", "Deployment")}, false},
		{"a group that only starts like ODA's", []metav1.OwnerReference{owner(oda.Group+".example.com/v1", "Component")}, false},
		{"a core kind named like ODA's", []metav1.OwnerReference{owner("v1", "Component")}, false},
		{"one ODA owner among others", []metav1.OwnerReference{owner("apps/v1", "ReplicaSet"), owner(oda.APIVersion, "SecretsManagement")}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := InComponentTree(tt.refs); got != tt.want {
				t.Errorf("InComponentTree(%v) = %v, want %v", tt.refs, got, tt.want)
			}
		})
	}
}

func TestPathKeyAndPrefixes(t *testing.T) {
	tests := []struct {
		path, key string
		prefixes  []string
	}{
		{"", "", nil},
		{"/", "/", nil},
		{"//", "/", nil},
		{"/a", "/a", []string{"/"}},
		{"/a/", "/a", []string{"/"}},
		{"/vic", "/vic", []string{"/vi", "/v", "/"}},
		{"/a/b", "/a/b", []string{"/a/", "/a", "/"}},
	}
	for _, tt := range tests {
		if got := gateway.PathKey(tt.path); got != tt.key {
			t.Errorf("PathKey(%q) = %q, want %q", tt.path, got, tt.key)
		}
		if diff := cmp.Diff(tt.prefixes, pathPrefixes(tt.path)); diff != "" {
			t.Errorf("pathPrefixes(%q) (-want +got):\n%s", tt.path, diff)
		}
	}
}

func TestClaimOwner(t *testing.T) {
	labelled := &unstructured.Unstructured{Object: map[string]any{}}
	labelled.SetNamespace("ns")
	labelled.SetName("pc-metrics")
	labelled.SetLabels(map[string]string{oda.LabelComponentName: "pc"})
	owned := &unstructured.Unstructured{Object: map[string]any{}}
	owned.SetNamespace("ns")
	owned.SetName("pc-api")
	yes := true
	owned.SetOwnerReferences([]metav1.OwnerReference{{Kind: "Component", Name: "pc", Controller: &yes}})
	alone := &unstructured.Unstructured{Object: map[string]any{}}
	alone.SetNamespace("ns")
	alone.SetName("standalone")
	if a, b := claimOwner(labelled), claimOwner(owned); a != b {
		t.Errorf("label and controller name the same Component: %q != %q", a, b)
	}
	if claimOwner(alone) == claimOwner(labelled) {
		t.Errorf("an ExposedAPI with no Component is its own owner, got %q", claimOwner(alone))
	}
}

func TestConflictHolder(t *testing.T) {
	self := gateway.Claim{Namespace: "mine", Name: "api"}
	tests := []struct {
		holder gateway.Claim
		want   string
	}{
		{gateway.Claim{Namespace: "mine", Name: "first"}, "mine/first"},
		{gateway.Claim{Namespace: "victim", Name: "victim-api"}, "in another namespace"},
		{gateway.Claim{Namespace: "mine-too", Name: "x"}, "in another namespace"},
	}
	for _, tt := range tests {
		if got := conflictHolder(self, tt.holder); got != tt.want {
			t.Errorf("conflictHolder(%s) = %q, want %q", tt.holder.ID(), got, tt.want)
		}
	}
}

func TestStatusForged(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	written := map[string]any{"apiStatus": map[string]any{"url": "https://canvas.example/r1/tmf620", "ready": true}}
	object := func(status map[string]any, annotations map[string]string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": oda.APIVersion, "kind": "ExposedAPI"}}
		u.SetUID("uid-1")
		u.SetAnnotations(annotations)
		if status != nil {
			u.Object["status"] = status
		}
		return u
	}
	sealed := map[string]string{oda.AnnotationStatusFence: "10.4", oda.AnnotationStatusSeal: oda.Seal(key, "uid-1", "10.4", written)}
	forgedURL := map[string]any{"apiStatus": map[string]any{"url": "http://169.254.169.254/latest/meta-data/iam/security-credentials/", "ready": true}}
	maxFence := map[string]string{oda.AnnotationStatusFence: "9223372036854775807.9223372036854775807", oda.AnnotationStatusSeal: sealed[oda.AnnotationStatusSeal]}
	tests := []struct {
		name string
		key  []byte
		obj  *unstructured.Unstructured
		want bool
	}{
		{"nothing written yet", key, object(nil, nil), false},
		{"odaflow's write", key, object(written, sealed), false},
		{"odaflow's write and someone else's key beside", key, object(map[string]any{"apiStatus": written["apiStatus"], "other": 1}, sealed), false},
		{"a forged url under odaflow's seal", key, object(forgedURL, sealed), true},
		{"a maximal fence", key, object(written, maxFence), true},
		{"a status written before odaflow's first", key, object(forgedURL, nil), true},
		{"a fence alone", key, object(nil, map[string]string{oda.AnnotationStatusFence: "1.1"}), true},
		{"the seal removed", key, object(written, map[string]string{oda.AnnotationStatusFence: "10.4"}), true},
		{"no key: nothing is checked", nil, object(forgedURL, maxFence), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := statusForged(tc.key, tc.obj); got != tc.want {
				t.Errorf("statusForged = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestRepairDelay(t *testing.T) {
	tests := []struct {
		streak int
		since  time.Duration
		want   time.Duration
	}{
		{0, 0, 0},
		{repairsAtOnce - 1, 0, 0},
		{repairsAtOnce, 0, time.Second},
		{repairsAtOnce, 400 * time.Millisecond, 600 * time.Millisecond},
		{repairsAtOnce, 2 * time.Second, 0},
		{repairsAtOnce + 3, 0, 8 * time.Second},
		{repairsAtOnce + 20, 0, maxRepairDelay},
		{repairsAtOnce + 100, maxRepairDelay, 0},
	}
	for _, tc := range tests {
		if got := repairDelay(tc.streak, tc.since); got != tc.want {
			t.Errorf("repairDelay(%d, %v) = %v, want %v", tc.streak, tc.since, got, tc.want)
		}
	}
}

func TestRepairHashIsNewForEachForgedVersion(t *testing.T) {
	h := "0123456789abcdef"
	a, b := repairHash(h, "100"), repairHash(h, "101")
	if a == h || b == h || a == b {
		t.Errorf("repair hashes %q %q of %q: want each new and different", a, b, h)
	}
	if repairHash(h, "100") != a {
		t.Error("the repair hash of one version changes")
	}
}

func TestBookkeepingAnnotationsLeaveTheHash(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"path": "/r1"}}}
	before := DesiredStateHash(u)
	u.SetAnnotations(map[string]string{oda.AnnotationStatusSeal: "a.b.[]", oda.AnnotationStatusFence: "1.2", oda.AnnotationObservedHash: "x"})
	if got := DesiredStateHash(u); got != before {
		t.Errorf("a status write's annotations changed the hash: %s, want %s", got, before)
	}
}

// ConflictWinner decides which of the ExposedAPIs claiming one path prefix
// keeps it (gateway.Winner: a held claim, then the oldest, then the
// smallest uid; deleting ones keep nothing). It returns the winner's
// namespace/name, "" when every claim is being deleted.
func ConflictWinner(claims []*unstructured.Unstructured) string {
	cs := make([]gateway.Claim, len(claims))
	for i, c := range claims {
		cs[i] = ClaimOf(c)
	}
	if w, ok := gateway.Winner(cs); ok {
		return w.ID()
	}
	return ""
}
