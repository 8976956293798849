package runtime

import "testing"

func TestResourceOfNamesTheResourceNotTheObject(t *testing.T) {
	for path, want := range map[string]string{
		"/api/v1/namespaces/ns1/events":                                    "events",
		"/api/v1/namespaces/ns1/services/svc":                              "services",
		"/api/v1/namespaces/ns1":                                           "namespaces",
		"/apis/oda.tmforum.org/v1/namespaces/ns1/exposedapis/api-1/status": "exposedapis/status",
		"/apis/oda.tmforum.org/v1/namespaces/ns1/components":               "components",
		"/apis/networking.istio.io/v1/namespaces/ns1/virtualservices/vs":   "virtualservices",
		"/apis/discovery.k8s.io/v1/endpointslices":                         "endpointslices",
		"/apis/apps/v1/namespaces/ns1/deployments/d/scale":                 "deployments/scale",
		"/healthz": "other",
	} {
		if got := resourceOf(path); got != want {
			t.Errorf("resourceOf(%q) = %q, want %q", path, got, want)
		}
	}
}
