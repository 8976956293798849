// Package odaflowchart embeds the chart's ODA CRDs, so `odaflow dev` and the
// tests install exactly what the chart installs.
package odaflowchart

import (
	"embed"
	"os"
	"path/filepath"
)

// CRDs holds crds/*.yaml.
//
//go:embed crds/*.yaml
var CRDs embed.FS

// WriteCRDs writes the CRD files into dir (created if missing).
func WriteCRDs(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	entries, err := CRDs.ReadDir("crds")
	if err != nil {
		return err
	}
	for _, e := range entries {
		b, err := CRDs.ReadFile("crds/" + e.Name())
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o600); err != nil {
			return err
		}
	}
	return nil
}
