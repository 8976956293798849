#!/usr/bin/env bash
# Fails when a function of odaflow is reachable from no shipped command:
# code that only tests call is dead. $1 is the deadcode binary
# (hack/tools.sh lint builds it). The shipped main packages are ./cmd/...
# (hack/ and tests/bench are developer tools, not shipped).
#
# Test-support packages are left out of the report; they exist for the tests
# and the dev stack, so most of what they hold is only called from tests:
#   internal/localstack   the local stack (make dev) and the tests' servers
#   internal/doubles/...  test doubles (e.g. the Keycloak stand-in)
#   listener/hubtest      a TMF630 hub for the listener's tests
set -euo pipefail
deadcode=${1:?usage: hack/deadcode.sh path/to/deadcode}
excluded='^(internal/localstack|internal/doubles/[^:]*|listener/hubtest)/[^/]*:'
out="$("$deadcode" ./cmd/...)"
left="$(grep -Ev "$excluded" <<<"$out" || true)"
if [[ -n "$left" ]]; then
  echo "deadcode: functions no shipped command reaches (delete them, or move them next to the tests that use them):" >&2
  echo "$left" >&2
  exit 1
fi
