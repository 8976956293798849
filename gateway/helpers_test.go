package gateway

import (
	"os"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

const (
	exampleName = "r1-productcatalogmanagement-productcatalogmanagement"
	exampleNS   = "components"
	exampleUID  = "0b5e4c2a-uid"
	// uc015Name is the ExposedAPI name UC015 (§4.6) derives its gateway
	// object names from.
	uc015Name = "ctk-productcatalogmanagement-productcatalogmanagement"
)

var exampleLabels = map[string]string{"oda.tmforum.org/componentName": "r1-productcatalogmanagement"}

// exampleAPI is testdata/exposedapi-example.yaml (every policy set) as it
// comes from the apiserver, in namespace components.
func exampleAPI(t testing.TB) API {
	t.Helper()
	raw, err := os.ReadFile("testdata/exposedapi-example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var obj struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
		Spec map[string]any `json:"spec"`
	}
	if err := yaml.Unmarshal(raw, &obj); err != nil {
		t.Fatal(err)
	}
	return API{Name: obj.Metadata.Name, Namespace: exampleNS, UID: exampleUID, Labels: exampleLabels, Spec: obj.Spec}
}

// specYAML parses an ExposedAPI spec written in YAML (tabs count as two
// spaces), through JSON as the apiserver delivers it: numbers are float64.
func specYAML(t testing.TB, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(strings.ReplaceAll(s, "\t", "  ")), &m); err != nil {
		t.Fatalf("bad test spec: %v\n%s", err, s)
	}
	return m
}

// parse is ParseSpec that fails the test on error.
func parse(t testing.TB, spec map[string]any) Spec {
	t.Helper()
	s, err := ParseSpec(spec)
	if err != nil {
		t.Fatalf("ParseSpec: %v", err)
	}
	return s
}

// apiNamed is an ExposedAPI called name in components with a plain openapi
// spec and no policies; edit mutates the spec before parsing.
func apiNamed(t testing.TB, name string, edit func(spec map[string]any)) (API, Spec) {
	t.Helper()
	spec := map[string]any{
		"name":           "productcatalogmanagement",
		"apiType":        "openapi",
		"implementation": "ctk-prodcatapi",
		"path":           "/ctk-productcatalogmanagement/tmf-api/productCatalogManagement/v4",
		"port":           int64(8080),
	}
	if edit != nil {
		edit(spec)
	}
	api := API{Name: name, Namespace: exampleNS, UID: exampleUID, Labels: exampleLabels, Spec: spec}
	return api, parse(t, spec)
}

// desired is Desired that fails the test on error and checks that every
// object is valid unstructured content.
func desired(t testing.TB, cfg Config, api API, spec Spec) []Object {
	t.Helper()
	objs, err := Desired(cfg, api, spec)
	if err != nil {
		t.Fatalf("Desired: %v", err)
	}
	checkUnstructured(t, objs)
	return objs
}

// checkUnstructured fails when an object holds a value unstructured cannot
// (DeepCopyJSON panics on int, []string, map[string]string...).
func checkUnstructured(t testing.TB, objs []Object) {
	t.Helper()
	for _, o := range objs {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("%s %s is not unstructured content: %v", o.Kind(), o.Name(), r)
				}
			}()
			runtime.DeepCopyJSON(o.Object)
		}()
	}
}

// owned is the metadata of an object owned by the ExposedAPI name.
func owned(name, objName string, annotations map[string]any) map[string]any {
	m := map[string]any{
		"name":      objName,
		"namespace": exampleNS,
		"labels":    labelsAny(),
		"ownerReferences": []any{map[string]any{
			"apiVersion":         "oda.tmforum.org/v1",
			"kind":               "ExposedAPI",
			"name":               name,
			"uid":                exampleUID,
			"controller":         true,
			"blockOwnerDeletion": true,
		}},
	}
	if annotations != nil {
		m["annotations"] = annotations
	}
	return m
}

// unowned is the metadata of an object of ExposedAPI name in another
// namespace.
func unowned(name, namespace, objName string) map[string]any {
	return map[string]any{
		"name":        objName,
		"namespace":   namespace,
		"labels":      labelsAny(),
		"annotations": map[string]any{AnnotationExposedAPI: exampleNS + "/" + name},
	}
}

func labelsAny() map[string]any {
	m := map[string]any{}
	for k, v := range exampleLabels {
		m[k] = v
	}
	return m
}

// ids lists the objects as "Kind namespace/name".
func ids(objs []Object) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.Kind()+" "+o.Namespace()+"/"+o.Name())
	}
	return out
}

// find returns the object of a kind and name, failing when absent.
func find(t testing.TB, objs []Object, kind, name string) Object {
	t.Helper()
	for _, o := range objs {
		if o.Kind() == kind && o.Name() == name {
			return o
		}
	}
	t.Fatalf("no %s %s in %v", kind, name, ids(objs))
	return Object{}
}

// exampleVirtualService is the VirtualService of the example under the
// default Istio Gateway and no public host name.
func exampleVirtualService() Object {
	return Object{Owned: true, Object: map[string]any{
		"apiVersion": "networking.istio.io/v1",
		"kind":       "VirtualService",
		"metadata":   owned(exampleName, exampleName, nil),
		"spec": map[string]any{
			"hosts":    []any{"*"},
			"gateways": []any{"component-gateway"},
			"http": []any{map[string]any{
				"match": []any{map[string]any{"uri": map[string]any{"prefix": "/r1-productcatalogmanagement/tmf-api/productCatalogManagement/v4"}}},
				"route": []any{map[string]any{"destination": map[string]any{
					"host": "r1-prodcatapi",
					"port": map[string]any{"number": int64(8080)},
				}}},
			}},
		},
	}}
}
