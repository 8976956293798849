// Package chart checks the odaflow Helm chart's static files.
//
// The CRDs in charts/odaflow/files/crds are rendered from the oda-canvas CRD Helm
// templates by hack/render-crds.sh, which also checks that each rendering is
// the template with only the annotation and conversion changes. The templates
// are not in the clone, so this test checks invariants copied from them
// (oda-canvas charts/oda-crds/templates; the ODA behaviour contract §1).
package chart

import (
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

const crdDir = "../../charts/odaflow/files/crds"

type column struct{ Name, Type, JSONPath, Description string }

type crdWant struct {
	kind       string
	shortNames []string
	served     []string          // in template order
	deprecated map[string]string // version -> deprecationWarning
	subStatus  bool              // status subresource on every version
	columns    map[string][]column
}

func sameColumns(versions []string, cols []column) map[string][]column {
	m := map[string][]column{}
	for _, v := range versions {
		m[v] = cols
	}
	return m
}

var (
	allFour  = []string{"v1beta2", "v1beta3", "v1beta4", "v1"}
	fromBeta = []string{"v1beta3", "v1beta4", "v1"}

	dependentCols = []column{
		{"ready", "string", ".status.implementation.ready", "Dependent API configuration is ready - e.g. gateway configuration"},
		{"Age", "date", ".metadata.creationTimestamp", "The age of this resource"},
		{"svcInvID", "string", ".status.depapiStatus.svcInvID", "ID published in the Canvas Info Service"},
		{"url", "string", ".status.depapiStatus.url", "Dependent API endpoint Url"},
	}
	exposedCols = []column{
		{"API_endpoint", "string", ".status.apiStatus.url", "API endpoint Url"},
		{"Implementation_ready", "string", ".status.implementation.ready", "API implementation is ready - has passed startup probe checks"},
	}
	smanCols = []column{
		{"NAME_SEL", "string", ".spec.podSelector.name", "SecretsManagement pod name selector"},
		{"NAMESPACE_SEL", "string", ".spec.podSelector.namespace", "SecretsManagement pod namespace selector"},
		{"SVCACCT_SEL", "string", ".spec.podSelector.serviceaccount", "SecretsManagement pod serviceaccount selector"},
		{"READY", "string", ".status.implementation.ready", "Canvas Vault configuration is ready"},
	}
	identityCols = []column{
		{"identity_provider", "string", ".status.identityConfig.identityProvider", "Identity provider"},
		{"listener-registered", "boolean", ".status.identityConfig.listenerRegistered", "If component uses dynamic roles via exposing API, canvas creates listner to listen for changes."},
	}
)

func notificationCols(first, firstPath, firstDesc, statusDesc string) map[string][]column {
	tail := []column{
		{"Port", "string", ".spec.port", "Port"},
		{"APIType", "string", ".spec.apiType", "APIType"},
		{"UID", "string", ".status.uid", "UID"},
		{"Status", "string", ".status.status", statusDesc},
	}
	cur := append([]column{{first, "string", firstPath, firstDesc}}, tail...)
	m := sameColumns(fromBeta, cur)
	m["v1beta2"] = []column{
		{"HREF", "string", ".spec.href", "HREF"},
		{"UID", "string", ".status.uid", "UID"},
		{"Status", "string", ".status.status", statusDesc},
	}
	return m
}

func deprecatedV1beta2(kind string) map[string]string {
	return map[string]string{"v1beta2": "oda.tmforum.org/v1beta2 " + kind + " is deprecated. Please upgrade to oda.tmforum.org/v1 or newer"}
}

// want is keyed by plural name.
var want = map[string]crdWant{
	"components": {
		kind: "Component", served: allFour, deprecated: deprecatedV1beta2("Component"),
		// The Canvas's column, then odaflow's Ready and Age (hack/rendercrds).
		columns: sameColumns(allFour, []column{
			{"deployment_status", "string", ".status.summary/status.deployment_status", "Deployment status [in progress, complete, failed]"},
			{"Ready", "string", `.status.conditions[?(@.type=="Ready")].status`, "Status of the Ready condition"},
			{"Age", "date", ".metadata.creationTimestamp", "The age of this resource"},
		}),
	},
	"exposedapis": {
		kind: "ExposedAPI", served: fromBeta, columns: sameColumns(fromBeta, exposedCols),
	},
	"dependentapis": {
		kind: "DependentAPI", shortNames: []string{"depapi", "depapis"}, served: fromBeta,
		columns: sameColumns(fromBeta, dependentCols),
	},
	"identityconfigs": {
		kind: "IdentityConfig", served: []string{"v1beta4", "v1"},
		columns: sameColumns([]string{"v1beta4", "v1"}, identityCols),
	},
	"secretsmanagements": {
		kind: "SecretsManagement", shortNames: []string{"sman", "smans"}, served: fromBeta,
		columns: sameColumns(fromBeta, smanCols),
	},
	"publishednotifications": {
		kind: "PublishedNotification", served: allFour, deprecated: deprecatedV1beta2("PublishedNotification"), subStatus: true,
		columns: notificationCols("Hub", ".spec.hub", "Hub", "Publisher status"),
	},
	"subscribednotifications": {
		kind: "SubscribedNotification", served: allFour, deprecated: deprecatedV1beta2("SubscribedNotification"), subStatus: true,
		columns: notificationCols("Callback", ".spec.callback", "Hub", "Subscriber status"),
	},
}

func TestCRDs(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(crdDir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(raw), "{{") {
			t.Errorf("%s: contains a Helm expression; templates/crds.yaml reads these files as plain YAML", f)
		}
		var crd map[string]any
		if err := yaml.Unmarshal(raw, &crd); err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		plural := str(crd, "spec", "names", "plural")
		if seen[plural] {
			t.Errorf("%s: second CRD for %q", f, plural)
		}
		seen[plural] = true
		t.Run(plural, func(t *testing.T) { checkCRD(t, crd, plural) })
	}
	for plural := range want {
		if !seen[plural] {
			t.Errorf("no CRD for %s in %s", plural, crdDir)
		}
	}
}

func checkCRD(t *testing.T, crd map[string]any, plural string) {
	w, ok := want[plural]
	if !ok {
		t.Fatalf("unexpected CRD %q", plural)
	}
	if crd["apiVersion"] != "apiextensions.k8s.io/v1" || crd["kind"] != "CustomResourceDefinition" {
		t.Errorf("apiVersion/kind = %v/%v", crd["apiVersion"], crd["kind"])
	}
	if got := str(crd, "metadata", "name"); got != plural+".oda.tmforum.org" {
		t.Errorf("metadata.name = %q", got)
	}
	if ann, _ := get(crd, "metadata", "annotations").(map[string]any); ann["cert-manager.io/inject-ca-from"] != nil {
		t.Errorf("cert-manager inject-ca-from annotation present")
	}
	if got := str(crd, "spec", "group"); got != "oda.tmforum.org" {
		t.Errorf("group = %q", got)
	}
	if got := str(crd, "spec", "scope"); got != "Namespaced" {
		t.Errorf("scope = %q", got)
	}
	if got := str(crd, "spec", "names", "kind"); got != w.kind {
		t.Errorf("kind = %q, want %q", got, w.kind)
	}
	if got := str(crd, "spec", "names", "singular"); got != strings.ToLower(w.kind) {
		t.Errorf("singular = %q", got)
	}
	var shortNames []string
	for _, s := range list(get(crd, "spec", "names", "shortNames")) {
		shortNames = append(shortNames, s.(string))
	}
	sort.Strings(shortNames)
	if !reflect.DeepEqual(shortNames, w.shortNames) {
		t.Errorf("shortNames = %v, want %v", shortNames, w.shortNames)
	}
	if conv := get(crd, "spec", "conversion"); conv != nil {
		if s := str(crd, "spec", "conversion", "strategy"); s != "None" {
			t.Errorf("conversion strategy = %q, want None (templates/crds.yaml sets the webhook)", s)
		}
	}

	var served []string
	storage := 0
	for _, v := range list(get(crd, "spec", "versions")) {
		vm := v.(map[string]any)
		name := vm["name"].(string)
		if vm["served"] == true {
			served = append(served, name)
		}
		if vm["storage"] == true {
			storage++
			if name != "v1" {
				t.Errorf("storage version %s, want v1", name)
			}
		}
		if get(vm, "schema", "openAPIV3Schema") == nil {
			t.Errorf("%s: no openAPIV3Schema", name)
		}
		warning, dep := w.deprecated[name]
		if (vm["deprecated"] == true) != dep {
			t.Errorf("%s: deprecated = %v, want %v", name, vm["deprecated"], dep)
		}
		if got, _ := vm["deprecationWarning"].(string); got != warning {
			t.Errorf("%s: deprecationWarning = %q, want %q", name, got, warning)
		}
		sub := get(vm, "subresources", "status")
		if (sub != nil) != w.subStatus {
			t.Errorf("%s: status subresource = %v, want %v", name, sub != nil, w.subStatus)
		}
		if s := get(vm, "subresources", "scale"); s != nil {
			t.Errorf("%s: unexpected scale subresource", name)
		}
		var cols []column
		for _, c := range list(vm["additionalPrinterColumns"]) {
			cm := c.(map[string]any)
			cols = append(cols, column{str(cm, "name"), str(cm, "type"), str(cm, "jsonPath"), str(cm, "description")})
			for k := range cm {
				switch k {
				case "name", "type", "jsonPath", "description":
				default:
					t.Errorf("%s: printer column %v has unexpected key %q", name, cm["name"], k)
				}
			}
		}
		if !reflect.DeepEqual(cols, w.columns[name]) {
			t.Errorf("%s: printer columns\n got %v\nwant %v", name, cols, w.columns[name])
		}
	}
	if !reflect.DeepEqual(served, w.served) {
		t.Errorf("served versions = %v, want %v", served, w.served)
	}
	if storage != 1 {
		t.Errorf("%d storage versions, want 1", storage)
	}
}

func get(m any, path ...string) any {
	for _, p := range path {
		if o, ok := m.(object); ok { // a rendered manifest (helm_test.go)
			m = map[string]any(o)
		}
		mm, ok := m.(map[string]any)
		if !ok {
			return nil
		}
		m = mm[p]
	}
	return m
}

func str(m any, path ...string) string {
	s, _ := get(m, path...).(string)
	return s
}

func list(v any) []any {
	l, _ := v.([]any)
	return l
}
