package chart

import (
	"encoding/json"
	"testing"

	odaflowchart "github.com/odaflow/odaflow/charts/odaflow"
	"github.com/odaflow/odaflow/internal/dashboard"
)

// TestTemplateGrafanaDashboard: off by default; on, a ConfigMap with the
// sidecar's label, in the namespace asked for, whose JSON is the chart's
// dashboard and whose every query names its metrics in a form the
// integration test can check (tests/integration/metrics_test.go).
func TestTemplateGrafanaDashboard(t *testing.T) {
	for _, cm := range findAll(render(t, "odaflow", "canvas", ""), "ConfigMap") {
		if get(cm, "metadata", "labels", "grafana_dashboard") != nil {
			t.Errorf("a default install renders the dashboard ConfigMap %s", cm.id())
		}
	}
	objs := render(t, "odaflow", "canvas", "", "metrics.grafanaDashboard.enabled=true",
		"metrics.grafanaDashboard.namespace=monitoring", "metrics.grafanaDashboard.annotations.grafana_folder=ODA")
	cm := find(t, objs, "ConfigMap", "odaflow-dashboard")
	if cm.namespace() != "monitoring" || get(cm, "metadata", "labels", "grafana_dashboard") != "1" ||
		get(cm, "metadata", "annotations", "grafana_folder") != "ODA" {
		t.Errorf("dashboard ConfigMap %s labels %v annotations %v", cm.id(), get(cm, "metadata", "labels"), get(cm, "metadata", "annotations"))
	}
	rendered, _ := get(cm, "data", "odaflow.json").(string)
	var board map[string]any
	if err := json.Unmarshal([]byte(rendered), &board); err != nil {
		t.Fatalf("the ConfigMap's odaflow.json is not JSON: %v", err)
	}
	file, err := odaflowchart.Dashboards.ReadFile("dashboards/odaflow.json")
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]any
	if err := json.Unmarshal(file, &want); err != nil {
		t.Fatalf("dashboards/odaflow.json: %v", err)
	}
	if board["uid"] != want["uid"] || len(list(board["panels"])) != len(list(want["panels"])) {
		t.Errorf("the rendered dashboard (uid %v, %d panels) is not dashboards/odaflow.json (uid %v, %d panels)",
			board["uid"], len(list(board["panels"])), want["uid"], len(list(want["panels"])))
	}
	queries, err := dashboard.Queries([]byte(rendered))
	if err != nil {
		t.Fatal(err)
	}
	if len(queries) < 20 {
		t.Errorf("%d queries, want the dashboard's panels", len(queries))
	}
	for _, q := range queries {
		if names, err := dashboard.MetricNames(q.Expr); err != nil || len(names) == 0 {
			t.Errorf("%s: %q selects %v (%v)", q.Where, q.Expr, names, err)
		}
	}
}
