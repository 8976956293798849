#!/usr/bin/env bash
# Runs an allow-list of gocloak v13.9.0's own tests -- written against a real
# Keycloak -- against odaflow's Keycloak double, to check that the double
# answers the calls odaflow makes as Keycloak does (ids from Location
# headers, pagination, error statuses and bodies). gocloak's test binary is
# built from a throwaway side module, so nothing enters odaflow's go.mod.
#
#   hack/gocloak-contract.sh            # prints one line per test and the pass count
#
# Exit status is non-zero unless every allow-listed test passed (a skipped
# test is not a pass).
set -euo pipefail

GOCLOAK_VERSION=v13.9.0
ALLOW=(
  Test_LoginAdmin
  Test_LoginClient
  Test_LoginClient_UnknownRealm
  Test_CreateListGetUpdateDeleteClient
  Test_GetClientsWithPagination
  Test_CreateClientRole
  Test_GetClientRole
  Test_GetClientRoles
  Test_ClientSecret
  Test_ClientServiceAccount
  Test_AddClientRoleToUser_DeleteClientRoleFromUser
  Test_GetClientRolesByUserID
)

repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
double_pid=""
cleanup() {
  if [[ -n "$double_pid" ]]; then kill "$double_pid" 2>/dev/null || true; wait "$double_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

echo "building the Keycloak double"
(cd "$repo" && go build -o "$work/keycloak-double" ./internal/doubles/keycloak/cmd/keycloak-double)

echo "building gocloak $GOCLOAK_VERSION's test binary from a side module"
mkdir -p "$work/side"
cat >"$work/side/go.mod" <<MOD
module gocloakcontract

go $(cd "$repo" && go list -m -f '{{.GoVersion}}')

require github.com/Nerzal/gocloak/v13 $GOCLOAK_VERSION
MOD
(cd "$work/side" && GOFLAGS=-mod=mod go mod download github.com/Nerzal/gocloak/v13 \
  && GOFLAGS=-mod=mod go test -c -o "$work/gocloak.test" github.com/Nerzal/gocloak/v13)
gocloak_dir=$(cd "$work/side" && GOFLAGS=-mod=mod go list -m -f '{{.Dir}}' github.com/Nerzal/gocloak/v13)

# The admin password is made up per run and handed over in the environment.
KEYCLOAK_DOUBLE_ADMIN_PASSWORD=$(head -c 18 /dev/urandom | base64 | tr -d '/+=')
export KEYCLOAK_DOUBLE_ADMIN_PASSWORD
"$work/keycloak-double" -import "$gocloak_dir/testdata/gocloak-realm.json" >"$work/double.out" 2>"$work/double.err" &
double_pid=$!
for _ in $(seq 1 50); do
  [[ -s "$work/double.out" ]] && break
  sleep 0.1
done
url=$(head -n1 "$work/double.out")
if [[ -z "$url" ]]; then
  echo "the double did not start:" >&2; cat "$work/double.err" >&2; exit 1
fi
echo "double at $url (imitating Keycloak $(grep -o 'KeycloakVersion = "[^"]*"' "$repo/internal/doubles/keycloak/server.go" | cut -d'"' -f2))"

cat >"$work/config.json" <<JSON
{
  "hostname": "$url",
  "admin": {"username": "admin", "password": "$KEYCLOAK_DOUBLE_ADMIN_PASSWORD", "realm": "master"},
  "gocloak": {"username": "test", "password": "test", "realm": "gocloak", "client_id": "gocloak", "client_secret": "gocloak-secret"}
}
JSON

pattern="^($(IFS='|'; echo "${ALLOW[*]}"))\$"
set +e
(cd "$gocloak_dir" && GOCLOAK_TEST_CONFIG="$work/config.json" "$work/gocloak.test" -test.run "$pattern" -test.v -test.count=1 -test.timeout 120s) >"$work/test.out" 2>&1
status=$?
set -e

pass=0; fail=0
for t in "${ALLOW[@]}"; do
  if grep -q -- "^--- PASS: $t " "$work/test.out"; then
    echo "PASS $t"; pass=$((pass + 1))
  elif grep -q -- "^--- SKIP: $t " "$work/test.out"; then
    echo "SKIP $t (not a pass)"; fail=$((fail + 1))
  else
    echo "FAIL $t"; fail=$((fail + 1))
    awk -v t="$t" '$0 ~ "^=== RUN   "t"$"{p=1} p{print "    "$0} $0 ~ "^--- (FAIL|PASS): "t" "{p=0}' "$work/test.out" | grep -v 'Logf\|DEBUG' | head -30
  fi
done
echo "gocloak allow-list: $pass/${#ALLOW[@]} passed against the double"
if [[ $fail -ne 0 || $status -ne 0 ]]; then
  exit 1
fi
