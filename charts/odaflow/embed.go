// Package odaflowchart embeds the chart's ODA CRDs, so `odaflow dev` and the
// tests install exactly what the chart installs. They live in files/crds, not
// in Helm's crds/ folder: templates/crds.yaml installs them (crds.install)
// and points the Component CRD's conversion at the release's webhook.
package odaflowchart

import (
	"embed"
	"os"
	"path/filepath"
)

// CRDs holds files/crds/*.yaml.
//
//go:embed files/crds/*.yaml
var CRDs embed.FS

// Dashboards holds dashboards/*.json, the Grafana dashboards the chart
// ships (metrics.grafanaDashboard), for the tests that check their queries.
//
//go:embed dashboards/*.json
var Dashboards embed.FS

// WriteCRDs writes the CRD files into dir (created if missing).
func WriteCRDs(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	entries, err := CRDs.ReadDir("files/crds")
	if err != nil {
		return err
	}
	for _, e := range entries {
		b, err := CRDs.ReadFile("files/crds/" + e.Name())
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o600); err != nil {
			return err
		}
	}
	return nil
}
