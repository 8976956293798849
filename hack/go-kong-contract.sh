#!/usr/bin/env bash
# Runs an allow-list of go-kong's own tests (github.com/kong/go-kong v0.57.0,
# kong/*_test.go) against odaflow's Kong Admin API double, to keep the double
# honest: these tests were written against a real Kong.
#
# go-kong's test binary is built in a throwaway module under a temp dir (its
# tests need go-kong's own test dependencies and its mergo replace, which
# must not enter odaflow's go.mod). The double runs as a separate process
# (go build ./internal/doubles/kongadmin/cmd) and KONG_ADMIN_URL points the
# tests at it.
#
#   hack/go-kong-contract.sh            # the allow-list below
#   GOKONG_RUN='^TestServicesService$' hack/go-kong-contract.sh
#
# Exit status: non-zero when a test fails, or when any allow-listed test did
# not run or was skipped (a skip is not a pass).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
version=v0.57.0

# The tests of the go-kong methods odaflow's kong-admin gateway uses
# (services, routes, plugins by name/id/instance_name, paging, tags, errors)
# and of what the double must answer for go-kong to work at all (root,
# status, consumers for the plugin-scope test).
allow=(
	TestKongStatus TestRoot TestRootJSON TestInfoService TestIsNotFoundErrE2E TestTagExists
	TestServicesService TestServiceWithTags TestServiceListEndpoint
	TestRoutesRoute TestRouteWithTags TestCreateInRoute TestRouteListEndpoint TestRouteWithHeaders
	TestPluginsServiceValidation TestPluginsService TestPluginsWithInstanceNameService TestPluginWithTags
	TestUnknownPlugin TestPluginListEndpoint TestPluginListAllForEntityEndpoint
	TestConsumersService TestConsumerWithTags TestConsumerListEndpoint TestConsumerListWithTags
)
run=${GOKONG_RUN:-^($(IFS='|'; echo "${allow[*]}"))\$}

work=$(mktemp -d "${TMPDIR:-/tmp}/gokongtest.XXXXXX")
double_pid=
cleanup() {
	if [[ -n $double_pid ]]; then kill "$double_pid" 2>/dev/null || true; wait "$double_pid" 2>/dev/null || true; fi
	rm -rf "$work"
}
trap cleanup EXIT

echo "== building go-kong $version test binary in $work/mod"
mkdir -p "$work/mod"
(
	cd "$work/mod"
	go mod init gokongtest >/dev/null 2>&1
	go mod edit -require=github.com/kong/go-kong@$version \
		-replace=github.com/imdario/mergo@v0.3.12=github.com/Kong/mergo@v0.3.13
	# go-kong's go.sum covers its own test dependencies.
	cat "$(go env GOMODCACHE)/github.com/kong/go-kong@$version/go.sum" >go.sum
	GOFLAGS=-mod=mod go mod download github.com/kong/go-kong
	GOFLAGS=-mod=mod go test -c -o "$work/gokong.test" github.com/kong/go-kong/kong
)

echo "== starting the Kong Admin API double"
(cd "$root" && go build -o "$work/kongadmin-double" ./internal/doubles/kongadmin/cmd)
"$work/kongadmin-double" -url-file "$work/url" >"$work/double.log" 2>&1 &
double_pid=$!
for _ in $(seq 1 100); do
	[[ -s $work/url ]] && break
	kill -0 "$double_pid" 2>/dev/null || { cat "$work/double.log"; exit 1; }
	sleep 0.1
done
url=$(cat "$work/url")
echo "KONG_ADMIN_URL=$url"

echo "== go-kong tests: $run"
set +e
(cd "$work/mod" && KONG_ADMIN_URL=$url "$work/gokong.test" -test.run "$run" -test.v -test.count=1) >"$work/test.log" 2>&1
status=$?
set -e
cat "$work/test.log"

pass=$(grep -c -- '^--- PASS' "$work/test.log" || true)
fail=$(grep -c -- '^--- FAIL' "$work/test.log" || true)
skip=$(grep -c -- '^--- SKIP' "$work/test.log" || true)
echo "== go-kong contract: $pass passed, $fail failed, $skip skipped (of ${#allow[@]} allow-listed)"
if [[ $status -ne 0 || $fail -ne 0 ]]; then exit 1; fi
if [[ -z ${GOKONG_RUN:-} && ( $skip -ne 0 || $pass -ne ${#allow[@]} ) ]]; then
	echo "every allow-listed test must run and pass" >&2
	exit 1
fi
