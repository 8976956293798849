// Package odaflowchart embeds the chart's ODA CRDs, so `odaflow dev` and the
// tests install exactly what the chart installs.
package odaflowchart

import "embed"

// CRDs holds crds/*.yaml.
//
//go:embed crds/*.yaml
var CRDs embed.FS
