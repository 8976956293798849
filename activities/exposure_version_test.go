package activities

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/odaflow/odaflow/gateway"
)

// TestVirtualServiceVersionFromDiscovery: VirtualServices are written with
// the version the cluster serves, v1 first, then v1beta1, then v1alpha3
// (an Istio older than 1.22 serves no v1), and the apply goes to that
// version's resource.
func TestVirtualServiceVersionFromDiscovery(t *testing.T) {
	cases := map[string]struct {
		served []string
		want   string
	}{
		"istio 1.22 and later":  {[]string{"v1alpha3", "v1beta1", "v1"}, "networking.istio.io/v1"},
		"istio 1.5 to 1.21":     {[]string{"v1alpha3", "v1beta1"}, "networking.istio.io/v1beta1"},
		"only v1alpha3":         {[]string{"v1alpha3"}, "networking.istio.io/v1alpha3"},
		"no istio: v1, retried": {nil, "networking.istio.io/v1"},
		"v1 without the kind":   {[]string{"v1-other-kinds", "v1alpha3"}, "networking.istio.io/v1alpha3"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			core := fake.NewClientset()
			gvrs := map[schema.GroupVersionResource]string{}
			for _, v := range tc.served {
				list := &metav1.APIResourceList{GroupVersion: "networking.istio.io/" + v}
				if v == "v1-other-kinds" {
					list.GroupVersion = "networking.istio.io/v1"
					list.APIResources = []metav1.APIResource{{Name: "envoyfilters", Kind: "EnvoyFilter", Namespaced: true}}
				} else {
					list.APIResources = []metav1.APIResource{{Name: "virtualservices", Kind: "VirtualService", Namespaced: true}}
					gvrs[schema.GroupVersionResource{Group: "networking.istio.io", Version: v, Resource: "virtualservices"}] = "VirtualServiceList"
				}
				core.Resources = append(core.Resources, list)
			}
			dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), gvrs)
			// The fake cannot server-side apply: record the version the
			// patch is sent to and answer it.
			var patched []string
			dyn.PrependReactor("patch", "virtualservices", func(a k8stesting.Action) (bool, runtime.Object, error) {
				patched = append(patched, a.GetResource().GroupVersion().String())
				u := &unstructured.Unstructured{}
				u.SetUID("vs-uid")
				return true, u, nil
			})
			e := &Exposure{Kube: &Kube{Dynamic: dyn, Core: core}, Config: gateway.Config{Gateway: gateway.GatewayIstio}}
			cfg, err := e.config()
			if err != nil {
				t.Fatal(err)
			}
			got := cfg.WithDefaults().VirtualServiceAPIVersion
			if got != tc.want {
				t.Fatalf("VirtualService apiVersion %q, want %q", got, tc.want)
			}
			if len(tc.served) == 0 {
				return
			}
			api := gateway.API{Name: "pc-api", Namespace: "components", UID: "u1", Spec: map[string]any{
				"name": "api", "apiType": "openapi", "implementation": "svc", "path": "/pc/api", "port": int64(8080),
			}}
			spec, err := gateway.ParseSpec(api.Spec)
			if err != nil {
				t.Fatal(err)
			}
			applied, _, err := e.apply(context.Background(), api, spec, nil)
			if err != nil {
				t.Fatalf("apply: %v", err)
			}
			if len(applied) == 0 || applied[0].Kind != "VirtualService" || applied[0].APIVersion != tc.want {
				t.Errorf("applied %+v, want a VirtualService of %s", applied, tc.want)
			}
			if len(patched) != 1 || patched[0] != tc.want {
				t.Errorf("patched through %v, want the %s resource", patched, tc.want)
			}
		})
	}
}

// TestObjectRefKeyIgnoresVersion: an object applied as v1beta1 and again,
// after an Istio upgrade, as v1 is the same object, so the apply keeps it
// instead of deleting the "previous" one (which would delete the new one).
func TestObjectRefKeyIgnoresVersion(t *testing.T) {
	a := ObjectRef{APIVersion: "networking.istio.io/v1beta1", Kind: "VirtualService", Namespace: "n", Name: "x"}
	b := a
	b.APIVersion = "networking.istio.io/v1"
	if a.key() != b.key() {
		t.Errorf("keys differ: %q, %q", a.key(), b.key())
	}
	c := a
	c.APIVersion = "v1"
	c.Kind = "Service"
	if c.key() == a.key() || c.key() != "/Service/n/x" {
		t.Errorf("core-group key %q", c.key())
	}
}
