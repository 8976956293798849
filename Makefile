# odaflow — the two commands a fresh machine needs are `make dev` and `make test`.
# Everything else here is what those two call, plus helpers for developers.

SHELL     := bash
GO        ?= go
BIN       := bin
ODAFLOW   := $(BIN)/odaflow
# The release this tree builds: the VERSION file, which the binary embeds.
VERSION   := $(shell cat VERSION)
GOTESTFLAGS ?=

.PHONY: image image-push chart contracts all dev dev-tools test tools build vet lint fmt-check unit integration production bench bench-storm clean help record-histories fuzz faults

all: build

help:
	@echo "make dev     run the local stack: kube-apiserver + etcd + controller-manager, Temporal with its Web UI, worker, watcher"
	@echo "make test    run every test on real servers (builds and caches them on first use)"
	@echo "make tools   build or fetch every real server the tests run into the cache (hack/tools.sh)"
	@echo "make lint    golangci-lint and Temporal's workflowcheck (built into the cache on first use)"
	@echo "make build   build bin/odaflow"
	@echo "make image   build the container image without a Docker engine (bin/image: OCI layout and tarball)"
	@echo "make fuzz    run every fuzz target in turn (FUZZTIME=10s each; FUZZTIME=10m for a long run)"

## dev-tools: only what `make dev` runs: etcd, kube-apiserver,
## kube-controller-manager and the Temporal CLI, and the modules that carry
## the Istio and Gateway API CRDs the local stack installs (hack/tools.sh
## with no argument).
dev-tools:
	@hack/tools.sh >/dev/null

## tools: etcd, kube-apiserver, kube-controller-manager and the Temporal CLI,
## built from the Go module proxy and cached outside the clone (bin/tools links
## there); the Vault dev server for the secrets tests in a cache folder of
## its own (bin/vault); the Temporal server binary and its SQL tool
## (bin/temporal-server) and Debian's PostgreSQL for the production-shape
## tests; Keycloak's server distribution from Maven Central, the current
## release (bin/keycloak, which make dev then runs) and the Canvas's 20.0.5
## (localstack.CanvasKeycloakVersion), for the identity tests
## (docs/keycloak.md). The chart tests render and lint with the helm
## library in go.mod, so no helm binary is built.
tools: dev-tools
	@hack/tools.sh vault >/dev/null
	@hack/tools.sh temporal-server >/dev/null
	@hack/tools.sh postgres >/dev/null
	@hack/tools.sh keycloak >/dev/null
	@hack/tools.sh keycloak 20.0.5 >/dev/null

build:
	$(GO) build -trimpath -o $(ODAFLOW) ./cmd/odaflow

## image: the odaflow image built without a container engine (hack/image,
## go-containerregistry; its own Go module): an OCI image layout in
## bin/image/oci (every IMAGE_PLATFORMS) and, for the first platform, a
## tarball bin/image/odaflow.tar for docker/podman load, kind load
## image-archive or crane push. bin/ is git-ignored: never commit them.
## image-push pushes the multi-platform index to $(IMAGE):$(VERSION).
IMAGE           ?= ghcr.io/odaflow/odaflow
IMAGE_PLATFORMS ?= linux/amd64
IMAGE_FLAGS      = -root $(CURDIR) -version $(VERSION) -revision "$$(git rev-parse HEAD 2>/dev/null)" \
                   -image $(IMAGE) -platforms $(IMAGE_PLATFORMS) -out $(CURDIR)/$(BIN)/image
image:
	cd hack/image && $(GO) run . $(IMAGE_FLAGS)

image-push:
	cd hack/image && $(GO) run . $(IMAGE_FLAGS) -push

# Vault is not built for `make dev`: it is used when `make tools` (or
# `hack/tools.sh vault`) has put it in the cache, and left out otherwise.
dev: dev-tools build
	$(ODAFLOW) dev

fmt-check:
	@out="$$(gofmt -l $$(git ls-files '*.go'))"; if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

## lint: golangci-lint with .golangci.yml (govet, staticcheck, errcheck,
## forbidigo: no time.Sleep outside tests, exhaustive, ...) and Temporal's
## workflowcheck over workflows/ with hack/workflowcheck.yaml. Both are
## pinned and built once into the tools cache (hack/tools.sh lint).
lint:
	@dir="$$(hack/tools.sh lint)" && \
	"$$dir/golangci-lint" run ./... && \
	"$$dir/workflowcheck" -config hack/workflowcheck.yaml ./workflows/... && \
	hack/deadcode.sh "$$dir/deadcode"

## test: formatting, vet, and every package's tests. The integration tests in
## tests/ start the real servers themselves; with CI set they fail (never skip)
## when the servers are missing.
## The run keeps its artifacts in $(ARTIFACTS): the whole go test output
## (go-test.log), every workflow history the tests' Temporal servers
## recorded, the servers' logs and the ledger of secret values the tests
## used. hack/secretscan then searches all of it, and the committed replay
## histories, for every secret: one hit fails the run.
ARTIFACTS ?= $(CURDIR)/.test-artifacts
test: tools lint fmt-check vet contracts
	rm -rf $(ARTIFACTS) && mkdir -p $(ARTIFACTS)
	set -o pipefail; ODAFLOW_TEST_ARTIFACTS=$(ARTIFACTS) $(GO) test -count=1 -timeout 30m -json $(GOTESTFLAGS) ./... 2>&1 \
		| $(GO) run ./hack/gotestlog -o $(ARTIFACTS)/go-test.log
	cd tests/compose && $(GO) test -count=1 ./...
	$(MAKE) --no-print-directory fuzz FUZZTIME=$(TEST_FUZZTIME)
	$(GO) run ./hack/secretscan -artifacts $(ARTIFACTS) workflows/testdata/histories workflows/testdata/releases

## faults: the worker killed at each activity boundary of a full lifecycle,
## alone (make test runs it with the rest of tests/integration).
faults: tools
	$(GO) test -count=1 -v -run '^TestWorkerKilledAtEveryActivityBoundary$$' ./tests/integration/

## fuzz: each go test -fuzz target in turn for FUZZTIME (make test runs them
## for TEST_FUZZTIME each; FUZZTIME=10m for a real search). Each package's
## instrumented test binary is built once (go test -c -fuzz) and run once per
## target, in the package folder and with go test's own corpus cache, which
## is what go test -fuzz does, without linking the binary again per target.
## A crasher is written to the package's testdata/fuzz: fix it and keep it.
FUZZTIME ?= 10s
TEST_FUZZTIME ?= 5s
# Every input that finds new coverage is minimised first, for up to 60 s by
# default, which on this 2-core machine can stall a short run; 2 s keeps the
# search going (a crasher is still written, only less minimised).
FUZZMINIMIZETIME ?= 2s
FUZZ_PACKAGES := api oda gateway webhook/conversion
FUZZ_TARGETS := \
	api:FuzzDecodeComponent \
	oda:FuzzDesiredChildren oda:FuzzNormalizeIdempotent oda:FuzzChildName \
	oda:FuzzWorkflowID oda:FuzzStatusSummary \
	gateway:FuzzParseSpec gateway:FuzzGatewayObjectNames \
	webhook/conversion:FuzzConvertRoundTrip webhook/conversion:FuzzConvertStable
fuzz:
	@set -e; module=$$($(GO) list -m); cache=$$($(GO) env GOCACHE)/fuzz; mkdir -p $(BIN)/fuzz; \
	for pkg in $(FUZZ_PACKAGES); do \
		$(GO) test -c -fuzz=. -o $(CURDIR)/$(BIN)/fuzz/$$(echo $$pkg | tr / -).test ./$$pkg; \
	done; \
	for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "fuzz $$name in ./$$pkg for $(FUZZTIME)"; \
		hack/fuzz.sh $$pkg $(CURDIR)/$(BIN)/fuzz/$$(echo $$pkg | tr / -).test $$name $(FUZZTIME) $(FUZZMINIMIZETIME) \
			$$cache/$$module/$$pkg || exit 1; \
	done

## contracts: the client libraries' own integration tests (an allow-list of
## the methods odaflow uses) against odaflow's doubles of Kong and Keycloak,
## which keeps the doubles honest.
contracts:
	bash hack/go-kong-contract.sh
	bash hack/gocloak-contract.sh

unit:
	$(GO) test -short -count=1 ./oda/... ./workflows/... ./watcher/... ./webhook/... ./internal/config/...

integration: tools
	$(GO) test -count=1 -v ./tests/integration/...

## production: the fault tests in production's shape — the Temporal server
## binary on PostgreSQL, two workers and two watchers as processes
## (tests/production; `make test` runs them too, through ./...).
production: tools
	$(GO) test -count=1 -v ./tests/production/...

## chart: helm lint/template, server-side dry run and RBAC checks on a real
## apiserver, the Dockerfile check (tests/chart), and the compose file
## (tests/compose, its own module). Helm is the library in go.mod.
chart: tools
	$(GO) test -count=1 ./tests/chart/...
	cd tests/compose && $(GO) test -count=1 ./...

clean:
	rm -rf $(BIN) .dev

## record-histories: re-record the replay suite's histories from the real
## servers after a workflow change: until the v0.1.0 tag the change is made
## directly; from the tag on, only behind workflow.GetVersion.
RECORDING_TESTS := ^(TestComponentLifecycleOnRealServers|TestMalformedComponentFailsWithoutBlockingOthers|TestExposedAPILifecycleOnRealServers|TestDependencyResolvedWhenTheProviderComesLater|TestIdentityCredentialsRotateAndNeverEnterHistory|TestSecretsManagementOnRealServers|TestContinueAsNewKeepsEveryLifecycle|TestSecretsManagementContinuesAsNew)$$
record-histories: tools
	ODAFLOW_RECORD_HISTORIES=1 $(GO) test -count=1 -run '$(RECORDING_TESTS)' ./tests/integration/
	ODAFLOW_RECORD_HISTORIES=1 $(GO) test -count=1 -run TestWorkflowCodeMatchesItsRecordings ./workflows/
	$(GO) test -count=1 -run 'TestReplay|TestWorkflowCode|TestEveryWorkflow' ./workflows/

## release-histories: keep the histories a release was tested with, as
## they are, in workflows/testdata/releases/$(RELEASE): the replay suite
## replays them forever (a workflow that release started may still run),
## while testdata/histories follows the current code. Run it on the commit
## that is tagged, e.g. make release-histories RELEASE=v0.1.0.
release-histories:
	@test -n "$(RELEASE)" || { echo "set RELEASE, e.g. RELEASE=v0.1.0"; exit 2; }
	@test ! -e workflows/testdata/releases/$(RELEASE) || { echo "workflows/testdata/releases/$(RELEASE) exists: a release's histories never change"; exit 2; }
	mkdir -p workflows/testdata/releases/$(RELEASE)
	cp workflows/testdata/histories/*.json workflows/testdata/releases/$(RELEASE)/

## bench: N productcatalog Components applied at once on the local stack;
## figures as a table and in results/bench-latest.json. BENCH_N=1,100,1000.
BENCH_N ?= 1,100,1000
bench: tools
	$(GO) run ./tests/bench -n $(BENCH_N)

## bench-storm: STORM_N existing Components at steady state, then the watcher
## and the worker restarted; results/storm-latest.json. STORM_N=10000;
## STORM_FLAGS="-storm-budget 30m" stops creating after 30 min.
STORM_N ?= 10000
bench-storm: tools
	$(GO) run ./tests/bench -storm $(STORM_N) $(STORM_FLAGS)
