package gateway

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

// crd is the part of a CustomResourceDefinition the tests check.
type crd struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Group string `json:"group"`
		Scope string `json:"scope"`
		Names struct {
			Kind   string `json:"kind"`
			Plural string `json:"plural"`
		} `json:"names"`
		Versions []struct {
			Name    string `json:"name"`
			Served  bool   `json:"served"`
			Storage bool   `json:"storage"`
			Schema  struct {
				OpenAPIV3Schema map[string]any `json:"openAPIV3Schema"`
			} `json:"schema"`
		} `json:"versions"`
	} `json:"spec"`
}

// servedKinds reads testdata/crds into "apiVersion Kind" → CRD file.
func servedKinds(t *testing.T) map[string]string {
	t.Helper()
	files, err := filepath.Glob("testdata/crds/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs: %v", err)
	}
	served := map[string]string{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var c crd
		if err := yaml.Unmarshal(raw, &c); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if c.Kind != "CustomResourceDefinition" || c.Metadata.Name != c.Spec.Names.Plural+"."+c.Spec.Group || c.Spec.Scope != "Namespaced" {
			t.Errorf("%s: not a namespaced CRD named <plural>.<group>: %+v", f, c)
		}
		storage := 0
		for _, v := range c.Spec.Versions {
			if v.Storage {
				storage++
			}
			if diff := cmp.Diff(map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}, v.Schema.OpenAPIV3Schema); diff != "" {
				t.Errorf("%s %s schema (-want +got):\n%s", f, v.Name, diff)
			}
			if v.Served {
				served[c.Spec.Group+"/"+v.Name+" "+c.Spec.Names.Kind] = filepath.Base(f)
			}
		}
		if storage != 1 {
			t.Errorf("%s: %d storage versions", f, storage)
		}
	}
	return served
}

// TestObjectsMatchCRDs: every object any gateway builds is of a kind and
// version the test CRDs serve, so integration tests can apply them.
func TestObjectsMatchCRDs(t *testing.T) {
	served := servedKinds(t)
	for _, want := range []string{
		"configuration.konghq.com/v1 KongPlugin",
		"apisix.apache.org/v2 ApisixRoute",
		"apisix.apache.org/v2 ApisixPluginConfig",
		"monitoring.coreos.com/v1 ServiceMonitor",
	} {
		if served[want] == "" {
			t.Errorf("no test CRD serves %s", want)
		}
	}
	api := exampleAPI(t)
	spec := parse(t, api.Spec)
	spec.APIType = "prometheus"
	used := map[string]bool{}
	for _, g := range []string{GatewayIstio, GatewayKong, GatewayKongAdmin, GatewayApisix} {
		for _, o := range desired(t, Config{Gateway: g}, api, spec) {
			key := o.APIVersion() + " " + o.Kind()
			used[key] = true
			if served[key] == "" {
				t.Errorf("%s: %s %s: no test CRD serves %s", g, o.Kind(), o.Name(), key)
			}
		}
		for _, r := range Managed(Config{Gateway: g}, api) {
			if key := r.APIVersion + " " + r.Kind; served[key] == "" {
				t.Errorf("%s: Managed %s: no test CRD serves %s", g, r.Name, key)
			}
		}
	}
	if len(used) != 7 {
		t.Errorf("objects of %d kinds, want 7: %v", len(used), used)
	}
}
