package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/odaflow/odaflow/oda"
	"github.com/odaflow/odaflow/webhook"
	"github.com/odaflow/odaflow/webhook/conversion"
)

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// componentsAt is the Component resource at one API version ("v1beta3").
func componentsAt(version string) schema.GroupVersionResource {
	gvr := oda.KindComponent.GVR()
	gvr.Version = version
	return gvr
}

// exampleComponent loads the Canvas example Component at apiVersion from
// webhook/testdata, renamed (and its API paths with it, since paths are
// cluster-wide claims) and made valid for the CRD: publicationDate becomes
// an RFC 3339 date-time, and the v1beta3 example's plain-string
// specification the array its schema requires (webhook/testdata/README.md).
// The stale webhookconverted annotation of the examples is removed, so that
// the one read back can only come from the webhook.
func exampleComponent(t *testing.T, apiVersion, ns, name string) *unstructured.Unstructured {
	t.Helper()
	file := filepath.Join("..", "..", "webhook", "testdata", "component-productcatalog-"+apiVersion+".yaml")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	data = []byte(strings.ReplaceAll(string(data), "ctk-productcatalogmanagement", name))
	var obj map[string]any
	if err := yaml.Unmarshal(data, &obj); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	u := &unstructured.Unstructured{Object: obj}
	u.SetNamespace(ns)
	u.SetAnnotations(nil)
	const date = "2023-08-18T00:00:00Z"
	switch apiVersion {
	case "v1beta3":
		mustSet(t, u, date, "spec", "publicationDate")
		apis, _, _ := unstructured.NestedSlice(u.Object, "spec", "coreFunction", "exposedAPIs")
		for _, a := range apis {
			api := a.(map[string]any)
			if s, ok := api["specification"].(string); ok {
				api["specification"] = []any{s}
			}
		}
		mustSet(t, u, apis, "spec", "coreFunction", "exposedAPIs")
	case "v1beta4":
		mustSet(t, u, date, "spec", "componentMetadata", "publicationDate")
	default:
		t.Fatalf("no example preparation for %s", apiVersion)
	}
	return u
}

func mustSet(t *testing.T, u *unstructured.Unstructured, value any, fields ...string) {
	t.Helper()
	if err := unstructured.SetNestedField(u.Object, value, fields...); err != nil {
		t.Fatalf("set %v: %v", fields, err)
	}
}

// jsonCopy passes v through JSON, so that values compare equal whatever Go
// types produced them (int64 from the API server, float64 from a decoder).
func jsonCopy(t *testing.T, v any) any {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// startConversionWebhook serves the webhooks on a free loopback port with a
// self-signed certificate and points the Component CRD's conversion at it,
// until the end of the test.
func startConversionWebhook(t *testing.T) {
	t.Helper()
	certPEM, keyPEM, caPEM, err := webhook.SelfSigned(nil, []net.IP{net.ParseIP("127.0.0.1")})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := webhook.New(webhook.Config{
		Address: "127.0.0.1:0", CertPEM: certPEM, KeyPEM: keyPEM,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})).With("test", t.Name()),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("webhook server shutdown: %v", err)
		}
	})

	ctx := context.Background()
	crds := stack.dyn.Resource(crdGVR)
	crd, err := crds.Get(ctx, webhook.ComponentCRD, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if strategy, _, _ := unstructured.NestedString(crd.Object, "spec", "conversion", "strategy"); strategy != "None" {
		t.Fatalf("the Component CRD's conversion strategy is %q, want None as the chart installs it", strategy)
	}
	patch := func(body []byte) error {
		_, err := crds.Patch(ctx, webhook.ComponentCRD, types.MergePatchType, body, metav1.PatchOptions{FieldManager: "conversion-it"})
		return err
	}
	url := fmt.Sprintf("https://%s%s", srv.Addr(), webhook.PathConvert)
	if err := patch(webhook.ConversionURLPatch(url, caPEM)); err != nil {
		t.Fatalf("point the Component CRD's conversion at %s: %v", url, err)
	}
	t.Cleanup(func() {
		if err := patch(webhook.ConversionNonePatch()); err != nil {
			t.Errorf("restore the Component CRD's conversion strategy None: %v", err)
		}
	})
	t.Logf("Component conversion: webhook %s", url)
}

// waitConversionActive waits until the API server converts Components with
// the webhook: it serves the new CRD spec only once it has rebuilt the
// resource's storage. A dry-run create at v1beta3 goes through the storage
// codec (v1beta3 -> v1 -> v1beta3); with strategy None it comes back
// without the webhook's annotation.
func waitConversionActive(t *testing.T, probe *unstructured.Unstructured) {
	t.Helper()
	probe = probe.DeepCopy()
	probe.SetName("conversion-probe")
	// Some test-kit charts were exported from a Canvas and carry the
	// webhook's annotation already; only the webhook may add it here, or
	// the wait ends while the API server still stores without conversion.
	annotations := probe.GetAnnotations()
	delete(annotations, conversion.AnnotationConverted)
	probe.SetAnnotations(annotations)
	res := stack.dyn.Resource(componentsAt("v1beta3")).Namespace(probe.GetNamespace())
	eventually(t, 30*time.Second, "the API server converts Components with the webhook", func() (bool, string) {
		out, err := res.Create(context.Background(), probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return false, err.Error()
		}
		a := out.GetAnnotations()[conversion.AnnotationConverted]
		return a != "", fmt.Sprintf("annotation %q", a)
	})
}

// TestConversionWebhookOnRealServers: Components applied as v1beta3 and
// v1beta4 (the Canvas examples) are stored and served as v1 by the
// conversion webhook, and read back at their own version unchanged.
func TestConversionWebhookOnRealServers(t *testing.T) {
	ctx := context.Background()
	ns := "it-conversion"
	startConversionWebhook(t)
	createNamespace(t, ns)

	examples := []struct {
		version, name string
	}{
		{"v1beta3", "conv3-productcatalog"},
		{"v1beta4", "conv4-productcatalog"},
	}
	sent := map[string]*unstructured.Unstructured{}
	for _, ex := range examples {
		sent[ex.version] = exampleComponent(t, ex.version, ns, ex.name)
	}
	waitConversionActive(t, sent["v1beta3"])

	for _, ex := range examples {
		name := ex.name
		// Deleted at the end (registered before the apply, so that a failed
		// apply cleans up too), and waited for: their ExposedAPIs claim
		// gateway paths.
		t.Cleanup(func() { deleteComponent(t, ns, name) })
		res := stack.dyn.Resource(componentsAt(ex.version)).Namespace(ns)
		if _, err := res.Apply(ctx, name, sent[ex.version], metav1.ApplyOptions{FieldManager: "conversion-it", Force: true}); err != nil {
			t.Fatalf("server-side apply %s as %s: %v", name, ex.version, err)
		}
	}

	for _, ex := range examples {
		t.Run(ex.version+" read as v1", func(t *testing.T) {
			got, err := stack.dyn.Resource(componentsAt("v1")).Namespace(ns).Get(ctx, ex.name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			assertV1Shape(t, got, ex.name, "oda.tmforum.org/"+ex.version)

			// The API server stored what the conversion package computes.
			want, err := conversion.Convert(sent[ex.version].DeepCopy().Object, conversion.V1)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(jsonCopy(t, want["spec"]), jsonCopy(t, got.Object["spec"])); diff != "" {
				t.Errorf("stored v1 spec differs from conversion.Convert (-want +got):\n%s", diff)
			}
		})
	}

	// Round trip: v1beta3 -> v1 (stored) -> v1beta3 gives back what was applied.
	for _, ex := range examples {
		t.Run(ex.version+" round trip", func(t *testing.T) {
			got, err := stack.dyn.Resource(componentsAt(ex.version)).Namespace(ns).Get(ctx, ex.name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got.GetAPIVersion() != "oda.tmforum.org/"+ex.version {
				t.Errorf("apiVersion %q", got.GetAPIVersion())
			}
			if diff := cmp.Diff(jsonCopy(t, sent[ex.version].Object["spec"]), jsonCopy(t, got.Object["spec"])); diff != "" {
				t.Errorf("spec after %s -> v1 -> %s (-applied +read):\n%s", ex.version, ex.version, diff)
			}
			wantAnn := "Webhook converted From oda.tmforum.org/v1 to oda.tmforum.org/" + ex.version
			if a := got.GetAnnotations()[conversion.AnnotationConverted]; a != wantAnn {
				t.Errorf("annotation %s = %q, want %q", conversion.AnnotationConverted, a, wantAnn)
			}
		})
	}

	// Across versions: the v1beta4 example read as v1beta3 flattens
	// componentMetadata back into the spec.
	t.Run("v1beta4 read as v1beta3", func(t *testing.T) {
		got, err := stack.dyn.Resource(componentsAt("v1beta3")).Namespace(ns).Get(ctx, "conv4-productcatalog", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for field, want := range map[string]string{"id": "TMFC001", "name": "productcatalogmanagement", "version": "1.0.0", "publicationDate": "2023-08-18T00:00:00Z"} {
			if v, _, _ := unstructured.NestedString(got.Object, "spec", field); v != want {
				t.Errorf("spec.%s = %q, want %q", field, v, want)
			}
		}
		if _, found, _ := unstructured.NestedMap(got.Object, "spec", "componentMetadata"); found {
			t.Error("spec.componentMetadata is still there at v1beta3")
		}
		if role, _, _ := unstructured.NestedString(got.Object, "spec", "securityFunction", "controllerRole"); role != "Admin" {
			t.Errorf("spec.securityFunction.controllerRole = %q, want Admin", role)
		}
	})
}

// assertV1Shape checks the v1 layout of a converted productcatalog example.
func assertV1Shape(t *testing.T, got *unstructured.Unstructured, name, from string) {
	t.Helper()
	if got.GetAPIVersion() != conversion.V1 {
		t.Errorf("apiVersion %q, want %s", got.GetAPIVersion(), conversion.V1)
	}
	wantAnn := "Webhook converted From " + from + " to " + conversion.V1
	if a := got.GetAnnotations()[conversion.AnnotationConverted]; a != wantAnn {
		t.Errorf("annotation %s = %q, want %q", conversion.AnnotationConverted, a, wantAnn)
	}
	spec, _ := got.Object["spec"].(map[string]any)

	meta, _, _ := unstructured.NestedMap(spec, "componentMetadata")
	wantMeta := map[string]any{
		"id": "TMFC001", "name": "productcatalogmanagement", "functionalBlock": "CoreCommerce",
		"publicationDate": "2023-08-18T00:00:00Z", "status": "specified", "version": "1.0.0",
	}
	for k, want := range wantMeta {
		if meta[k] != want {
			t.Errorf("spec.componentMetadata.%s = %v, want %v", k, meta[k], want)
		}
	}
	for _, k := range []string{"maintainers", "owners", "description"} {
		if meta[k] == nil {
			t.Errorf("spec.componentMetadata.%s missing", k)
		}
	}
	for _, k := range []string{"id", "name", "version", "functionalBlock", "publicationDate", "status", "maintainers", "owners", "description"} {
		if _, ok := spec[k]; ok {
			t.Errorf("spec.%s left at the spec root", k)
		}
	}
	if role, _, _ := unstructured.NestedString(spec, "securityFunction", "canvasSystemRole"); role != "Admin" {
		t.Errorf("spec.securityFunction.canvasSystemRole = %q, want Admin", role)
	}

	// Every exposed API: a specification list whose first item holds the
	// fields that sat at the API root before v1.
	apis := map[string]map[string]any{}
	for _, function := range []string{"coreFunction", "managementFunction", "securityFunction"} {
		list, _, _ := unstructured.NestedSlice(spec, function, "exposedAPIs")
		for _, a := range list {
			api, _ := a.(map[string]any)
			apis[fmt.Sprint(api["name"])] = api
		}
	}
	wantAPIs := map[string]map[string]any{
		"productcatalogmanagement": {
			"url":            "https://raw.githubusercontent.com/tmforum-apis/TMF620_ProductCatalog/master/TMF620-ProductCatalog-v4.0.0.swagger.json",
			"implementation": "ctk-prodcatapi", "apiType": "openapi", "port": int64(8080),
			"path":        "/" + name + "/tmf-api/productCatalogManagement/v4",
			"developerUI": "/" + name + "/tmf-api/productCatalogManagement/v4/docs",
		},
		"promotionmanagement": {
			"url":            "https://raw.githubusercontent.com/tmforum-apis/TMF671_Promotion/master/TMF671-Promotion-v4.0.0.swagger.json",
			"implementation": "ctk-promgmtapi", "apiType": "openapi", "port": int64(8080),
			"path": "/" + name + "/tmf-api/promotionManagement/v4",
		},
		"partyrole": {
			"url":            "https://raw.githubusercontent.com/tmforum-apis/TMF669_PartyRole/master/TMF669-PartyRole-v4.0.0.swagger.json",
			"implementation": "ctk-partyroleapi", "apiType": "openapi", "port": int64(8080),
			"path": "/" + name + "/tmf-api/partyRoleManagement/v4",
		},
	}
	if len(apis) != len(wantAPIs)+1 {
		t.Errorf("exposed APIs %v, want %d", reflect.ValueOf(apis).MapKeys(), len(wantAPIs)+1)
	}
	// The metrics API has no specification to move its fields into: they
	// stay at the API root, which v1 allows.
	if metrics := apis["metrics"]; metrics == nil {
		t.Error("exposed API metrics missing")
	} else {
		want := map[string]any{"implementation": name + "-sm", "apiType": "prometheus", "port": int64(4000), "path": "/" + name + "/metrics"}
		for k, v := range want {
			if metrics[k] != v {
				t.Errorf("exposed API metrics: %s = %#v, want %#v", k, metrics[k], v)
			}
		}
		if _, ok := metrics["specification"]; ok {
			t.Errorf("exposed API metrics: specification %v appeared", metrics["specification"])
		}
	}
	for apiName, want := range wantAPIs {
		api := apis[apiName]
		if api == nil {
			t.Errorf("exposed API %s missing", apiName)
			continue
		}
		specs, _ := api["specification"].([]any)
		if len(specs) == 0 {
			t.Errorf("exposed API %s: no specification list: %v", apiName, api["specification"])
			continue
		}
		first, _ := specs[0].(map[string]any)
		for k, v := range want {
			if first[k] != v {
				t.Errorf("exposed API %s: specification[0].%s = %#v, want %#v", apiName, k, first[k], v)
			}
		}
		for _, k := range []string{"implementation", "apiType", "path", "port", "developerUI"} {
			if _, ok := api[k]; ok {
				t.Errorf("exposed API %s: %s left at the API root", apiName, k)
			}
		}
	}
	deps, _, _ := unstructured.NestedSlice(spec, "coreFunction", "dependentAPIs")
	if len(deps) != 1 {
		t.Fatalf("dependent APIs %v, want 1", deps)
	}
	dep, _ := deps[0].(map[string]any)
	specs, _ := dep["specification"].([]any)
	if len(specs) == 0 {
		t.Fatalf("dependent API: no specification list: %v", dep["specification"])
	}
	first, _ := specs[0].(map[string]any)
	if first["apiType"] != "openapi" || first["url"] != "https://raw.githubusercontent.com/tmforum-apis/TMF620_ProductCatalog/master/TMF620-ProductCatalog-v4.0.0.swagger.json" {
		t.Errorf("dependent API specification[0] = %v", first)
	}
	if _, ok := dep["apiType"]; ok {
		t.Error("dependent API: apiType left at the API root")
	}
}

// deleteComponent deletes a Component and waits until it and its
// ExposedAPIs are gone.
func deleteComponent(t *testing.T, ns, name string) {
	t.Helper()
	err := stack.dyn.Resource(oda.KindComponent.GVR()).Namespace(ns).Delete(context.Background(), name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("delete Component %s/%s: %v", ns, name, err)
		return
	}
	eventually(t, 60*time.Second, fmt.Sprintf("Component %s/%s and its ExposedAPIs deleted", ns, name), func() (bool, string) {
		_, err := get(oda.KindComponent, ns, name)
		if !apierrors.IsNotFound(err) {
			return false, fmt.Sprintf("Component: %v", err)
		}
		names := listChildren(t, oda.KindExposedAPI, ns, name)
		return len(names) == 0, fmt.Sprint("ExposedAPIs ", names)
	})
}
