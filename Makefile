# respire-go: everything CI runs is `make test`; `make demo` shows the library at work.
GO        ?= go
PKGS      ?= ./...
SIM_RUNS  ?= 1000000
CHAOS_RUNS ?= 10000
STATICCHECK = honnef.co/go/tools/cmd/staticcheck@v0.8.2
## GOREDIS_MINORS: the go-redis v9 versions the goredis module's tests run against: the oldest
## and the newest it supports (v9.23 is both: the transport needs Client.EphemeralConn, new in
## v9.23, and goredis/go.mod requires it, so no build can pick an older one).
GOREDIS_MINORS ?= v9.23.0

.PHONY: test demo sim chaos allocs chaos-mutation dst-mutation bench lint fmt install-check

## test: everything at once (scripts/parallel.sh), each suite with private redis-servers of its own
## (scripts/with-servers.sh installs and starts them, and stops them on any exit): the root module
## with -race (the install check included, see install-check; its two longest packages, lease and
## cmd/lockctl, as jobs of their own so that they start at once), the three adapter modules
## (rueidislease/, goredis/ once per version of GOREDIS_MINORS, valkeygo/: the whole lease suite
## on their client), and beside them test-sim, the CPU-bound part (below).
test:
	bash scripts/parallel.sh \
	  "lease=bash scripts/with-servers.sh $(GO) test -race -count=1 -timeout 15m ./lease" \
	  "lockctl=bash scripts/with-servers.sh $(GO) test -race -count=1 -timeout 15m ./cmd/lockctl" \
	  "root=bash scripts/with-servers.sh $(GO) test -race -p 4 -count=1 -timeout 15m \$$($(GO) list $(PKGS) | grep -v -e '/sim/dst\$$' -e '/lease\$$' -e '/cmd/lockctl\$$')" \
	  "rueidislease=bash scripts/with-servers.sh env -C rueidislease $(GO) test -race -count=1 -timeout 15m ./..." \
	  "goredis=bash scripts/with-servers.sh bash -c 'for v in $(GOREDIS_MINORS); do bash scripts/goredis-minor.sh \$$v -race -count=1 -timeout 15m ./... || exit 1; done'" \
	  "valkeygo=bash scripts/with-servers.sh env -C valkeygo $(GO) test -race -count=1 -timeout 15m ./..." \
	  "sim=make --no-print-directory test-sim"

## test-sim: the CPU-bound part of test, run beside the suites (which mostly wait): the deterministic
## simulator (sim/dst, TestSimulate's budget), the peer benchmark's own unit tests, the allocation
## checks and the mutation campaigns.
.PHONY: test-sim
test-sim:
	$(GO) test -count=1 -timeout 15m ./sim/dst
	$(GO) test -count=1 -timeout 15m -run '^TestSimulate$$' ./sim
	cd bench && $(GO) test -count=1 ./cmd/...
	$(MAKE) --no-print-directory allocs
	$(MAKE) --no-print-directory chaos-mutation
	$(MAKE) --no-print-directory dst-mutation

## install-check: RELEASING.md's check alone (also part of test): every module published from the
## working tree in a throw-away file module proxy; in a fresh module with an empty module cache,
## each README install line, then a build of every README Go snippet.
install-check:
	$(GO) test -count=1 -v -run 'TestEveryModuleInstalls|TestReadmeSnippetsCompile' ./internal/installcheck

## demo: why the locks are safe, in one screen, on an embedded simulated server (nothing to install);
## ARGS=-wire plays a lock's life on each simulated server version with the commands each received.
demo:
	$(GO) run ./cmd/demo $(ARGS)

## sim: a long deterministic-simulation campaign over all cores.
sim:
	$(GO) run ./cmd/simcampaign -runs $(SIM_RUNS)

## chaos: a randomised fault campaign through the engine on the root module's own client (lease, fault proxy) on sim nodes.
chaos:
	bash scripts/with-servers.sh $(GO) run ./cmd/chaos -runs $(CHAOS_RUNS)

## allocs: the allocation checks of the hot path, without the race detector (its instrumentation
## allocates, so under -race they only check a loose bound).
allocs:
	$(GO) test -count=1 -run 'AllocatesNoMore|CostsNothingWhenUnused' ./lease
	cd goredis && $(GO) test -count=1 -run 'AllocatesNoMore' .

## chaos-mutation: the campaign must catch deliberately broken builds: the wire engine's (an error of
## a connection it closed itself taken as "not submitted"), the driver's (the renewer ignores its renewal's answer; caught in about one
## schedule in 60, mostly by lease-outlived in a partition, so it gets 600: each check stops at the
## first violation), a semaphore that admits one permit more than its limit, guarded-write
## scripts that skip their ownership check (caught by no-guarded-write-after-takeover) and a fair
## queue that grants to the waiter behind the head (caught by fair-order on the replayed queue).
chaos-mutation:
	$(GO) run -tags respire_mutation_errclosing ./cmd/chaos -runs 300 -expect-violation
	$(GO) run -tags respire_mutation_renewal ./cmd/chaos -runs 600 -expect-violation
	$(GO) run -tags respire_mutation_semlimit ./cmd/chaos -runs 300 -expect-violation
	$(GO) run -tags respire_mutation_guard ./cmd/chaos -runs 300 -expect-violation
	$(GO) run -tags respire_mutation_fairhead ./cmd/chaos -runs 300 -expect-violation

## dst-mutation: the deterministic simulator, which runs the shipped driver over the shipped wire
## engine, must catch the engine's mutation (an error of a connection it closed itself taken as "not
## submitted"), the driver's renewal mutation (the renewer ignores its renewal's answer), conn's
## semaphore-limit mutation (a permit acquisition asks for one permit more than its limit) and conn's
## guard mutation (the guarded-write scripts skip their ownership check) and the fair-head
## mutation (the fair queue grants to the waiter behind the head) and the hand-over mutation (the
## hand-over script skips its owner compare) within 1,000 schedules each.
dst-mutation:
	$(GO) test -count=1 -tags respire_mutation_errclosing ./sim -run TestSimulatorRunsTheShippedEngine_CatchesTheEnginesErrClosingMutation
	$(GO) test -count=1 -tags respire_mutation_renewal ./sim -run TestSimulatorRunsTheShippedDriver_CatchesTheDriversRenewalMutation
	$(GO) test -count=1 -tags respire_mutation_semlimit ./sim -run TestSimulatorChecksThePrimitives_CatchesTheSemaphoreLimitMutation
	$(GO) test -count=1 -tags respire_mutation_guard ./sim -run TestNoGuardedWriteAfterTakeover_TheSimulatorCatchesTheGuardMutation
	$(GO) test -count=1 -tags respire_mutation_fairhead ./sim -run TestSimulatorChecksFairWaiting_CatchesTheFairHeadMutation
	$(GO) test -count=1 -tags respire_mutation_handover ./sim -run TestPushHandsOverWithinOneLocks_TheSimulatorCatchesTheHandOverMutation

## bench: the peer benchmark (bench/cmd/peerbench, its own module): respire-go, raw rueidis, raw
## go-redis, redsync, bsm/redislock and rueidislock on a private redis-server it starts; writes
## bench/RESULTS.md. Installs Debian's redis-server when missing, as scripts/with-servers.sh does.
PEERBENCH_FLAGS ?= -reps 3 -ctx both
.PHONY: bench bench-micro
bench:
	@command -v redis-server >/dev/null || { \
	  echo "bench: installing Debian's redis-server" >&2; \
	  export DEBIAN_FRONTEND=noninteractive; apt-get update -qq >&2 && apt-get install -y -qq redis-server >&2; }
	cd bench && $(GO) run ./cmd/peerbench $(PEERBENCH_FLAGS)

## bench-micro: bench/'s micro-benchmarks (lease against raw rueidis) on scripts/with-servers.sh's servers.
bench-micro:
	bash scripts/with-servers.sh env -C bench $(GO) test -run '^$$' -bench . -benchmem ./...

## lint: gofmt check, go vet, staticcheck — of the root module and of each adapter module.
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) run $(STATICCHECK) $(PKGS)
	cd bench && $(GO) vet ./...
	cd rueidislease && $(GO) vet ./... && $(GO) run $(STATICCHECK) ./...
	cd valkeygo && $(GO) vet ./... && $(GO) run $(STATICCHECK) ./...
	cd goredis && $(GO) vet ./... && $(GO) run $(STATICCHECK) ./...

fmt:
	gofmt -w $$(git ls-files '*.go')
