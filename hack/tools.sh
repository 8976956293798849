#!/usr/bin/env bash
# Builds the real servers the tests and `make dev` run: etcd, kube-apiserver,
# kube-controller-manager (tools/envtest, its own go.mod) and the Temporal CLI
# (dev server + Web UI). Binaries are cached outside the clone, keyed by versions
# and the tools go.sum, so a fresh clone on the same machine reuses them; bin/tools
# (git-ignored) links to the cache. Prints the cache folder on stdout.
#
#   hack/tools.sh            build what is missing, download the modules that
#                            carry the Istio and Gateway API CRDs (the local
#                            stack installs them), print the folder: all that
#                            `make dev` needs
#   hack/tools.sh --path     print the folder only (no build)
#   hack/tools.sh --path vault|temporal-server
#                            print that tool's cache folder only (no build)
#   hack/tools.sh vault      build the Vault dev server (tools/vault, its own
#                            go.mod) into its own cache folder, link bin/vault
#                            and print the folder
#   hack/tools.sh temporal-server
#                            build the Temporal server and temporal-sql-tool
#                            (tools/temporal-server, its own go.mod) with the
#                            server's PostgreSQL schemas into their own cache
#                            folder, link bin/temporal-server, print the folder
#   hack/tools.sh postgres   install Debian's postgresql when no
#                            /usr/lib/postgresql/*/bin/postgres exists (the
#                            production-shape tests run it); print its bin dir
#   hack/tools.sh lint       build golangci-lint, Temporal's workflowcheck and
#                            deadcode (go install of pinned versions) into
#                            their own cache folders and print the lint folder
#                            (make lint runs them)
#   hack/tools.sh keycloak [VERSION]
#                            fetch Keycloak's server distribution
#                            (org.keycloak:keycloak-quarkus-dist) from Maven
#                            Central with mvn, check its SHA-256, unpack it
#                            into its own cache folder with the JDK it runs
#                            on (file java-home), link bin/keycloak (default
#                            version only) and print the folder. VERSION: one
#                            of the KEYCLOAK_VERSIONS below; default the
#                            newest that a JDK on this machine runs
#   hack/tools.sh --path keycloak [VERSION]
#                            print that folder only (no download)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=/dev/null
source "$root/tools/temporal/versions.env"
K8S_VERSION=v1.37.2
ETCD_VERSION=v3.7.0

sum_hash="$(cat "$root/tools/envtest/go.mod" "$root/tools/envtest/go.sum" "$root/tools/temporal/versions.env" | sha256sum | cut -c1-12)"
cache_root="${ODAFLOW_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/odaflow-tools}"
dir="$cache_root/${K8S_VERSION}_etcd-${ETCD_VERSION}_temporal-${TEMPORAL_CLI_VERSION}_${sum_hash}"

link() {
  mkdir -p "$root/bin"
  ln -sfn "$dir" "$root/bin/tools"
}

VAULT_VERSION=v1.21.0
vault_hash="$(cat "$root/tools/vault/go.mod" "$root/tools/vault/go.sum" | sha256sum | cut -c1-12)"
vault_dir="$cache_root/vault-${VAULT_VERSION}_${vault_hash}"

TEMPORAL_SERVER_VERSION=v1.32.1
tserver_hash="$(cat "$root/tools/temporal-server/go.mod" "$root/tools/temporal-server/go.sum" | sha256sum | cut -c1-12)"
tserver_dir="$cache_root/temporal-server-${TEMPORAL_SERVER_VERSION}_${tserver_hash}"

# The linters must be built by a Go at least as new as the code they read,
# so their folder is keyed by the Go version too.
GOLANGCI_LINT_VERSION=v2.15.0
WORKFLOWCHECK_VERSION=v0.6.0
lint_dir="$cache_root/lint_golangci-lint-${GOLANGCI_LINT_VERSION}_workflowcheck-${WORKFLOWCHECK_VERSION}_$(go env GOVERSION)"
# deadcode (golang.org/x/tools/cmd/deadcode) has its own folder, keyed by its
# version and the Go version, so bumping it rebuilds it alone; build_lint
# links it into lint_dir.
DEADCODE_VERSION=v0.47.0
deadcode_dir="$cache_root/deadcode-${DEADCODE_VERSION}_$(go env GOVERSION)"

# Keycloak releases odaflow is tested on: version, the lowest and highest
# Java major it supports, the SHA-256 of its keycloak-quarkus-dist tar.gz,
# the path it is served under ("/" or "/auth": what
# localstack.DefaultRelativePath gives, a build-time option of Keycloak). 26.7.3 is the
# current release, 20.0.5 the one the Canvas's umbrella chart installs
# (bitnamilegacy/keycloak 20.0.5, served under /auth), 25.0.6 the newest that
# runs on Java 17 alone. Newest first: the default is the first whose Java
# a JDK here satisfies.
KEYCLOAK_VERSIONS=(
  "26.7.3 21 25 77657f30b7e90d70f727712ce1c967f430fd6a5e9f458d32d8c6df0635345f47 /"
  "25.0.6 17 21 - /"
  "20.0.5 11 17 24e18198543dae808088d29a7a784d05d4b0c92851ad6c43ef7c371885cdb021 /auth"
)

# java_major prints the major version of JAVA_HOME $1's java, or nothing.
java_major() {
  local v
  v="$("$1/bin/java" -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -n1)"
  echo "$v"
}

# jdk_for prints the JAVA_HOME of the newest JDK whose major is between $1
# and $2 (the JDKs under /usr/lib/jvm, and $JAVA_HOME), or nothing.
jdk_for() {
  local lo=$1 hi=$2 best="" best_major=0 home m
  for home in ${JAVA_HOME:-} /usr/lib/jvm/*; do
    [[ -x "$home/bin/java" && -d "$home" && ! -L "$home" ]] || continue
    m="$(java_major "$home")"
    [[ -n "$m" ]] || continue
    if (( m >= lo && m <= hi && m > best_major )); then best=$home best_major=$m; fi
  done
  echo "$best"
}

# keycloak_pick sets kc_version, kc_java_min, kc_java_max and kc_sha256 for
# version $1, or for the newest that a JDK here runs when $1 is empty.
keycloak_pick() {
  local want=${1:-} entry v lo hi sum rel
  for entry in "${KEYCLOAK_VERSIONS[@]}"; do
    read -r v lo hi sum rel <<<"$entry"
    if [[ -n "$want" && "$v" != "$want" ]]; then continue; fi
    if [[ -z "$want" && -z "$(jdk_for "$lo" "$hi")" ]]; then continue; fi
    kc_version=$v kc_java_min=$lo kc_java_max=$hi kc_sha256=$sum kc_path=${rel%/}
    return 0
  done
  if [[ -n "$want" ]]; then
    echo "tools: keycloak $want is not one of: ${KEYCLOAK_VERSIONS[*]%% *}" >&2
  else
    echo "tools: no JDK under /usr/lib/jvm runs any Keycloak of: ${KEYCLOAK_VERSIONS[*]}" >&2
  fi
  return 1
}

if [[ "${1:-}" == "--path" ]]; then
  case "${2:-}" in
    "") echo "$dir" ;;
    vault) echo "$vault_dir" ;;
    temporal-server) echo "$tserver_dir" ;;
    keycloak) keycloak_pick "${3:-}" && echo "$cache_root/keycloak-$kc_version" ;;
    *) echo "tools: unknown tool ${2}" >&2; exit 2 ;;
  esac
  exit 0
fi

mkdir -p "$dir"
log() { echo "tools: $*" >&2; }

build_k8s() { # name package
  local name=$1 pkg=$2
  [[ -x "$dir/$name" ]] && return 0
  log "building $name from $pkg (cold: several minutes)"
  local start=$SECONDS
  (cd "$root/tools/envtest" && go build -trimpath -o "$dir/.$name.tmp" \
    -ldflags "-s -w -X k8s.io/component-base/version.gitVersion=${K8S_VERSION} -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37" \
    "$pkg")
  mv "$dir/.$name.tmp" "$dir/$name"
  log "$name built in $((SECONDS - start))s"
}

build_temporal() {
  [[ -x "$dir/temporal" ]] && return 0
  log "building temporal CLI ${TEMPORAL_CLI_VERSION} (cold: about 5 minutes)"
  local start=$SECONDS tmp
  tmp="$(mktemp -d)"
  (cd "$tmp" && GOBIN="$tmp" GOFLAGS=-mod=mod go install -trimpath \
    -ldflags "-s -w -X github.com/temporalio/cli/temporalcli.Version=${TEMPORAL_CLI_VERSION}" \
    "github.com/temporalio/cli/cmd/temporal@v${TEMPORAL_CLI_VERSION}")
  mv "$tmp/temporal" "$dir/temporal"
  rm -rf "$tmp"
  log "temporal built in $((SECONDS - start))s"
}

build_vault() {
  mkdir -p "$vault_dir"
  if [[ ! -x "$vault_dir/vault" ]]; then
    log "building vault ${VAULT_VERSION} (cold: 10-20 minutes, 4.6 GB peak memory)"
    local start=$SECONDS
    (cd "$root/tools/vault" && go build -trimpath -ldflags "-s -w" -o "$vault_dir/.vault.tmp" github.com/hashicorp/vault)
    mv "$vault_dir/.vault.tmp" "$vault_dir/vault"
    log "vault built in $((SECONDS - start))s"
  fi
  mkdir -p "$root/bin"
  ln -sfn "$vault_dir" "$root/bin/vault"
}

build_temporal_server() {
  mkdir -p "$tserver_dir"
  if [[ ! -x "$tserver_dir/temporal-server" || ! -x "$tserver_dir/temporal-sql-tool" || ! -d "$tserver_dir/schema" ]]; then
    log "building temporal-server ${TEMPORAL_SERVER_VERSION} and temporal-sql-tool (cold: 5-20 minutes)"
    local start=$SECONDS mod
    (cd "$root/tools/temporal-server" && go build -trimpath -ldflags "-s -w" -o "$tserver_dir/.temporal-server.tmp" go.temporal.io/server/cmd/server)
    (cd "$root/tools/temporal-server" && go build -trimpath -ldflags "-s -w" -o "$tserver_dir/.temporal-sql-tool.tmp" go.temporal.io/server/cmd/tools/sql)
    # The schema files ship in the server module, not in the binaries; copy
    # them next to the binaries so the tests need no module cache.
    mod="$(cd "$root/tools/temporal-server" && go list -m -f '{{.Dir}}' go.temporal.io/server)"
    rm -rf "$tserver_dir/schema"
    mkdir -p "$tserver_dir/schema"
    cp -r "$mod/schema/postgresql" "$tserver_dir/schema/postgresql"
    chmod -R u+w "$tserver_dir/schema"
    mv "$tserver_dir/.temporal-server.tmp" "$tserver_dir/temporal-server"
    mv "$tserver_dir/.temporal-sql-tool.tmp" "$tserver_dir/temporal-sql-tool"
    log "temporal-server and temporal-sql-tool built in $((SECONDS - start))s"
  fi
  mkdir -p "$root/bin"
  ln -sfn "$tserver_dir" "$root/bin/temporal-server"
}

# install_tool builds Go command $3 (module@version) into folder $1 as $2,
# unless it is there already.
install_tool() {
  local into=$1 tool=$2 pkg=$3 start tmp
  [[ -x "$into/$tool" ]] && return 0
  log "building $tool (cold: several minutes)"
  start=$SECONDS
  tmp="$(mktemp -d)"
  (cd "$tmp" && GOBIN="$tmp" GOFLAGS=-mod=mod go install -trimpath -ldflags "-s -w" "$pkg")
  mv "$tmp/$tool" "$into/$tool"
  rm -rf "$tmp"
  log "$tool built in $((SECONDS - start))s"
}

build_lint() {
  mkdir -p "$lint_dir" "$deadcode_dir"
  install_tool "$lint_dir" golangci-lint "github.com/golangci/golangci-lint/v2/cmd/golangci-lint@${GOLANGCI_LINT_VERSION}"
  install_tool "$lint_dir" workflowcheck "go.temporal.io/sdk/contrib/tools/workflowcheck@${WORKFLOWCHECK_VERSION}"
  install_tool "$deadcode_dir" deadcode "golang.org/x/tools/cmd/deadcode@${DEADCODE_VERSION}"
  ln -sfn "$deadcode_dir/deadcode" "$lint_dir/deadcode"
}

# Debian's PostgreSQL; a fresh CI machine may lack it. We run as root there,
# so no sudo.
install_postgres() {
  local bin
  bin="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1 || true)"
  if [[ -z "$bin" || ! -x "$bin/postgres" ]]; then
    log "installing postgresql from Debian's packages"
    local start=$SECONDS
    DEBIAN_FRONTEND=noninteractive apt-get install -y postgresql >&2 || {
      apt-get update >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y postgresql >&2
    }
    bin="$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n1)"
    log "postgresql installed in $((SECONDS - start))s"
  fi
  echo "$bin"
}

# fetch_keycloak puts Keycloak $kc_version into $cache_root/keycloak-<v>:
# the unpacked distribution in dist/, the JAVA_HOME it runs on in java-home.
# Maven checks the repository's SHA-1 (-C fails on a mismatch); the pinned
# SHA-256 is checked as well, so a changed artifact fails even with a
# matching checksum file beside it.
fetch_keycloak() {
  local kc_dir="$cache_root/keycloak-$kc_version" java start tmp tarball got
  java="$(jdk_for "$kc_java_min" "$kc_java_max")"
  if [[ -z "$java" ]]; then
    log "keycloak $kc_version runs on Java $kc_java_min to $kc_java_max; none under /usr/lib/jvm"
    return 1
  fi
  if [[ ! -x "$kc_dir/dist/bin/kc.sh" ]]; then
    log "fetching keycloak $kc_version from Maven Central (about 170 MB)"
    start=$SECONDS
    tmp="$(mktemp -d "$cache_root/.keycloak.XXXXXX")"
    mvn -B -q -C -Dstyle.color=never dependency:copy \
      "-Dartifact=org.keycloak:keycloak-quarkus-dist:${kc_version}:tar.gz" \
      "-DoutputDirectory=$tmp" >&2
    tarball="$tmp/keycloak-quarkus-dist-${kc_version}.tar.gz"
    got="$(sha256sum "$tarball" | cut -d' ' -f1)"
    if [[ "$kc_sha256" != "-" && "$got" != "$kc_sha256" ]]; then
      rm -rf "$tmp"
      log "keycloak $kc_version: SHA-256 $got, want $kc_sha256"
      return 1
    fi
    [[ "$kc_sha256" == "-" ]] && log "keycloak $kc_version: SHA-256 $got (Maven checked its SHA-1; no pinned SHA-256)"
    mkdir -p "$tmp/unpacked"
    tar -xzf "$tarball" -C "$tmp/unpacked"
    rm -rf "$kc_dir"
    mkdir -p "$kc_dir"
    mv "$tmp/unpacked/keycloak-${kc_version}" "$kc_dir/dist"
    rm -rf "$tmp"
    log "keycloak $kc_version fetched and unpacked in $((SECONDS - start))s"
  fi
  echo "$java" >"$kc_dir/java-home"
  if [[ ! -f "$kc_dir/warm" ]]; then
    start=$SECONDS
    log "keycloak $kc_version: first start-dev, which builds it for dev mode (1-3 min)"
    warm_keycloak "$kc_dir" "$java"
    touch "$kc_dir/warm"
    log "keycloak $kc_version built for dev mode in $((SECONDS - start))s"
  fi
  echo "$kc_dir"
}

# warm_keycloak runs start-dev once with the build-time options the tests
# and make dev use (in-memory H2, the version's path) and stops it once the
# build is done: Keycloak rebuilds ("augments") itself for these on its
# first start, 1-3 minutes of CPU. Done here, under the lock, no test run
# pays it and two runs never rebuild the same folder at once.
warm_keycloak() {
  local kc_dir=$1 java=$2 out pid i
  local args=(start-dev --db=dev-mem --http-host=127.0.0.1 --http-port=0)
  [[ -n "$kc_path" ]] && args+=("--http-relative-path=$kc_path")
  out="$kc_dir/warm-up.log"
  JAVA_HOME="$java" HOME="$kc_dir" setsid "$kc_dir/dist/bin/kc.sh" "${args[@]}" >"$out" 2>&1 &
  pid=$!
  for ((i = 0; i < 900; i++)); do
    grep -q "development mode" "$out" && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 1
  done
  kill -- -"$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  if ! grep -q "development mode" "$out"; then
    log "keycloak $kc_version: the first start failed; see $out"
    return 1
  fi
}

# Serialised on purpose: on 2 cores parallel builds only fight for the CPU and
# the lock keeps two concurrent callers (make dev + make test) from both building.
exec 9>"$cache_root/.lock"
flock 9
if [[ "${1:-}" == "vault" ]]; then
  build_vault
  echo "$vault_dir"
  exit 0
fi
if [[ "${1:-}" == "temporal-server" ]]; then
  build_temporal_server
  echo "$tserver_dir"
  exit 0
fi
if [[ "${1:-}" == "postgres" ]]; then
  install_postgres
  exit 0
fi
if [[ "${1:-}" == "keycloak" ]]; then
  keycloak_pick "${2:-}"
  kc_dir="$(fetch_keycloak)"
  if [[ -z "${2:-}" ]]; then
    mkdir -p "$root/bin"
    ln -sfn "$kc_dir" "$root/bin/keycloak"
  fi
  echo "$kc_dir"
  exit 0
fi
if [[ "${1:-}" == "lint" ]]; then
  build_lint
  echo "$lint_dir"
  exit 0
fi
# The CRDs the local stack installs next to the ODA ones
# (internal/localstack.GatewayCRDs) ship in these modules of odaflow's
# go.mod, which no odaflow binary imports, so `go build` never fetches them.
download_crd_modules() {
  (cd "$root" && go mod download istio.io/api sigs.k8s.io/gateway-api)
}

download_crd_modules
build_temporal
build_k8s etcd go.etcd.io/etcd/server/v3
build_k8s kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver
build_k8s kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager
link
echo "$dir"
