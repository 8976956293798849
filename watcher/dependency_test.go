package watcher

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/odaflow/odaflow/dependency"
	"github.com/odaflow/odaflow/gateway"
	"github.com/odaflow/odaflow/oda"
)

// TestWatcherDependencyProvidersAreTrustedAndComputed: the providers a
// DependentAPI's workflow is told of are the ExposedAPIs it may trust
// (its namespace, the one its selector names, shared ones), each with the
// url and readiness odaflow computes, whatever their status says.
func TestWatcherDependencyProvidersAreTrustedAndComputed(t *testing.T) {
	const spec620 = "https://example.com/TMF620.json"
	const forged = "http://169.254.169.254/latest/meta-data/"
	api := func(ns, name, path string, mods ...func(*unstructured.Unstructured)) *unstructured.Unstructured {
		u := exposedAPI(ns, name, "impl", path)
		spec := u.Object["spec"].(map[string]any)
		spec["port"] = int64(8080)
		spec["specification"] = []any{map[string]any{"url": spec620}}
		// Every status claims ready at a forged url.
		u.Object["status"] = map[string]any{"implementation": map[string]any{"ready": true}, "apiStatus": map[string]any{"url": forged}}
		for _, m := range mods {
			m(u)
		}
		return u
	}
	dep := func(ns, name, selectorNS string) *unstructured.Unstructured {
		spec := map[string]any{"name": name, "apiType": "openapi", "specification": map[string]any{"url": spec620}}
		if selectorNS != "" {
			spec["selector"] = map[string]any{"namespace": selectorNS}
		}
		return object(oda.KindDependentAPI, ns, name, spec)
	}
	ingress := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "istio-ingress", Name: "istio-ingress", Labels: map[string]string{"istio": "ingressgateway"}},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Name: "http2", Port: 80}}},
		Status:     corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: "34.0.0.1"}}}},
	}
	var core []runtime.Object
	core = append(core, ingress)
	for _, ns := range []string{"team-a", "team-b", "team-c", "shared-1"} {
		core = append(core, endpointSlice(ns, "impl", ptr.To(true)))
	}
	h := startHarness(t, harnessOptions{
		gateway: gateway.Config{Gateway: gateway.GatewayIstio}.WithDefaults(),
		trust:   dependency.Trust{SharedNamespaces: []string{"shared-*"}},
		core:    core,
		objects: []*unstructured.Unstructured{
			api("team-a", "own", "/a"),
			api("team-b", "aaa", "/b"),
			api("team-c", "evil", "/c", func(u *unstructured.Unstructured) {
				u.Object["spec"].(map[string]any)["hostname"] = "evil.attacker.example"
			}),
			api("shared-1", "s", "/s"),
			dep("team-a", "plain", ""),
			dep("team-a", "names-b", "team-b"),
			dep("team-a", "names-c", "team-c"),
		},
	})
	providersOf := func(id string) []dependency.Provider {
		var out []dependency.Provider
		h.sig.await(t, id+" signalled", func(calls []call) bool {
			for _, c := range calls {
				if c.WorkflowID == id {
					out = eventOf(t, c).Dependency.Providers
					return true
				}
			}
			return false
		})
		return out
	}
	provider := func(ns, name, url string, ready bool) dependency.Provider {
		return dependency.Provider{Namespace: ns, Name: name, APIType: "openapi", SpecURLs: []string{spec620}, URL: url, Ready: ready}
	}
	for _, tc := range []struct {
		id   string
		want []dependency.Provider
	}{
		{"DependentAPI/team-a/plain", []dependency.Provider{
			provider("shared-1", "s", "https://34.0.0.1/s", true),
			provider("team-a", "own", "https://34.0.0.1/a", true),
		}},
		{"DependentAPI/team-a/names-b", []dependency.Provider{
			provider("shared-1", "s", "https://34.0.0.1/s", true),
			provider("team-a", "own", "https://34.0.0.1/a", true),
			provider("team-b", "aaa", "https://34.0.0.1/b", true),
		}},
		{"DependentAPI/team-a/names-c", []dependency.Provider{
			provider("shared-1", "s", "https://34.0.0.1/s", true),
			provider("team-a", "own", "https://34.0.0.1/a", true),
			provider("team-c", "evil", "", false),
		}},
	} {
		if diff := cmp.Diff(tc.want, providersOf(tc.id)); diff != "" {
			t.Errorf("%s providers (-want +got):\n%s", tc.id, diff)
		}
	}
	// The refused host name reaches the ExposedAPI's own workflow too.
	h.sig.await(t, "ExposedAPI/team-c/evil refused", func(calls []call) bool {
		for _, c := range calls {
			if c.WorkflowID == "ExposedAPI/team-c/evil" {
				return eventOf(t, c).Exposure.HostnameRefused
			}
		}
		return false
	})
}
