# gangtopo: topology-aware, defragmenting GPU placement for Slurm.
#
#   make demo   local emulated Slurm GPU cluster with the plugins, sample gangs, fragmentation report
#   make test   every test: unit, scenario, fuzz seeds, end-to-end on a real Slurm (needs root;
#               fails without it: `make test-partial` runs the rest and says so)
#   make bench  benchmarks; rewrites docs/benchmarks.md
#   make bench-scale  Slurm with hundreds of emulated nodes, plugins on and off (SCALE_NODES; not in
#               make bench or make test, which runs it at 128 nodes)
#
# CI runs .ci/run, which runs `make test` as root on a fresh Debian machine.

GO       ?= go
PREFIX   ?= /usr/local
BINDIR   ?= $(PREFIX)/bin
BUILD    ?= build
VERSION  ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
GOFLAGS_BUILD = -trimpath -ldflags "-X main.version=$(VERSION)"
# go-nvml's cgo bindings use NVML calls its headers mark deprecated; the
# warnings say nothing about gangtopo, so they are silenced.
export CGO_CFLAGS ?= -O2 -g -Wno-deprecated-declarations

.PHONY: e2e-host e2e-host-quota e2e-host-quota-build e2e-trixie e2e-sid e2e-host-build e2e-trixie-build e2e-sid-build e2e-check e2e-prepare roots roots-clean deb record-reference series-check series-plugins
.PHONY: all build test test-partial unit lint browser bench bench-engine bench-stockslurm bench-controller bench-replay bench-simulate demo install clean e2e plugins plugins-fault c-test install-plugins packages build-packages slurm-packages demo-stop bench-slurm bench-slurm-gate bench-slurm-poll bench-slurm-throughput bench-slurm-replay bench-defrag bench-quota bench-headline bench-history bench-failures
.PHONY: bench-scale

all: build

build:
	@mkdir -p $(BUILD)
	$(GO) build $(GOFLAGS_BUILD) -o $(BUILD)/gangtopo ./cmd/gangtopo

# unit + scenario tests (no Slurm needed)
unit:
	$(GO) test ./...

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "lint: gofmt needed:" $$out; exit 1; fi
	$(GO) vet ./...

# make test runs its steps one after another through tests/tools/steps,
# which prints which step runs and how long each took, and ends, on
# failure, with one line naming the step (a Slurm series is a step of its
# own) and why, with the log of each step in $(BUILD)/test-logs. The
# packages come first, once (nothing installs later, or in parallel).
# The series (E2E_STEPS) run E2E_JOBS at a time, in order (on 3: sid, the
# host's tests/e2e and its quota package at once, trixie when one ends; a
# lab mostly waits for Slurm: on 2 lanes make test used 47% of 2 cores), with everything they need built by e2e-prepare
# first (E2E_PREPARED: no series builds while another runs); the output of
# a series comes whole when it ends.
E2E_JOBS ?= 3
STEPS = mkdir -p $(BUILD) && CGO_ENABLED=0 $(GO) build -o $(BUILD)/steps ./tests/tools/steps && \
	E2E_PREPARED=1 $(BUILD)/steps -make "$(MAKE)" -logs $(BUILD)/test-logs -each "$(E2E_STEPS)" -jobs $(E2E_JOBS)
# (the host's series is two steps: tests/e2e, and tests/e2e/quota)
E2E_STEPS = $(patsubst e2e-host,e2e-host e2e-host-quota,$(addprefix e2e-,$(E2E_SLURM)))
test:
	@$(STEPS) -title "make test" packages lint unit c-test browser e2e-check e2e-prepare $(E2E_STEPS)

# test-partial: what runs without root, and says that it is not `make test`
# (it needs a C compiler: cgo, the C tests; as root it installs one).
test-partial: build-packages lint unit c-test
	@echo "make test-partial: PARTIAL: lint, unit and c-test passed; e2e was NOT run (needs root). This is not a pass of make test."

# ---- packages (root; installs only what is missing) ------------------------
# Every apt-get of make goes through tests/tools/packages.sh, which installs
# what is missing and holds a lock around apt-get; `make packages` installs
# all that make test needs, once, before anything runs in parallel (two
# apt-get at once fail on apt's lock: the two Debian roots, made in
# parallel, each installed debootstrap on a fresh machine). The end-to-end
# tests' Go code installs the same lists when run on their own
# (tests/slurmlab: Packages, DBPackages; TestPackageListsAgree).
SLURM_PACKAGES = slurmctld slurmd slurm-client libslurm-dev munge gcc libc6-dev
# the quota tests' accounting (slurmdbd over MariaDB)
DB_PACKAGES    = mariadb-server mariadb-client slurmdbd
# make roots (debootstrap), make deb (fakeroot)
TOOL_PACKAGES  = debootstrap fakeroot
# make browser: the replay's HTML page rendered headless
BROWSER_PACKAGES = chromium
packages:
	@tests/tools/packages.sh $(SLURM_PACKAGES) $(DB_PACKAGES) $(TOOL_PACKAGES) $(BROWSER_PACKAGES)

# the replay's HTML page (replay --html) rendered in a real browser,
# Debian's chromium, headless: its charts must be in the DOM chromium
# parsed and in its screenshot (tests/browser; go test ./... skips it).
# Installs chromium when it is missing (root).
browser:
	@tests/tools/packages.sh $(BROWSER_PACKAGES)
	GANGTOPO_BROWSER=1 $(GO) test -count=1 ./tests/browser/

# what lint, unit and c-test need (cgo and the C tests: a C compiler)
BUILD_PACKAGES = gcc libc6-dev
build-packages:
	@tests/tools/packages.sh $(BUILD_PACKAGES)

# end-to-end tests on real Slurm (tests/slurmlab): needs root; installs what
# it needs first (make packages). For a user who is not root it fails
# (e2e-check), saying so, so that `make test` never looks like a pass
# without them (`make test-partial` runs the rest). E2E_UID is for
# tests/tools/makecheck. Each series is a step of its own (E2E_STEPS), timed
# and named in the last line when it fails.
#
# The suite runs once per Slurm series of E2E_SLURM: host = the host's own
# packages (Debian bookworm: 22.05.8), trixie = 24.11.5 and sid = 26.05.5,
# each from a Debian root under $(ROOTS) (make roots; cached there) whose
# daemons the lab runs chrooted, with the plugins built against that root's
# headers. Each test is named after the release it ran on:
# TestE2E/slurm-24.11.5/GangStaysInOneLeaf. The whole suite runs on the
# host's 22.05 and on the newest series (sid); on trixie the subset
# E2E_RUN_trixie (the tests that touch what differs per series: the JSON the
# controller reads, the job fields the shim reads and writes, job_modify,
# the SPANK remote side, deployment, a gang requeued after a node failure,
# sdiag's text),
# to keep make test within its time.
E2E_UID ?= $(shell id -u)
# (longest first: make test runs them E2E_JOBS at a time, each taking the
# next when one ends)
E2E_SLURM ?= sid host trixie
# E2E_RUN picks tests by name on every series of E2E_SLURM, as go test -run
# does (e.g. E2E_RUN='TestE2E/slurm-.*/Gang'); unset, each series runs
# E2E_RUN_<series>.
E2E_RUN ?=
E2E_RUN_host   ?= .
E2E_RUN_sid    ?= .
# left out on the host's series: the package tests install into a Debian root
# (on the host it would change the host's own plugin directory); the block
# tests need topology/block (23.11+), --segment (24.05+), topology.yaml (25.05+;
# not in E2E_RUN_trixie)
E2E_SKIP_host  ?= TestE2E/slurm-.*/(DebianPackageInstallsAndPlaces|DebianPackageUnderSystemd|DebianPackageUpgradeAsDocumented|DebianPackageRemoveAsDocumented|BlockSliceLandsInSegments|BlockChoiceLeastFragmenting|BlockTopologyYAMLLoads|BlockGangRestartsInItsRack)$$
# left out on sid: the 128-node smoke of the scale harness (tests/slurmscale)
# runs on the host's series only, for make test's time; make bench-scale
# SLURM_SERIES=sid runs the harness there; the fault of restart_at_once
# (StoppedControllerRestartsAtOnceLater) runs on the host's series and on
# trixie, sid being make test's longest step
E2E_SKIP_sid   ?= TestE2E/slurm-.*/(ScaleSmoke128|StoppedControllerRestartsAtOnceLater)$$
E2E_RUN_trixie ?= TestE2E/slurm-.*/(EverySourceGivesOneSnapshot|RequeuedGangRestartsInItsLeaf|DeployingOnACluster|DeployedPathBeatsStockSlurm|GangStaysInOneLeaf|UserUpdateKeepsBinding|RequiredWaitsPreferredGoesWider|InvalidInputRefusedAtSubmit|RemoteContextAcrossLeavesWithoutOption|HetJobComponentsPlaced|ArrayTasksLandPacked|ControllerRebindsStaleJob|BlockSliceLandsInSegments|BlockChoiceLeastFragmenting|BlockGangRestartsInItsRack|SpareReplacesFailedNode|SpareRestartsAtOnce|StoppedControllerRestartsAtOnceLater|ControllerHoldsItsRPCShare|WholeNodeGangWaitsForWholeNodes)$$
e2e_run = $(if $(E2E_RUN),$(E2E_RUN),$(E2E_RUN_$(1)))
e2e:
	@$(STEPS) -title "make e2e" e2e-check packages e2e-prepare $(E2E_STEPS)

e2e-check:
	@if [ "$(E2E_UID)" != 0 ]; then echo "e2e: NOT RUN: it needs root (a real slurmctld and slurmd). This is not a pass:" \
	  "run make test as root (CI does), or make test-partial for what runs without root (it says it is partial)." >&2; exit 1; fi

# what every series needs, built before any series runs (make test runs the
# series side by side, E2E_JOBS at a time: none of them builds then):
# gangtopo, the Debian roots of the series other than the host's, and each
# series' plugins (e2e-<series>-build). Run on its own, a series builds what
# it needs first.
e2e-prepare:
	@$(MAKE) --no-print-directory build $(if $(filter-out host,$(E2E_SLURM)),roots ROOT_SUITES="$(filter-out host,$(E2E_SLURM))")
	@$(MAKE) --no-print-directory $(addsuffix -build,$(E2E_STEPS))

# one series: the plugins for it, then the suite against its lab. The quota
# tests and the queue model's timing check (tests/e2e/quota: slurmdbd over
# MariaDB from the host's packages; about 6 minutes) run on the host's series
# only: the Debian roots carry no slurmdbd. -p 1: one package at a time
# within a series (each starts a lab; labs side by side claim disjoint
# ports: tests/slurmlab, claimPorts).
E2E_GO_TEST = GANGTOPO_E2E=1 GANGTOPO_BIN=$(abspath $(BUILD)/gangtopo) $(GO) test -p 1 -count=1 -timeout 25m -v
e2e_build = $(if $(E2E_PREPARED),,$(1)-build)
e2e-host-build: slurm-packages plugins plugins-fault build
e2e-host: $(call e2e_build,e2e-host)
	GANGTOPO_PLUGINS=$(abspath $(PLUGIN_BUILD)) GANGTOPO_FAULT_PLUGINS=$(abspath $(PLUGIN_BUILD)-fault) $(E2E_GO_TEST) ./tests/e2e/ -run '$(call e2e_run,host)' -skip '$(E2E_SKIP_host)'

# the host's series, its second package (a step of its own, so that it runs
# beside the first in make test)
e2e-host-quota-build: e2e-host-build
e2e-host-quota: $(call e2e_build,e2e-host-quota)
	GANGTOPO_PLUGINS=$(abspath $(PLUGIN_BUILD)) GANGTOPO_FAULT_PLUGINS=$(abspath $(PLUGIN_BUILD)-fault) $(E2E_GO_TEST) ./tests/e2e/quota/ -run '$(call e2e_run,host)' -skip '$(E2E_SKIP_host)'

e2e-trixie-build: slurm-packages build
	$(MAKE) --no-print-directory plugins plugins-fault SLURM_INCLUDE=$(ROOTS)/trixie/usr/include PLUGIN_BUILD=$(BUILD)/plugins-trixie
e2e-trixie: $(call e2e_build,e2e-trixie)
	GANGTOPO_SLURM_ROOT=$(abspath $(ROOTS)/trixie) GANGTOPO_PLUGINS=$(abspath $(BUILD)/plugins-trixie) \
	  GANGTOPO_FAULT_PLUGINS=$(abspath $(BUILD)/plugins-trixie-fault) $(E2E_GO_TEST) ./tests/e2e/ -run '$(call e2e_run,trixie)'

# (on sid also the Debian packages for sid's release and for the host's, which
# DebianPackageInstallsAndPlaces installs into the root, and a later version
# of sid's, built apart in $(BUILD)/next, which the upgrade tests install
# over it)
e2e-sid-build: slurm-packages build
	$(MAKE) --no-print-directory plugins plugins-fault SLURM_INCLUDE=$(ROOTS)/sid/usr/include PLUGIN_BUILD=$(BUILD)/plugins-sid
	rm -rf $(BUILD)/deb-e2e && $(MAKE) --no-print-directory deb DEB_OUT=$(BUILD)/deb-e2e SLURM_INCLUDE=$(ROOTS)/sid/usr/include \
	  PLUGIN_BUILD=$(BUILD)/plugins-sid && $(MAKE) --no-print-directory deb DEB_OUT=$(BUILD)/deb-e2e
	rm -rf $(BUILD)/deb-e2e-next && $(MAKE) --no-print-directory deb BUILD=$(BUILD)/next VERSION=$(VERSION)-next DEB_VERSION=$(DEB_VERSION).1 \
	  DEB_OUT=$(abspath $(BUILD)/deb-e2e-next) SLURM_INCLUDE=$(ROOTS)/sid/usr/include PLUGIN_BUILD=$(abspath $(BUILD)/plugins-sid)
e2e-sid: $(call e2e_build,e2e-sid)
	GANGTOPO_DEB_DIR=$(abspath $(BUILD)/deb-e2e) GANGTOPO_DEB_NEXT_DIR=$(abspath $(BUILD)/deb-e2e-next) \
	  GANGTOPO_SLURM_ROOT=$(abspath $(ROOTS)/sid) GANGTOPO_PLUGINS=$(abspath $(BUILD)/plugins-sid) \
	  GANGTOPO_FAULT_PLUGINS=$(abspath $(BUILD)/plugins-sid-fault) $(E2E_GO_TEST) ./tests/e2e/ -run '$(call e2e_run,sid)' -skip '$(E2E_SKIP_sid)'

# ---- Debian roots with newer Slurm series (tests only) ----------------------
# debootstrap --variant=minbase of each suite with Slurm's daemons, clients,
# munge and headers (about 2 minutes and 300 MB each here), cached: a root
# is made once and reused until `make roots-clean`. rm --one-file-system:
# an interrupted debootstrap may leave /proc mounted in its directory.
ROOTS         ?= $(BUILD)/roots
ROOT_SUITES   ?= trixie sid
ROOT_PACKAGES  = slurmctld,slurmd,munge,slurm-client,libslurm-dev
# The Debian mirror the roots come from: the one this machine's apt sources
# name for its own release (tests/tools/debian-mirror.sh), so that a site
# with its own mirror or behind a proxy needs no setting; DEBIAN_MIRROR=URL
# overrides. An HTTP proxy set in apt's configuration (Acquire::http::Proxy)
# serves debootstrap too, unless http_proxy is set. (Expanded once, on
# first use.)
DEBIAN_MIRROR ?= $(eval DEBIAN_MIRROR := $(shell tests/tools/debian-mirror.sh))$(DEBIAN_MIRROR)

# debootstrap is installed here, once, before the roots are made in parallel
roots:
	@tests/tools/packages.sh debootstrap
	@test -n "$(DEBIAN_MIRROR)" || { echo "roots: no Debian mirror: this machine's apt sources name none for its release" \
	  "(tests/tools/debian-mirror.sh); give one: make roots DEBIAN_MIRROR=http://<your Debian mirror>/debian" >&2; exit 2; }
	@pids=; for s in $(ROOT_SUITES); do $(MAKE) --no-print-directory $(ROOTS)/$$s/.gangtopo-root DEBIAN_MIRROR="$(DEBIAN_MIRROR)" & pids="$$pids $$!"; done; \
	  rc=0; for p in $$pids; do wait $$p || rc=1; done; exit $$rc

$(ROOTS)/%/.gangtopo-root:
	@command -v debootstrap >/dev/null || { echo "roots: debootstrap is not installed (make roots installs it first)" >&2; exit 2; }
	@echo "roots: making the $* root from $(DEBIAN_MIRROR) (debootstrap, about 2 minutes)"; mkdir -p $(ROOTS)
	@for m in $$(awk '{print $$2}' /proc/mounts | grep "^$(abspath $(ROOTS))/$*.tmp/" | sort -r); do umount -l "$$m"; done; \
	  rm -rf --one-file-system $(ROOTS)/$*.tmp
	@t0=$$(date +%s); eval "$$(apt-config shell APT_PROXY Acquire::http::Proxy 2>/dev/null)"; \
	  if [ -z "$${http_proxy:-}" ] && [ -n "$${APT_PROXY:-}" ]; then export http_proxy="$$APT_PROXY"; fi; \
	  debootstrap --variant=minbase --include=$(ROOT_PACKAGES) $* $(ROOTS)/$*.tmp $(DEBIAN_MIRROR) \
	  > $(ROOTS)/$*.log 2>&1 || { tail -20 $(ROOTS)/$*.log; echo "roots: debootstrap $* from $(DEBIAN_MIRROR) failed (log: $(ROOTS)/$*.log;" \
	    "another mirror: make roots DEBIAN_MIRROR=URL)" >&2; exit 1; }; \
	  echo "127.0.0.1 localhost" > $(ROOTS)/$*.tmp/etc/hosts; \
	  rm -rf --one-file-system $(ROOTS)/$*; mv $(ROOTS)/$*.tmp $(ROOTS)/$*; \
	  echo "$(ROOT_PACKAGES)" > $@; echo "roots: $* made in $$(( $$(date +%s) - t0 )) s: Slurm $$(c/slurm-release.sh header $(ROOTS)/$*/usr/include)"

roots-clean:
	@for s in $(ROOT_SUITES); do rm -rf --one-file-system $(ROOTS)/$$s $(ROOTS)/$$s.tmp; done

# ---- Slurm plugins (c/ and spank/) -----------------------------------------
# Built against the installed Slurm headers (SLURM_INCLUDE: the directory
# holding slurm/slurm.h), for the release they are: a job_submit plugin loads
# only into the exact release it was built for, a SPANK plugin into its
# series (docs/admin.md, "Slurm series"). c/slurm-release.sh reads the
# release from slurm_version.h and refuses series outside 22.05-26.05;
# $(PLUGIN_BUILD)/slurm-release records it, and install checks it against
# the Slurm installed here.
SLURM_INCLUDE    ?= /usr/include
# Where Slurm loads plugins from: slurm.conf's PluginDir, which differs
# between builds (Debian's packages: /usr/lib/x86_64-linux-gnu/slurm-wlm; a
# source build: <prefix>/lib/slurm). Taken from the running cluster's
# configuration unless given; install-plugins stops when neither says.
# (Expanded once, on first use: make test never asks.)
SLURM_PLUGIN_DIR ?= $(eval SLURM_PLUGIN_DIR := $(shell timeout 10 scontrol show config 2>/dev/null | awk '$$1 == "PluginDir" { split($$3, d, ":"); print d[1] }'))$(SLURM_PLUGIN_DIR)
PLUGIN_BUILD     ?= $(BUILD)/plugins
# The system image whose Slurm install-plugins checks the build against
# (default: this host; the e2e deploy test gives a Debian root of make roots).
SLURM_ROOT       ?= /
CC               ?= cc
HARDEN_CFLAGS    = -fstack-protector-strong -D_FORTIFY_SOURCE=2 -fPIC
HARDEN_LDFLAGS   = -Wl,-z,now -Wl,-z,relro -Wl,-z,noexecstack
PLUGIN_CFLAGS    = -std=gnu11 -O2 -g -Wall -Wextra -Werror $(HARDEN_CFLAGS) -I$(SLURM_INCLUDE) -Ic
SPANK_SRC        = c/spank_gangtopo.c c/spank_client.c c/spank_remote.c c/gangtopo_option.c c/gangtopo_nodefile.c c/gangtopo_quote.c
SPANK_HDR        = c/spank_gangtopo.h c/gangtopo_option.h c/gangtopo_nodefile.h c/gangtopo_quote.h c/gangtopo_slurm.h
JOBSUBMIT_SRC    = c/job_submit_gangtopo.c c/gangtopo_channel.c c/gangtopo_scope.c c/gangtopo_quote.c
JOBSUBMIT_HDR    = c/gangtopo_abi.h c/gangtopo_channel.h c/gangtopo_scope.h c/gangtopo_quote.h c/gangtopo_slurm.h
GO_CSHARED       = $(GO) build -buildmode=c-shared -trimpath \
	-ldflags "-extldflags '-Wl,--version-script=$(abspath c/libgangtopo.lds) $(HARDEN_LDFLAGS)'"

plugins: $(PLUGIN_BUILD)/spank_gangtopo.so $(PLUGIN_BUILD)/job_submit_gangtopo.so

# The release the headers are, recorded; rewritten (and the shims rebuilt)
# only when it changes. Fails, saying why, for missing or unsupported headers.
.PHONY: FORCE
$(PLUGIN_BUILD)/slurm-release: FORCE
	@mkdir -p $(PLUGIN_BUILD)
	@r=$$(c/slurm-release.sh header $(SLURM_INCLUDE)) || exit 2; \
	  if [ "$$(cat $@ 2>/dev/null)" != "$$r" ]; then echo "$$r" > $@; echo "plugins: building for Slurm $$r (headers in $(SLURM_INCLUDE))"; fi

# The same job_submit plugin over a libgangtopo built with the fault hooks of
# spank/ctld/fault_inject.go (tag gangtopo_faultinject): e2e fault tests only.
plugins-fault: $(PLUGIN_BUILD)/spank_gangtopo.so $(PLUGIN_BUILD)-fault/libgangtopo.so
	cp $(PLUGIN_BUILD)/slurm-release $(PLUGIN_BUILD)-fault/
	$(CC) $(PLUGIN_CFLAGS) -shared -o $(PLUGIN_BUILD)-fault/job_submit_gangtopo.so $(JOBSUBMIT_SRC) \
	  -L$(PLUGIN_BUILD)-fault -lgangtopo -Wl,-rpath,'$$ORIGIN' -Wl,--version-script=c/job_submit_gangtopo.lds $(HARDEN_LDFLAGS)
	cp $(PLUGIN_BUILD)/spank_gangtopo.so $(PLUGIN_BUILD)-fault/

.PHONY: $(PLUGIN_BUILD)-fault/libgangtopo.so
$(PLUGIN_BUILD)-fault/libgangtopo.so:
	@mkdir -p $(PLUGIN_BUILD)-fault
	$(GO_CSHARED) -tags gangtopo_faultinject -o $@ ./spank/libgangtopo

$(PLUGIN_BUILD)/spank_gangtopo.so: $(SPANK_SRC) $(SPANK_HDR) c/spank_gangtopo.lds $(PLUGIN_BUILD)/slurm-release
	$(CC) $(PLUGIN_CFLAGS) -shared -o $@ $(SPANK_SRC) -Wl,--version-script=c/spank_gangtopo.lds $(HARDEN_LDFLAGS)

# libgangtopo.so: go decides what is stale, so it is always asked.
.PHONY: $(PLUGIN_BUILD)/libgangtopo.so
$(PLUGIN_BUILD)/libgangtopo.so:
	@mkdir -p $(PLUGIN_BUILD)
	$(GO_CSHARED) -o $@ ./spank/libgangtopo

$(PLUGIN_BUILD)/job_submit_gangtopo.so: $(JOBSUBMIT_SRC) $(JOBSUBMIT_HDR) c/job_submit_gangtopo.lds $(PLUGIN_BUILD)/libgangtopo.so $(PLUGIN_BUILD)/slurm-release
	$(CC) $(PLUGIN_CFLAGS) -shared -o $@ $(JOBSUBMIT_SRC) -L$(PLUGIN_BUILD) -lgangtopo \
	  -Wl,-rpath,'$$ORIGIN' -Wl,--version-script=c/job_submit_gangtopo.lds $(HARDEN_LDFLAGS)

# unit tests of the plugins' C parts: the parsers; the pipe protocol against
# a fake server and against the real libgangtopo (fault build, no Slurm
# needed), both under AddressSanitizer, so that a job or answer block used
# after its free, freed twice or never freed fails
C_TEST_ASAN = $(CC) -std=gnu11 -O1 -g -Wall -Wextra -Werror -fsanitize=address,undefined -fno-omit-frame-pointer -pthread

c-test: $(PLUGIN_BUILD)-fault/libgangtopo.so
	@mkdir -p $(BUILD)
	$(CC) -std=gnu11 -O1 -g -Wall -Wextra -Werror $(HARDEN_CFLAGS) -o $(BUILD)/test_c c/tests/test_c.c c/gangtopo_option.c c/gangtopo_nodefile.c c/gangtopo_scope.c c/gangtopo_quote.c
	$(BUILD)/test_c
	$(C_TEST_ASAN) -o $(BUILD)/test_channel c/tests/test_channel.c c/gangtopo_channel.c
	$(BUILD)/test_channel
	$(C_TEST_ASAN) -o $(BUILD)/test_lib c/tests/test_lib.c c/gangtopo_channel.c \
	  -L$(PLUGIN_BUILD)-fault -lgangtopo -Wl,-rpath,$(abspath $(PLUGIN_BUILD)-fault)
	$(BUILD)/test_lib docs/examples/lab16.yaml

# the Slurm packages the plugins build against and the lab runs (root; only
# what is missing)
slurm-packages:
	@tests/tools/packages.sh $(SLURM_PACKAGES)

# the plugins: libgangtopo.so goes next to job_submit_gangtopo.so (found
# through its $$ORIGIN run path). install(1) replaces each file by a new one
# (the old is unlinked, not overwritten), so a running slurmctld keeps the
# objects it has loaded; never cp over a loaded .so.
install-plugins: plugins
	@built=$$(cat $(PLUGIN_BUILD)/slurm-release); here=$$(c/slurm-release.sh installed $(SLURM_ROOT)); \
	  if [ -n "$$here" ] && [ "$$here" != "$$built" ]; then echo "install-plugins: the plugins in $(PLUGIN_BUILD) are built for Slurm $$built," \
	    "but this host runs Slurm $$here, which would refuse them (a job_submit plugin loads only into the release it was built for):" \
	    "rebuild for $$here with its headers (make plugins SLURM_INCLUDE=<dir holding its slurm/slurm.h>, or install its libslurm-dev), then make install" >&2; exit 2; fi
	@test -n "$(SLURM_PLUGIN_DIR)" || { echo "install-plugins: SLURM_PLUGIN_DIR is not set and scontrol show config does not say: give your Slurm's PluginDir, e.g. make install-plugins SLURM_PLUGIN_DIR=/usr/lib/x86_64-linux-gnu/slurm-wlm"; exit 2; }
	install -D -m 0755 $(PLUGIN_BUILD)/spank_gangtopo.so $(DESTDIR)$(SLURM_PLUGIN_DIR)/spank_gangtopo.so
	install -D -m 0755 $(PLUGIN_BUILD)/job_submit_gangtopo.so $(DESTDIR)$(SLURM_PLUGIN_DIR)/job_submit_gangtopo.so
	install -D -m 0755 $(PLUGIN_BUILD)/libgangtopo.so $(DESTDIR)$(SLURM_PLUGIN_DIR)/libgangtopo.so

# Engine figures on one core (GOMAXPROCS=1), median of 5 runs, written into
# docs/benchmarks.md. Other sections are added by their own targets.
ENGINE_BENCH = $(GO) test -run '^$$' -bench . -benchmem -count 5 -cpu 1 ./selector/place ./selector/intranode ./selector/frag ./selector/occupancy

bench: bench-engine bench-stockslurm bench-controller bench-replay bench-defrag bench-quota bench-headline bench-simulate bench-history bench-failures

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
STOCKSLURM_BENCH = $(GO) test -run '^$$' -bench . -benchmem -benchtime 200x -count 5 -cpu 1 ./selector/sim/stockslurm

bench-stockslurm:
	@mkdir -p $(BUILD)
	$(GO) test ./selector/sim/stockslurm -run TestReference -count=1 -args -matchdoc $(CURDIR)/docs/benchmarks.md
	$(STOCKSLURM_BENCH) | tee $(BUILD)/bench-stockslurm.txt
	$(GO) run ./tests/tools/benchdoc -section stockslurm-bench -title "Stock Slurm model: cost of one decision" \
	  -cmd "$(STOCKSLURM_BENCH)" \
	  -notes "Place: 256 DGX H100 nodes (2 spines x 8 leaves x 16), about half of the GPUs busy at random; PlaceWide: 1,213 eight-GPU nodes without NUMA facts (the size of the Alibaba openb cluster), half busy. tree = the slurm policy (topology/tree), flat = slurm-flat (no topology plugin). The model evaluates every node for every decision, as slurmctld does." \
	  < $(BUILD)/bench-stockslurm.txt

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

# Defragmentation in the replay (issue 14): the controller's policy with
# and without, on the deployed path and the engine, on 256 DGX H100 and the
# heterogeneous cluster: the "defrag" section of docs/benchmarks.md.
bench-defrag: build
	tests/tools/bench-defrag.sh $(BUILD)/gangtopo docs/benchmarks.md

# Dynamic quotas in the replay (issue 15): no quotas, Slurm's hard limits
# and gangtopo's dynamic quotas on the deployed path and the engine, Philly
# on 256 DGX H100 with four accounts: the "quota" section of
# docs/benchmarks.md.
bench-quota: build
	tests/tools/bench-quota.sh $(BUILD)/gangtopo docs/benchmarks.md

# Node failures in the replay (issue 26): restart wait and tier reached by
# the gangs a failure requeued, stock Slurm against gangtopo: the
# "failures" section of docs/benchmarks.md.
bench-failures: build
	tests/tools/bench-failures.sh $(BUILD)/gangtopo docs/benchmarks.md

# The seed's headline (issue 23): the load a cluster sustains, and the
# GPU-hours it strands, under static per-team partitions, stock Slurm with
# and without hard limits, and gangtopo with dynamic quotas and
# defragmentation, at the grounded slowdown's three bands: the "headline"
# section of docs/benchmarks.md.
# A fortnight of the trace by default (7 min here); HEADLINE_WINDOW= (empty)
# and HEADLINE_ACCOUNTS=15 replay the whole trace (hours on a few CPUs).
HEADLINE_WINDOW   ?= --from 2017-09-25 --to 2017-10-09
HEADLINE_ACCOUNTS ?= 12
bench-headline: build
	HEADLINE_WINDOW="$(HEADLINE_WINDOW)" HEADLINE_ACCOUNTS=$(HEADLINE_ACCOUNTS) tests/tools/bench-headline.sh $(BUILD)/gangtopo docs/benchmarks.md

# The queue model against what really happened (issue 23): 500 sleep jobs
# through the lab's slurmctld with slurmdbd over MariaDB (about 15
# minutes; needs root), dumped with sacct, replayed under the slurm model
# with --check-starts: the "history" section of docs/benchmarks.md. make
# test runs a 100-job version (tests/e2e/quota/history_test.go).
bench-history: slurm-packages plugins build
	$(GO) build -o $(BUILD)/slurmbench ./tests/slurmbench
	GANGTOPO_PLUGINS=$(abspath $(PLUGIN_BUILD)) tests/tools/bench-history.sh $(BUILD) docs/benchmarks.md

# The trace simulator (issue 3): the FGD protocol on the openb traces, every
# policy x the paper's 17 workloads x seeds 42-51, plus FGD and gangtopo on
# held-out seeds; rewrites the "simulate" section and docs/simulate.svg.
bench-simulate:
	$(GO) run ./cmd/gangtopo simulate --markdown docs/benchmarks.md --svg docs/simulate.svg --heldout-seeds 1-10

# The plugins inside a real slurmctld, figures into docs/benchmarks.md (not
# part of make test; about 30 minutes): the plugin's time per call on a
# 1,000-node snapshot (Go benchmark), sbatch throughput with and without the
# plugins (500 jobs each), and the stock-Slurm reference sequences replayed
# (BENCH_REPLAY_RUNS, BENCH_REPLAY_STOCK: which runs to replay, and to replay
# without the plugins too).
#
# SLURM_SERIES picks the Slurm the lab benchmarks (throughput, replay) and
# record-reference run on: host (the host's own packages, the default), or a
# Debian root of make roots (trixie: 24.11.5, sid: 26.05.5), its daemons
# chrooted, the plugins built against its headers in $(BUILD)/plugins-<series>
# as make e2e-<series> does. Each series' figures get rows or a section of
# their own (tests/slurmbench/series.go): e.g. make bench-slurm-throughput
# SLURM_SERIES=sid. bench-slurm-gate is an in-process Go benchmark (no
# Slurm): the same on every series.
SLURM_SERIES ?= host
SLURM_SERIES_KNOWN = host trixie sid
ifeq ($(SLURM_SERIES),host)
SERIES_ENV     =
SERIES_PLUGINS = $(PLUGIN_BUILD)
# (the 22.05.8 recording beside the sequences)
SERIES_RECORDED = ../shared/data/slurm-22.05-reference
BENCH_REPLAY_RUNS  ?= plain,pernode,plain_off2,pernode_off2
else
SERIES_ENV     = GANGTOPO_SLURM_ROOT=$(abspath $(ROOTS)/$(SLURM_SERIES))
SERIES_PLUGINS = $(BUILD)/plugins-$(SLURM_SERIES)
# the series' own recording (make record-reference): the runs it holds
SERIES_RECORDED = $(STOCKSLURM_TESTDATA)/slurm-$$(c/slurm-release.sh header $(ROOTS)/$(SLURM_SERIES)/usr/include)
BENCH_REPLAY_RUNS  ?= $(RECORD_RUNS)
endif
# BENCH_LABEL names the design a throughput run measures: its row in the
# every-run table (docs/bench/slurm-throughput-runs.csv).
BENCH_LABEL        ?= as built
BENCH_REPLAY_STOCK ?= plain
GATE_BENCH = $(GO) test -run '^$$' -bench Submit1000Nodes -benchmem -count 5 -cpu 2 ./spank/ctld

bench-slurm: bench-slurm-gate bench-slurm-throughput bench-slurm-replay

bench-slurm-gate:
	@mkdir -p $(BUILD)
	$(GATE_BENCH) | tee $(BUILD)/bench-gate.txt
	$(GO) run ./tests/tools/benchdoc -section slurm-plugin-latency -title "Slurm plugin: time per call on a 1,000-node snapshot" \
	  -cmd "$(GATE_BENCH)" \
	  -notes "ctld.Gate.Submit as job_submit/gangtopo runs it inside slurmctld (scope, request, snapshot, the engine under its deadline in its own goroutine, the rewrite), called from an ordinary goroutine as libgangtopo's answering goroutine is (the engine's goroutine may run on another thread: hand-offs included), on a 1,000-node fat tree (2 spines x 10 leaves x 50 DGX H100, 8,000 GPUs) filled to 70% by the engine with the Philly mix; jobs drawn from the same mix, 16 and 32 GPUs as leaf gangs. p50/p99/max-us: the distribution of single calls, median over the runs (target: p99 under 2 ms). The machine is a shared 2-core VM: compare runs of one session. This measures the engine and the Go side of the plugin in process, without Slurm: it is the same on every Slurm series and is not run per series (the per-series figures of the plugin inside slurmctld are in the throughput section below)." \
	  < $(BUILD)/bench-gate.txt

# Slurm at the size of a site (issue 24; not part of make test, about 5 to
# 15 minutes a size): for each of SCALE_NODES a lab of that many emulated
# nodes (a fat tree, 8 GPUs each), held jobs with and without the plugins,
# a fill, then each of SCALE_BACKLOGS (comma separated: 2000,20000) as a backlog with the plugins and
# without under a stream of submissions, the controller and its duties
# beside it; each size's figures go to docs/bench/scale/ and the tables
# into docs/benchmarks.md ("slurm-scale"). SCALE_LOCK prefixes each size's
# run (e.g. "flock /work/.lablock" where labs share a machine).
# SCALE_RPC_SHARE (percent) runs the controller with --max-rpc-share: its
# figures go to files and rows of their own. make test
# runs the same harness at 128 nodes (TestE2E/.../ScaleSmoke128).
SCALE_NODES    ?= 256 512 1024
SCALE_BACKLOGS ?= 2000
SCALE_WINDOW   ?= 60s
SCALE_LOCK     ?=
SCALE_RPC_SHARE ?= 0
bench-scale: series-plugins build
	$(GO) build -o $(BUILD)/slurmscale ./tests/slurmscale/cmd/slurmscale
	@fail=; for n in $(SCALE_NODES); do \
	  echo "bench-scale: $$n nodes"; \
	  $(SERIES_ENV) $(SCALE_LOCK) $(BUILD)/slurmscale run -nodes $$n -backlogs $(SCALE_BACKLOGS) -window $(SCALE_WINDOW) -max-rpc-share $(SCALE_RPC_SHARE) \
	    -plugins $(abspath $(SERIES_PLUGINS)) -bin $(abspath $(BUILD)/gangtopo) || fail="$$fail $$n"; done; \
	  if [ -n "$$fail" ]; then echo "bench-scale: FAILED at$$fail nodes (figures kept, tables written)" >&2; exit 1; fi

# What the controller's poll (sinfo/squeue --json) costs on the lab's
# slurmctld: the "slurm-poll" section (whether slurmrestd is worth it).
bench-slurm-poll: slurm-packages
	$(GO) build -o $(BUILD)/slurmlab ./tests/slurmlab/cmd/slurmlab
	tests/tools/bench-poll.sh $(BUILD)/slurmlab docs/benchmarks.md

# the series is one make knows, and its plugins are built for it
series-check:
	@case " $(SLURM_SERIES_KNOWN) " in *" $(SLURM_SERIES) "*) ;; *) echo "SLURM_SERIES=$(SLURM_SERIES): unknown series" \
	  "(want one of $(SLURM_SERIES_KNOWN): host = this host's Slurm packages, the others Debian roots made by make roots)" >&2; exit 2;; esac

series-plugins: series-check slurm-packages
ifeq ($(SLURM_SERIES),host)
	@$(MAKE) --no-print-directory plugins
else
	@$(MAKE) --no-print-directory roots ROOT_SUITES=$(SLURM_SERIES)
	@$(MAKE) --no-print-directory plugins SLURM_INCLUDE=$(ROOTS)/$(SLURM_SERIES)/usr/include PLUGIN_BUILD=$(SERIES_PLUGINS)
endif

bench-slurm-throughput: series-plugins build
	$(GO) build -o $(BUILD)/slurmbench ./tests/slurmbench
	$(SERIES_ENV) GANGTOPO_PLUGINS=$(abspath $(SERIES_PLUGINS)) GANGTOPO_BIN=$(abspath $(BUILD)/gangtopo) $(BUILD)/slurmbench throughput -n 500 -label "$(BENCH_LABEL)"

# (TestDeployedMatchesTheLab reads the host's step files, docs/bench/replay-*:
# it runs after a replay on the host's series only)
bench-slurm-replay: series-plugins build
	$(GO) build -o $(BUILD)/slurmbench ./tests/slurmbench
	$(SERIES_ENV) GANGTOPO_PLUGINS=$(abspath $(SERIES_PLUGINS)) GANGTOPO_BIN=$(abspath $(BUILD)/gangtopo) $(BUILD)/slurmbench replay \
	  -runs $(BENCH_REPLAY_RUNS) -stock "$(BENCH_REPLAY_STOCK)" -recorded $(SERIES_RECORDED)
ifeq ($(SLURM_SERIES),host)
	$(GO) test ./selector/sim/deployed -run TestDeployedMatchesTheLab -count=1 -args -matchdoc $(CURDIR)/docs/benchmarks.md
endif

# Stock Slurm's own behaviour on a series, recorded as test data: the
# Reference 1 sequences (RECORD_RUNS) driven through the lab with nothing of
# gangtopo loaded, each run on a fresh cluster, written in the reference's
# files and columns to $(STOCKSLURM_TESTDATA)/slurm-<release>/ with a README
# (tests/slurmbench/record.go); then the slurm model is checked against every
# recording there (TestReferenceSeries, at least 98% reproduced). About 5
# minutes a run. E.g. make record-reference SLURM_SERIES=sid.
STOCKSLURM_TESTDATA = selector/sim/stockslurm/testdata
RECORD_RUNS ?= plain,pernode
record-reference: series-check slurm-packages
	$(if $(filter-out host,$(SLURM_SERIES)),@$(MAKE) --no-print-directory roots ROOT_SUITES=$(SLURM_SERIES))
	$(GO) build -o $(BUILD)/slurmbench ./tests/slurmbench
	$(SERIES_ENV) $(BUILD)/slurmbench record -runs $(RECORD_RUNS) -out $(STOCKSLURM_TESTDATA)
	$(GO) test ./selector/sim/stockslurm -run TestReferenceSeries -count=1 -v

# The README's main command: a local 16-node Slurm GPU cluster with the
# plugins, a mixed workload, the fragmentation report before and after.
demo: slurm-packages build plugins
	$(GO) build -o $(BUILD)/slurmlab ./tests/slurmlab/cmd/slurmlab
	BUILD=$(abspath $(BUILD)) tests/slurmlab/demo/demo.sh

demo-stop:
	@dir=$$(cat .lab/demo-dir 2>/dev/null || echo $(abspath .lab/demo)); \
	if [ -f "$$dir/run/pids" ]; then $(GO) run ./tests/slurmlab/cmd/slurmlab down --dir "$$dir" && echo "demo cluster stopped"; \
	else echo "no demo cluster running"; fi

# The Debian package for the Slurm release of SLURM_INCLUDE's headers, named
# after it: $(DEB_OUT)/gangtopo_<version>+slurm<release>_amd64.deb
# (c/make-deb.sh says what it holds and how it pins the release; docs/admin.md,
# "Installing the Debian package"). E.g. for Debian sid's Slurm 26.05:
# make deb SLURM_INCLUDE=build/roots/sid/usr/include PLUGIN_BUILD=build/plugins-sid
DEB_VERSION ?= $(shell printf '0.%s.g%s' "$$(git rev-list --count HEAD 2>/dev/null || echo 0)" "$$(git rev-parse --short HEAD 2>/dev/null || echo 0)")
DEB_OUT     ?= $(BUILD)/deb
deb: plugins build
	@tests/tools/packages.sh fakeroot
	@c/make-deb.sh $(PLUGIN_BUILD) $(BUILD)/gangtopo $(DEB_OUT) $(DEB_VERSION)

install: build install-plugins
	install -D -m 0755 $(BUILD)/gangtopo $(DESTDIR)$(BINDIR)/gangtopo

clean:
	rm -rf $(BUILD)
