# odaflow — the two commands a fresh machine needs are `make dev` and `make test`.
# Everything else here is what those two call, plus helpers for developers.

GO        ?= go
BIN       := bin
ODAFLOW   := $(BIN)/odaflow
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
GOTESTFLAGS ?=

.PHONY: chart contracts all dev test tools build vet fmt-check unit integration production bench clean help record-histories

all: build

help:
	@echo "make dev     run the local stack: kube-apiserver + etcd + controller-manager, Temporal with its Web UI, worker, watcher"
	@echo "make test    run every test on real servers (builds and caches them on first use)"
	@echo "make tools   build the real servers into the cache (hack/tools.sh)"
	@echo "make build   build bin/odaflow"

## tools: etcd, kube-apiserver, kube-controller-manager and the Temporal CLI,
## built from the Go module proxy and cached outside the clone (bin/tools links
## there); helm for the chart tests and the Vault dev server for the secrets
## tests, each in a cache folder of its own (bin/helm, bin/vault); the
## Temporal server binary and its SQL tool (bin/temporal-server) and Debian's
## PostgreSQL for the production-shape tests.
tools:
	@hack/tools.sh >/dev/null
	@hack/tools.sh helm >/dev/null
	@hack/tools.sh vault >/dev/null
	@hack/tools.sh temporal-server >/dev/null
	@hack/tools.sh postgres >/dev/null

build:
	$(GO) build -trimpath -ldflags "-X main.version=$(VERSION)" -o $(ODAFLOW) ./cmd/odaflow

dev: tools build
	$(ODAFLOW) dev

fmt-check:
	@out="$$(gofmt -l $$(git ls-files '*.go'))"; if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

## test: formatting, vet, and every package's tests. The integration tests in
## tests/ start the real servers themselves; with CI set they fail (never skip)
## when the servers are missing.
test: tools fmt-check vet contracts
	$(GO) test -count=1 $(GOTESTFLAGS) ./...
	cd tests/compose && $(GO) test -count=1 ./...

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
## (tests/compose, its own module). Builds helm into the tools cache once.
chart: tools
	$(GO) test -count=1 ./tests/chart/...
	cd tests/compose && $(GO) test -count=1 ./...

clean:
	rm -rf $(BIN) .dev

## record-histories: re-record the replay suite's histories from the real
## servers. Only for a deliberate workflow change made behind workflow.GetVersion.
record-histories: tools
	ODAFLOW_RECORD_HISTORIES=1 $(GO) test -count=1 -run 'TestComponentLifecycleOnRealServers|TestExposedAPI|TestDependency' ./tests/integration/

## bench: N productcatalog Components applied at once on the local stack;
## figures as a table and in results/bench-latest.json. BENCH_N=1,100,1000.
BENCH_N ?= 1,100,1000
bench: tools
	$(GO) run ./tests/bench -n $(BENCH_N)
