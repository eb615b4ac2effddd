# Flotilla — common developer tasks. `make help` lists them.

GO        ?= go
BIN       := bin/flotilla
# Flags for `make up`, e.g. make up UP_FLAGS="--members 2 --nodes 5"
# (give a state directory as --state-dir=DIR).
UP_FLAGS  ?=
# The manifests `make up` applies to the host once it is up.
SAMPLE    ?= config/samples/propagation.yaml
# Timeout for the whole test suite (unit, integration and e2e).
TEST_TIMEOUT ?= 25m
# Flags for `make test`: the race detector by default (TEST_FLAGS= runs without).
TEST_FLAGS ?= -race
# How long `make fuzz` fuzzes each target.
FUZZTIME ?= 10s
# How many fuzz targets `make fuzz` runs at once (default: the number of cores).
FUZZJOBS ?= $(shell nproc)
# Extra flags for the harness `make bench` runs, e.g. BENCH_FLAGS="--workloads 10000 --members 10 --timeout 60m".
BENCH_FLAGS ?=

.PHONY: help build components up down status test test-unit fuzz verify generate bench clean

help: ## List the targets.
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

build: ## Build bin/flotilla.
	$(GO) build -o $(BIN) ./cmd/flotilla

components: build ## Build the pinned Kubernetes components into the cache (once; ~6 min cold).
	@./$(BIN) components >/dev/null

up: build ## Start the local environment (host control plane + controller-manager + 3 members) and apply the sample.
	./$(BIN) up $(UP_FLAGS)
	kubectl --kubeconfig "$$(./$(BIN) kubeconfig $(filter --state-dir=%,$(UP_FLAGS)))" apply -f $(SAMPLE)

down: build ## Stop every process of the local environment.
	./$(BIN) down

status: build ## Show the local environment's components and health.
	./$(BIN) status

test: components ## Run unit, integration and e2e tests, with the race detector.
	$(GO) test $(TEST_FLAGS) -count=1 -timeout $(TEST_TIMEOUT) ./...

test-unit: ## Run only the unit tests (no environments started).
	$(GO) test -count=1 -short ./...

fuzz: ## Run every fuzz target (func FuzzXxx) for FUZZTIME each (default 10s), FUZZJOBS (default: cores) at a time.
	GO="$(GO)" FUZZTIME="$(FUZZTIME)" FUZZJOBS="$(FUZZJOBS)" ./hack/fuzz.sh

verify: ## Check formatting, vet, and that generated code is up to date.
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	@before=$$(git status --porcelain; git diff); $(MAKE) --no-print-directory generate; \
	after=$$(git status --porcelain; git diff); \
	if [ "$$before" != "$$after" ]; then echo "make generate changed files: commit its output"; git status --short; exit 1; fi

CONTROLLER_GEN := bin/controller-gen

generate: $(CONTROLLER_GEN) ## Regenerate generated code (deepcopy, CRDs, RBAC).
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./api/...
	$(CONTROLLER_GEN) crd paths=./api/... output:crd:artifacts:config=config/crd/bases
	$(CONTROLLER_GEN) crd paths=./test/workloads/... output:crd:artifacts:config=test/workloads/crds
	rm -rf bin/upstream-crds && cd hack/upstreamcrds && ../../$(CONTROLLER_GEN) crd:maxDescLen=0,generateEmbeddedObjectMeta=true \
		paths=github.com/argoproj/argo-rollouts/pkg/apis/rollouts/v1alpha1 output:crd:artifacts:config=../../bin/upstream-crds
	cp bin/upstream-crds/argoproj.io_rollouts.yaml test/workloads/crds/
	$(CONTROLLER_GEN) rbac:roleName=flotilla-controller-manager paths=./internal/... output:rbac:artifacts:config=config/rbac
	$(GO) generate ./...

# controller-gen is built from the version pinned in hack/codegen.
$(CONTROLLER_GEN): hack/codegen/go.mod hack/codegen/go.sum
	cd hack/codegen && $(GO) build -o ../../$(CONTROLLER_GEN) sigs.k8s.io/controller-tools/cmd/controller-gen

bench: components ## Run the benchmarks, then the end-to-end harness (test/bench; BENCH_FLAGS="--workloads 10000 --members 10").
	$(GO) test -count=1 -run '^$$' -bench . -skip BenchmarkPassThrough -benchmem ./...
	@# 10,000 requests per path: a p99 of fewer swings with one slow moment.
	$(GO) test -count=1 -run '^$$' -bench BenchmarkPassThrough -benchtime 10000x ./internal/gateway
	$(GO) run ./test/bench --out bench-results.json $(BENCH_FLAGS)

clean: ## Remove build output (not the component cache).
	rm -rf bin
