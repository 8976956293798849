#!/usr/bin/env bash
# Renders the ODA Canvas CRD Helm templates into charts/odaflow/files/crds (plain YAML:
# Helm never templates files in crds/). See hack/rendercrds/main.go for the exact
# transformation: the templates are kept byte for byte except that the
# cert-manager inject-ca-from annotation is dropped and spec.conversion becomes
# {strategy: None} on Component and IdentityConfig. Every output is checked to be
# semantically equal to its template with those two changes, and a valid CRD.
#
#   hack/render-crds.sh              render from $ODA_CRDS_DIR
#   hack/render-crds.sh --check      fail if charts/odaflow/files/crds is out of date
#
# ODA_CRDS_DIR: the folder holding oda-canvas charts/oda-crds/templates/*.yaml
# saved as *.yaml.tmpl (default /work/shared/oda-canvas/crds). With a checkout of
# tmforum-oda/oda-canvas, copy charts/oda-crds/templates/<f>.yaml to <f>.yaml.tmpl.
# ODA_CRDS_REF: recorded in each file's header (default: the upstream path).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
src="${ODA_CRDS_DIR:-/work/shared/oda-canvas/crds}"
ref="${ODA_CRDS_REF:-tmforum-oda/oda-canvas charts/oda-crds/templates}"
args=()
if [[ "${1:-}" == "--check" ]]; then
  args+=(-check)
fi
cd "$root"
exec go run ./hack/rendercrds -src "$src" -out charts/odaflow/files/crds -source-ref "$ref" "${args[@]}"
