# lionbus build, test and demo targets. Run `make help` for the list.

SHELL     := bash
.SHELLFLAGS := -o pipefail -ec

GO        ?= go
BIN       ?= bin
FUZZTIME  ?= 30s
# Extra flags of `make bench-bus`, e.g. BENCHBUS_FLAGS='-quick -clients 1,8'.
BENCHBUS_FLAGS ?=
PKGS      ?= ./...
# The race detector makes the end-to-end tests slower; the bound keeps a
# hung test from eating a whole CI run.
TESTFLAGS ?= -race -count=1 -timeout 20m
# The tests whose acceptance is a rate or a delay (a fleet's throughput
# against a provider's limit, the first answer after a server restart) run
# on their own, after the others: on a two-core CI machine, the packages
# go test runs alongside them would be what they measure.
LOADBOUND ?= ^(TestBudget_four_workers_keep_the_providers_limit|TestRestart_burst|TestRestart_burst_cluster)$$
LOADBOUND_PKGS ?= ./cmd/worker

# The version --version prints: the git description of the checkout.
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   ?= -s -w -X main.version=$(VERSION)
BINARIES  := worker publisher

.PHONY: help run test unit lint fmt vet bench bench-bus fuzz build lndl-vectors clean js js-deps js-gen js-pack agent-clis

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

run: ## embedded NATS + a worker + a scripted demo conversation, then serve until Ctrl-C
	$(GO) run ./cmd/worker --demo

test: lint js unit ## everything CI checks: gofmt, go vet, the TypeScript SDK's build and type drift check, then all tests under -race

unit: ## all tests under -race (no lint); the load-bound ones (LOADBOUND) alone, last
	$(GO) test $(TESTFLAGS) -skip '$(LOADBOUND)' $(PKGS)
	$(GO) test $(TESTFLAGS) -run '$(LOADBOUND)' $(LOADBOUND_PKGS)

lint: fmt vet ## gofmt -l must list nothing; go vet must pass

fmt:
	@out="$$(find . -name '*.go' -not -path '*/testdata/*' -not -path './.git/*' -print0 | xargs -0 gofmt -l)"; \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

bench: ## every benchmark, with allocations
	$(GO) test -run='^$$' -bench=. -benchmem $(PKGS)

bench-bus: ## lionbus requests against a minimal JetStream worker: a markdown report (BENCHBUS_FLAGS, e.g. -quick)
	$(GO) run ./pkg/bus/internal/benchbus $(BENCHBUS_FLAGS)

fuzz: ## a short run (FUZZTIME, default 30s) of every fuzz target
	@set -e; \
	for dir in $$($(GO) list -f '{{.Dir}}' $(PKGS)); do \
		for name in $$(grep -ho '^func Fuzz[A-Za-z0-9_]*' $$dir/*_test.go 2>/dev/null | sed 's/^func //' | sort -u); do \
			echo "== $$name in $$dir ($(FUZZTIME))"; \
			(cd $$dir && $(GO) test -run='^$$' -fuzz="^$$name\$$" -fuzztime=$(FUZZTIME) .); \
		done; \
	done

build: ## static binaries into bin/
	@mkdir -p $(BIN)
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/ ./cmd/worker ./cmd/publisher

lndl-vectors: ## the LNDL conformance vectors, every stage: in pkg/lndl and through `publisher lndl <stage> --vectors`
	$(GO) test -count=1 -run 'Conformance' ./pkg/lndl/
	$(GO) test -count=1 -run 'TestRunLNDL_vectors' -v ./cmd/publisher/ | grep -E '^(\s*--- |ok|FAIL|PASS)'

# The TypeScript SDK (clients/js) and the JavaScript examples built on it.
# Without node the JavaScript targets are skipped (and so are the tests that
# run node), except in CI (CI set), which installs node and must run them.
JS_DIR    := clients/js
NODE_OK    = $(shell command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 && echo yes)

js: ## the TypeScript SDK: npm ci when needed, the generated types checked against schemas/, then built (tsc)
	@if [ "$(NODE_OK)" != yes ]; then \
		if [ -n "$$CI" ]; then echo "js: node and npm are required in CI" >&2; exit 1; fi; \
		echo "js: node or npm is not installed; skipping the TypeScript SDK (its tests skip too)"; exit 0; \
	fi; \
	if [ ! -d $(JS_DIR)/node_modules ]; then npm ci --prefix $(JS_DIR) --no-audit --no-fund; fi; \
	npm run --prefix $(JS_DIR) --silent gen:check; \
	npm run --prefix $(JS_DIR) --silent build

js-deps: ## npm ci in clients/js (then build it) and in the JavaScript examples built on it (their tests run them with node)
	npm ci --prefix $(JS_DIR) --no-audit --no-fund
	npm run --prefix $(JS_DIR) --silent build
	npm ci --prefix examples/js-tool --no-audit --no-fund
	npm ci --prefix examples/js-client --no-audit --no-fund

js-gen: ## regenerate the TypeScript types of clients/js from schemas/ (after changing a schema)
	npm run --prefix $(JS_DIR) --silent gen

js-pack: js ## the SDK as an npm tarball in bin/ (npm install bin/lionbus-client-*.tgz)
	@mkdir -p $(BIN)
	cd $(JS_DIR) && npm pack --silent --pack-destination ../../$(BIN)

# The coding-agent CLIs (Claude Code, Codex CLI, Gemini CLI) that the
# real-CLI tests run, at the versions of tools/agent-clis/package-lock.json,
# installed into AGENT_CLIS_DIR (git-ignored). The tests look for them in
# $(AGENT_CLIS_DIR)/node_modules/.bin; without them they skip, except in CI.
AGENT_CLIS_DIR ?= .tools/agent-clis

agent-clis: ## the coding-agent CLIs the tests run, at pinned versions, into .tools/agent-clis (npm ci)
	@mkdir -p $(AGENT_CLIS_DIR)
	@if ! cmp -s tools/agent-clis/package-lock.json $(AGENT_CLIS_DIR)/package-lock.json || [ ! -d $(AGENT_CLIS_DIR)/node_modules ]; then \
		cp tools/agent-clis/package.json tools/agent-clis/package-lock.json $(AGENT_CLIS_DIR)/; \
		npm ci --prefix $(AGENT_CLIS_DIR) --no-audit --no-fund; \
	fi
	@for c in claude codex gemini; do printf '%s: ' $$c; $(AGENT_CLIS_DIR)/node_modules/.bin/$$c --version; done

clean: ## remove bin/
	rm -rf $(BIN)
