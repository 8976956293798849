// Package odaflow names the release this tree builds. The version lives in
// the VERSION file beside this one, so that every way of building the
// binary (go build, go install, make build, make image, the Dockerfile)
// prints the same version, and a test holds the chart's appVersion and the
// CHANGELOG to it.
package odaflow

import (
	_ "embed"
	"strings"
)

//go:embed VERSION
var versionFile string

// Version is the release this tree builds, e.g. "v0.1.0".
func Version() string { return strings.TrimSpace(versionFile) }
