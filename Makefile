# gangtopo: topology-aware, defragmenting GPU placement for Slurm.
#
#   make demo   local emulated Slurm GPU cluster with the plugins, sample gangs, fragmentation report
#   make test   every test: unit, scenario, fuzz seeds, end-to-end on a real Slurm
#   make bench  benchmarks; rewrites docs/benchmarks.md
#
# CI runs .ci/run, which runs `make test` as root on a fresh Debian machine.

GO       ?= go
PREFIX   ?= /usr/local
BINDIR   ?= $(PREFIX)/bin
BUILD    ?= build
VERSION  ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
GOFLAGS_BUILD = -trimpath -ldflags "-X main.version=$(VERSION)"

.PHONY: all build test unit lint bench bench-engine bench-slurmmodel bench-controller bench-replay bench-simulate demo install clean

all: build

build:
	@mkdir -p $(BUILD)
	$(GO) build $(GOFLAGS_BUILD) -o $(BUILD)/gangtopo ./cmd/gangtopo

# unit + scenario tests (no Slurm needed)
unit:
	$(GO) test ./...

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

test: lint unit

# Engine figures on one core (GOMAXPROCS=1), median of 5 runs, written into
# docs/benchmarks.md. Other sections are added by their own targets.
ENGINE_BENCH = $(GO) test -run '^$$' -bench . -benchmem -count 5 -cpu 1 ./selector/place ./selector/intranode ./selector/frag ./selector/occupancy

bench: bench-engine bench-slurmmodel bench-controller bench-replay bench-simulate

bench-engine:
	@mkdir -p $(BUILD)
	$(ENGINE_BENCH) | tee $(BUILD)/bench-engine.txt
	$(GO) run ./tests/tools/benchdoc -section engine -title "Placement engine" \
	  -cmd "$(ENGINE_BENCH)" \
	  -target BenchmarkPlace1GPU=200us -target BenchmarkPlace256GPULeaf=2ms \
	  -notes "Place*: one placement on a 4,096-node, 32,768-GPU fat tree (4 spines x 16 leaves x 64 DGX H100) filled to 70% by the engine itself with the Philly job mix; targets from issue 2 (1 GPU under 0.2 ms, 256-GPU leaf gang under 2 ms, on one core). SnapshotMemory: cluster-bytes is the live heap of the 4,096-node topology, snapshot-bytes what one occupancy snapshot of it holds (target: under 64 MB). Decode4096: reading that snapshot from JSON, done once per generation outside the placement call." \
	  < $(BUILD)/bench-engine.txt

# The stock Slurm model: its match table against the recorded slurmctld runs
# (written by the test itself), then the cost of one decision.
SLURMMODEL_BENCH = $(GO) test -run '^$$' -bench . -benchmem -benchtime 200x -count 5 -cpu 1 ./selector/slurmmodel

bench-slurmmodel:
	@mkdir -p $(BUILD)
	$(GO) test ./selector/slurmmodel -run TestReference -count=1 -args -matchdoc $(CURDIR)/docs/benchmarks.md
	$(SLURMMODEL_BENCH) | tee $(BUILD)/bench-slurmmodel.txt
	$(GO) run ./tests/tools/benchdoc -section slurmmodel-bench -title "Stock Slurm model: cost of one decision" \
	  -cmd "$(SLURMMODEL_BENCH)" \
	  -notes "Place: 256 DGX H100 nodes (2 spines x 8 leaves x 16), about half of the GPUs busy at random; PlaceWide: 1,213 eight-GPU nodes without NUMA facts (the size of the Alibaba openb cluster), half busy. tree = the slurm policy (topology/tree), flat = slurm-flat (no topology plugin). The model evaluates every node for every decision, as slurmctld does." \
	  < $(BUILD)/bench-slurmmodel.txt

# The sidecar daemon's controller cycle on 4,096 nodes (issue 5): under
# 100 ms per cycle and under 1% of one core at the 5 s interval.
CONTROLLER_BENCH = $(GO) test -run '^$$' -bench . -benchmem -benchtime 10x -count 5 ./cmd/gangtopo/internal/controller

bench-controller:
	@mkdir -p $(BUILD)
	$(CONTROLLER_BENCH) | tee $(BUILD)/bench-controller.txt
	$(GO) run ./tests/tools/benchdoc -section controller -title "Sidecar daemon: controller poll and publish" \
	  -cmd "$(CONTROLLER_BENCH)" \
	  -target BenchmarkControllerCycle4096/Recorded=100ms -target BenchmarkControllerCycle4096/Philly70=100ms \
	  -notes "ControllerCycle4096: one cycle of \`gangtopo daemon --role controller\` (read sinfo --json and squeue --json output, parse, build the snapshot, publish it atomically with two fsyncs, update every metric including the fragmentation gauges) on 4,096 nodes x 8 GPUs. Recorded: the lab's recorded output (shared/data/slurm-22.05-samples) copied 512 times: 1,536 jobs, 512 of them running. Philly70: 64 leaves x 64 DGX H100 filled to 70% with the Philly job mix (about 14,000 running jobs, mostly 1 GPU) plus 2,048 pending and 1,024 completed. The commands run from files: their own cost is slurmctld's and the clients', not the daemon's. cpu-ms/cycle is the daemon process's user+system CPU per cycle (all threads, GC included); cpu-%@5s is that as a share of one core at the default 5 s interval (target: under 1%). The other rows are the stages on their own." \
	  < $(BUILD)/bench-controller.txt

# The Philly trace replayed over time through gangtopo, stock Slurm (tree and
# flat) and naive Kubernetes pods: tables written into docs/benchmarks.md.
bench-replay: build
	tests/tools/bench-replay.sh $(BUILD)/gangtopo docs/benchmarks.md

# The trace simulator (issue 3): the FGD protocol on the openb traces, every
# policy x the paper's 17 workloads x seeds 42-51, plus FGD and gangtopo on
# held-out seeds; rewrites the "simulate" section and docs/simulate.svg.
bench-simulate:
	$(GO) run ./cmd/gangtopo simulate --markdown docs/benchmarks.md --svg docs/simulate.svg --heldout-seeds 1-10

demo: build
	$(BUILD)/gangtopo version

install: build
	install -D -m 0755 $(BUILD)/gangtopo $(DESTDIR)$(BINDIR)/gangtopo

clean:
	rm -rf $(BUILD)
