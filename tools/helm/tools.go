//go:build tools

// Package tools pins the helm CLI the chart tests run (helm lint, helm
// template). Only this go.mod, go.sum and file are in the repository: helm is
// built from the Go module proxy into a cache outside the clone by
// `hack/tools.sh helm`, so odaflow's own go.mod never carries helm's
// dependency tree.
package tools

import _ "helm.sh/helm/v3/cmd/helm"
