package chart

import (
	"context"
	"encoding/json"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestAdoptExistingComponentCRD: a release that takes over a Component CRD
// created by someone else (docs/install.md, "CRDs that already exist") gets
// it patched by helm with the rendering, and helm's patch keeps every field
// the rendering does not name. The rendered conversion must therefore clear
// what it replaces, or the apiserver refuses the result: a clientConfig with
// both url and service, or a webhook under strategy None.
//
// The test builds what helm's patch produces (the live CRD with the existing
// conversion, the rendering merged over it as a JSON merge patch) and sends
// it to the real apiserver as a dry-run update, from the two conversions an
// existing Component CRD has in practice: the Canvas's (its webhook
// Service) and one naming its webhook by URL.
func TestAdoptExistingComponentCRD(t *testing.T) {
	k := kube(t)
	c := clientsFor(t, k.RESTConfig)
	crds := c.dyn.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	ctx := context.Background()

	existing := map[string]map[string]any{
		"canvas": {"strategy": "Webhook", "webhook": map[string]any{
			"conversionReviewVersions": []any{"v1", "v1beta4", "v1beta3", "v1beta2"},
			"clientConfig": map[string]any{
				"caBundle": testCABundle,
				"service":  map[string]any{"namespace": "canvas", "name": "compcrdwebhook", "path": "/", "port": int64(443)},
			},
		}},
		"url": {"strategy": "Webhook", "webhook": map[string]any{
			"conversionReviewVersions": []any{"v1"},
			"clientConfig":             map[string]any{"caBundle": testCABundle, "url": "https://conversion.example:8443/convert"},
		}},
	}
	renderings := map[string][]string{
		"webhook off":      {"webhook.enabled=false"},
		"webhook own TLS":  {"webhook.certManager.enabled=false", "webhook.tls.existingSecret=tls", "webhook.tls.caBundle=" + testCABundle},
		"webhook cert-mgr": nil,
	}
	for from, conversion := range existing {
		for name, sets := range renderings {
			t.Run(from+"/"+name, func(t *testing.T) {
				live, err := crds.Get(ctx, "components.oda.tmforum.org", metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if err := unstructured.SetNestedField(live.Object, conversion, "spec", "conversion"); err != nil {
					t.Fatal(err)
				}
				rendered := componentCRD(t, render(t, "odaflow", "canvas", "", sets...))
				liveJSON, err := json.Marshal(live.Object)
				if err != nil {
					t.Fatal(err)
				}
				patch, err := json.Marshal(rendered)
				if err != nil {
					t.Fatal(err)
				}
				merged, err := jsonpatch.MergePatch(liveJSON, patch)
				if err != nil {
					t.Fatal(err)
				}
				var obj unstructured.Unstructured
				if err := obj.UnmarshalJSON(merged); err != nil {
					t.Fatal(err)
				}
				got, err := crds.Update(ctx, &obj, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
				if err != nil {
					t.Fatalf("the apiserver refuses the adopted CRD: %v", err)
				}
				strategy, _, _ := unstructured.NestedString(got.Object, "spec", "conversion", "strategy")
				url, _, _ := unstructured.NestedString(got.Object, "spec", "conversion", "webhook", "clientConfig", "url")
				svc, _, _ := unstructured.NestedString(got.Object, "spec", "conversion", "webhook", "clientConfig", "service", "name")
				want := map[bool]string{true: "None", false: "Webhook"}[sets != nil && sets[0] == "webhook.enabled=false"]
				if strategy != want || url != "" || (want == "Webhook" && svc != "odaflow-webhook") {
					t.Errorf("adopted conversion: strategy %q url %q service %q, want %s through odaflow-webhook", strategy, url, svc, want)
				}
			})
		}
	}
}
