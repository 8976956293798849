#!/usr/bin/env bash
# Screenshots of the Temporal Web UI reading like an ODA lifecycle: the
# sample Component's workflow (docs/webui-component.png) and the workflow
# list filtered by the DeploymentStatus search attribute
# (docs/webui-list.png). It runs `odaflow dev` on a fresh data directory
# (so the sample's workflow starts with today's search attributes), waits
# for the sample's workflow to publish its DeploymentStatus, takes the
# pictures with headless Chromium and stops the stack.
#
#   hack/screenshot.sh            # needs bin/tools (hack/tools.sh) and chromium
#   apt-get install -y chromium   # Debian's Chromium, if `which chromium` finds none
set -euo pipefail
cd "$(dirname "$0")/.."

chromium=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$chromium" ]; then
	echo "screenshot: no chromium; install it with: apt-get install -y chromium" >&2
	exit 1
fi
make -s build
temporal=bin/tools/temporal
data=$(mktemp -d "${TMPDIR:-/tmp}/odaflow-screenshot-XXXXXX")
bin/odaflow dev --data-dir "$data" >"$data/dev.log" 2>&1 &
dev=$!
stop() {
	# odaflow dev stops everything it started on SIGINT, as on Ctrl-C.
	kill -INT "$dev" 2>/dev/null || true
	wait "$dev" 2>/dev/null || true
}
trap stop EXIT

id="Component/components/ctk-productcatalogmanagement"
query='OdaKind = "Component" AND K8sNamespace = "components" AND DeploymentStatus IS NOT NULL'
echo "screenshot: waiting for $id to publish its DeploymentStatus (log: $data/dev.log)"
status=""
for _ in $(seq 1 120); do
	if ! kill -0 "$dev" 2>/dev/null; then
		echo "screenshot: odaflow dev exited:" >&2
		tail -20 "$data/dev.log" >&2
		exit 1
	fi
	status=$("$temporal" workflow list --address 127.0.0.1:7233 --namespace default --query "$query" --output json 2>/dev/null |
		grep -o '"DeploymentStatus":[^,}]*' | head -1 || true)
	[ -n "$status" ] && break
	sleep 1
done
if [ -z "$status" ]; then
	echo "screenshot: $id published no DeploymentStatus in 2 minutes" >&2
	exit 1
fi
# Let the lifecycle settle (children ready, identity, dependent APIs).
sleep 10

ui=http://127.0.0.1:8233/namespaces/default/workflows
quote() { python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$1"; }
# `chromium --screenshot` shoots at the load event, before the Web UI (a
# single-page app) has drawn anything: hack/screenshot drives Chromium
# through its DevTools protocol and waits for the page's own text.
go run ./hack/screenshot -chromium "$chromium" -height 1200 -out docs/webui-component.png \
	-wait-for ctk-productcatalogmanagement "$ui/$(quote "$id")"
go run ./hack/screenshot -chromium "$chromium" -out docs/webui-list.png \
	-wait-for ExposedAPIWorkflow "$ui?query=$(quote 'K8sNamespace = "components" AND DeploymentStatus IS NOT NULL')"
echo "screenshot: docs/webui-component.png docs/webui-list.png"
