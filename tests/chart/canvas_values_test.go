package chart

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/odaflow/odaflow/internal/config"
	"github.com/odaflow/odaflow/secrets"
)

// writeValues writes a values file for one test: --set cannot carry the
// Canvas's comma-separated strings as they are.
func writeValues(t *testing.T, yaml string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(p, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestTemplateCanvasDefaults: with no values, odaflow binds where the
// Canvas's charts put the Istio Gateway, and its chart and flag defaults
// agree on it and on the sidecar image.
func TestTemplateCanvasDefaults(t *testing.T) {
	objs := render(t, "odaflow", "canvas", "",
		"vault.enabled=true", "vault.tokenSecret.name=vault-token", "webhook.sidecarInjection.enabled=true")
	env := envOf(container(t, find(t, objs, "Deployment", "odaflow-worker")))
	if config.DefaultIstioGateway != "canvas/component-gateway" {
		t.Errorf("config.DefaultIstioGateway = %q, want the Canvas's canvas/component-gateway", config.DefaultIstioGateway)
	}
	if got := env["ODAFLOW_ISTIO_GATEWAY"]; got != config.DefaultIstioGateway {
		t.Errorf("ODAFLOW_ISTIO_GATEWAY = %q, want the Canvas's canvas/component-gateway (and config.DefaultIstioGateway %q)", got, config.DefaultIstioGateway)
	}
	wenv := envOf(container(t, find(t, objs, "Deployment", "odaflow-webhook")))
	if got := wenv["ODAFLOW_SIDECAR_IMAGE"]; got != secrets.DefaultSidecarImage {
		t.Errorf("ODAFLOW_SIDECAR_IMAGE = %q, want the binary's default %q", got, secrets.DefaultSidecarImage)
	}
}

// TestTemplateMetricsMode: the chart's default is the Canvas umbrella's
// openMetricsImplementation, PrometheusAnnotation; the annotation modes, and
// only they, grant the worker what annotating a metrics API's pods takes.
func TestTemplateMetricsMode(t *testing.T) {
	for _, tc := range []struct {
		set, want string
		annotates bool
	}{
		{"", "PrometheusAnnotation", true},
		{"gateway.openMetricsImplementation=DataDogAnnotation", "DataDogAnnotation", true},
		{"gateway.openMetricsImplementation=ServiceMonitor", "ServiceMonitor", false},
		{"gateway.openMetricsImplementation=none", "none", false},
	} {
		var sets []string
		if tc.set != "" {
			sets = append(sets, tc.set)
		}
		objs := render(t, "odaflow", "canvas", "", sets...)
		if got := envOf(container(t, find(t, objs, "Deployment", "odaflow-worker")))["ODAFLOW_METRICS_MODE"]; got != tc.want {
			t.Errorf("%q: ODAFLOW_METRICS_MODE = %q, want %q", tc.set, got, tc.want)
		}
		var podVerbs, serviceVerbs []string
		for _, r := range list(get(find(t, objs, "ClusterRole", "odaflow-worker"), "rules")) {
			rule := mapOf(r)
			for _, res := range list(rule["resources"]) {
				for _, v := range list(rule["verbs"]) {
					switch res {
					case "pods":
						podVerbs = append(podVerbs, v.(string))
					case "services":
						serviceVerbs = append(serviceVerbs, v.(string))
					}
				}
			}
		}
		if slices.Contains(podVerbs, "patch") != tc.annotates || slices.Contains(serviceVerbs, "get") != tc.annotates {
			t.Errorf("%q: worker pods verbs %v, services verbs %v; want pods patch and services get: %t", tc.set, podVerbs, serviceVerbs, tc.annotates)
		}
	}
	if _, err := renderRaw(t, "odaflow", "canvas", "", "gateway.openMetricsImplementation=Prometheus"); err == nil {
		t.Error("gateway.openMetricsImplementation=Prometheus renders; want the schema to refuse it")
	}
}

// TestTemplateCanvasValues: the keys a Canvas values file gives its
// operators mean what they meant there.
func TestTemplateCanvasValues(t *testing.T) {
	// Each case's zero fields mean what a default install renders.
	const (
		defNamespaces = "components,odacompns-*"
		defImage      = "ghcr.io/odaflow/odaflow:v0.1.0"
		defPull       = "IfNotPresent"
		defSidecar    = "tmforumodacanvas/secretsmanagement-sidecar:0.1.0"
	)
	for _, tc := range []struct {
		name, values string
		// Worker env ODAFLOW_NAMESPACES, image and pull policy of every
		// Deployment, and the sidecar image.
		namespaces, image, pull, sidecar string
	}{
		{name: "monitoredNamespaces wins over watchNamespaces",
			values: "watchNamespaces: [other]\nmonitoredNamespaces: 'components,odacompns-*'\n"},
		{name: "monitoredNamespaces with spaces and empty items",
			values: "monitoredNamespaces: ' components , ,odacompns-* '\n"},
		{name: "watchNamespaces when monitoredNamespaces is empty",
			values: "watchNamespaces: [a, b]\nmonitoredNamespaces: ''\n", namespaces: "a,b"},
		// The Canvas writes `prereleaseSuffix:` with no value: null.
		{name: "empty prereleaseSuffix as the Canvas writes it", values: "prereleaseSuffix:\n"},
		{name: "prereleaseSuffix is appended to the tag and always pulled",
			values: "prereleaseSuffix: rc1\nimage: {tag: v0.2.0}\n", image: "ghcr.io/odaflow/odaflow:v0.2.0-rc1", pull: "Always"},
		{name: "a digest wins over prereleaseSuffix",
			values: "prereleaseSuffix: rc1\nimage: {digest: sha256:" + sha + "}\n", image: "ghcr.io/odaflow/odaflow@sha256:" + sha, pull: "Always"},
		// The Canvas writes the registry with a trailing slash.
		{name: "global.image.registry for every image, the sidecar's too", values: "global: {image: {registry: myreg.io/}}\n",
			image: "myreg.io/odaflow/odaflow:v0.1.0", sidecar: "myreg.io/tmforumodacanvas/secretsmanagement-sidecar:0.1.0"},
	} {
		def := func(s *string, v string) {
			if *s == "" {
				*s = v
			}
		}
		def(&tc.namespaces, defNamespaces)
		def(&tc.image, defImage)
		def(&tc.pull, defPull)
		def(&tc.sidecar, defSidecar)
		t.Run(tc.name, func(t *testing.T) {
			objs := render(t, "odaflow", "canvas", writeValues(t, tc.values),
				"vault.enabled=true", "vault.tokenSecret.name=vault-token", "webhook.sidecarInjection.enabled=true")
			wc := container(t, find(t, objs, "Deployment", "odaflow-worker"))
			if got := envOf(wc)["ODAFLOW_NAMESPACES"]; got != tc.namespaces {
				t.Errorf("ODAFLOW_NAMESPACES = %q, want %q", got, tc.namespaces)
			}
			for _, d := range findAll(objs, "Deployment") {
				c := container(t, d)
				if c["image"] != tc.image || c["imagePullPolicy"] != tc.pull {
					t.Errorf("%s image %v pull %v, want %s pull %s", d.id(), c["image"], c["imagePullPolicy"], tc.image, tc.pull)
				}
			}
			wenv := envOf(container(t, find(t, objs, "Deployment", "odaflow-webhook")))
			if got := wenv["ODAFLOW_SIDECAR_IMAGE"]; got != tc.sidecar {
				t.Errorf("ODAFLOW_SIDECAR_IMAGE = %q, want %q", got, tc.sidecar)
			}
		})
	}
}

const sha = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// TestTemplateCanvasNamespacesReachRBAC: the namespaces from
// monitoredNamespaces are the ones RBAC grants with rbac.scope=namespaced,
// and the glob check applies to them too.
func TestTemplateCanvasNamespacesReachRBAC(t *testing.T) {
	objs := render(t, "odaflow", "canvas", writeValues(t, "monitoredNamespaces: 'components,billing'\nrbac: {scope: namespaced}\n"))
	var got []string
	for _, r := range findAll(objs, "RoleBinding") {
		if r.name() == "odaflow-worker" {
			got = append(got, r.namespace())
		}
	}
	if len(got) != 2 || got[0] != "components" || got[1] != "billing" {
		t.Errorf("worker RoleBindings in %v, want [components billing]", got)
	}
	_, err := renderRaw(t, "odaflow", "canvas", writeValues(t, "watchNamespaces: [components]\nmonitoredNamespaces: 'components,odacompns-*'\nrbac: {scope: namespaced}\n"))
	if err == nil {
		t.Error("rbac.scope=namespaced with a glob in monitoredNamespaces renders; want the glob refused")
	}
}

// canvasUmbrellaValues is the canvas-oda umbrella's own values.yaml.
const canvasUmbrellaValues = "../../../shared/oda-canvas/canvas-oda-values.yaml"

// TestTemplateCanvasUmbrellaValues renders odaflow as a sub-chart of the
// canvas-oda umbrella gets it: the umbrella's global section, and under
// odaflow's own keys nothing but what a Canvas operator's values say, each
// copied as it is written there. What the worker is told must be what the
// Canvas's operators were told.
func TestTemplateCanvasUmbrellaValues(t *testing.T) {
	raw, err := os.ReadFile(canvasUmbrellaValues)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skipf("SKIPPED: the Canvas's values are not at %s: %v", canvasUmbrellaValues, err)
	}
	var canvas map[string]any
	if err := yaml.Unmarshal(raw, &canvas); err != nil {
		t.Fatal(err)
	}
	at := func(path ...string) any { return get(canvas, path...) }
	monitored := at("component-operator", "deployment", "monitoredNamespaces")
	gateway := at("api-operator-istio", "configmap", "componentGateway")
	metrics := at("api-operator-istio", "deployment", "openMetricsImplementation")
	info := at("canvas-info-service", "serverUrl")
	values := map[string]any{
		"global":              at("global"),
		"monitoredNamespaces": monitored,
		"prereleaseSuffix":    at("component-operator", "deployment", "compopPrereleaseSuffix"),
		"gateway": map[string]any{
			"istio":                     map[string]any{"gateway": gateway},
			"openMetricsImplementation": metrics,
		},
		// The umbrella's block as it is, keys odaflow ignores included.
		"canvas-info-service": at("canvas-info-service"),
	}
	out, err := yaml.Marshal(values)
	if err != nil {
		t.Fatal(err)
	}
	objs := render(t, "canvas", "canvas", writeValues(t, string(out)))
	env := envOf(container(t, find(t, objs, "Deployment", "canvas-odaflow-worker")))
	for _, c := range []struct{ canvasKey, env, want string }{
		{"component-operator.deployment.monitoredNamespaces", "ODAFLOW_NAMESPACES", monitored.(string)},
		{"api-operator-istio.configmap.componentGateway", "ODAFLOW_ISTIO_GATEWAY", gateway.(string)},
		{"api-operator-istio.deployment.openMetricsImplementation", "ODAFLOW_METRICS_MODE", metrics.(string)},
		// Enabled in the Canvas: records go where its components look.
		{"canvas-info-service.serverUrl", "ODAFLOW_SERVICE_INVENTORY_URL", info.(string)},
	} {
		if env[c.env] != c.want {
			t.Errorf("%s = %q in the Canvas; odaflow's %s = %q", c.canvasKey, c.want, c.env, env[c.env])
		}
	}
	// The Canvas's defaults are odaflow's: the same render without the
	// copied keys tells the worker the same.
	plain := envOf(container(t, find(t, render(t, "canvas", "canvas", ""), "Deployment", "canvas-odaflow-worker")))
	for _, k := range []string{"ODAFLOW_NAMESPACES", "ODAFLOW_ISTIO_GATEWAY", "ODAFLOW_METRICS_MODE"} {
		if plain[k] != env[k] {
			t.Errorf("%s: %q with the Canvas's values, %q by default", k, env[k], plain[k])
		}
	}
	for _, d := range findAll(objs, "Deployment") {
		if c := container(t, d); c["image"] != "ghcr.io/odaflow/odaflow:v0.1.0" || c["imagePullPolicy"] != "IfNotPresent" {
			t.Errorf("%s: image %v pull %v with the Canvas's empty registry and prerelease suffix", d.id(), c["image"], c["imagePullPolicy"])
		}
	}
}

// The Service Inventory address: an explicit serviceInventory.url wins;
// otherwise the Canvas's Info service when its values enable it; otherwise
// none, and nothing is recorded.
func TestTemplateServiceInventoryURL(t *testing.T) {
	for _, c := range []struct {
		name, values, want string
	}{
		{"default: off", "", ""},
		{"the Canvas's Info service enabled", "canvas-info-service:\n  enabled: true\n", "http://info.canvas.svc.cluster.local"},
		{"its serverUrl, trailing slash dropped", "canvas-info-service:\n  enabled: true\n  serverUrl: http://info.other.svc:8638/\n", "http://info.other.svc:8638"},
		{"disabled: its serverUrl is not used", "canvas-info-service:\n  enabled: false\n  serverUrl: http://info.other.svc\n", ""},
		{"enabled with no serverUrl", "canvas-info-service:\n  enabled: true\n  serverUrl: \"\"\n", ""},
		{"explicit url wins", "serviceInventory:\n  url: http://inv.example/tmf-api/serviceInventoryManagement/v4\ncanvas-info-service:\n  enabled: true\n", "http://inv.example/tmf-api/serviceInventoryManagement/v4"},
		{"explicit url alone", "serviceInventory:\n  url: http://inv.example\n", "http://inv.example"},
	} {
		t.Run(c.name, func(t *testing.T) {
			file := ""
			if c.values != "" {
				file = writeValues(t, c.values)
			}
			env := envOf(container(t, find(t, render(t, "odaflow", "canvas", file), "Deployment", "odaflow-worker")))
			got, set := env["ODAFLOW_SERVICE_INVENTORY_URL"]
			if got != c.want || set != (c.want != "") {
				t.Errorf("ODAFLOW_SERVICE_INVENTORY_URL = %q (set %v), want %q", got, set, c.want)
			}
		})
	}
}
