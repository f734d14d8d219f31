# skiff — build and test. `make test` runs every tier (unit, integration,
# e2e) and needs root once the agent tiers exist; `make test-short` needs
# nothing but Go.
GO        ?= go
BIN       := bin
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT    ?= $(shell git rev-parse HEAD 2>/dev/null)
LDFLAGS   := -X github.com/skiff-lab/skiff/version.Version=$(VERSION) \
	-X github.com/skiff-lab/skiff/version.GitCommit=$(COMMIT) \
	-X github.com/skiff-lab/skiff/version.BuildDate=$(shell date -u +%Y-%m-%dT%H:%M:%SZ)
PKGS      := ./...

# Every go command builds with -trimpath, so that the build cache holds
# the same compiled packages whatever directory a checkout is in: a fresh
# clone (CI's) reuses what the builds before it compiled. Without it, a
# clone elsewhere compiles all of skiff's packages again (about 5 minutes
# more for vet and the test builds alone on the 2-core machine).
export GOFLAGS += -trimpath

# The kubectl the tests use: unmodified k8s.io/kubectl, stamped as its release
# (the conformance suite's e2e.test too: it reads its version to pick the
# Pod Security level's fixtures).
KUBECTL_VERSION := v1.37.2
KUBECTL_LDFLAGS := $(foreach pkg,k8s.io/client-go/pkg/version k8s.io/component-base/version,\
	-X $(pkg).gitVersion=$(KUBECTL_VERSION) -X $(pkg).gitMajor=1 -X $(pkg).gitMinor=37)

.PHONY: build pause kubectl crictl conformance-build conformance test-conformance release test test-short test-chaos test-arm64 test-vm test-vm-arm64 bench bench-vm lint fuzz clean

# The pause program, static, for each architecture skiff ships for: built
# here and committed in cmd/skiff/pause (with the hash of its source, which
# a test checks), so that a plain `go build ./cmd/skiff` or `go install`
# embeds it. Run `make pause` after changing cmd/skiff-pause.
PAUSE_DIR := cmd/skiff/pause
PAUSE_ARCHES := amd64 arm64

build:
	$(GO) build -ldflags "$(LDFLAGS) $(KUBECTL_LDFLAGS)" -o $(BIN)/skiff ./cmd/skiff

pause:
	for arch in $(PAUSE_ARCHES); do \
		CGO_ENABLED=0 GOOS=linux GOARCH=$$arch $(GO) build -trimpath -ldflags "-s -w" -o $(PAUSE_DIR)/skiff-pause-$$arch ./cmd/skiff-pause || exit 1; \
	done
	sha256sum cmd/skiff-pause/main.go | cut -d' ' -f1 > $(PAUSE_DIR)/source.sha256

# Release binaries: static (CGO off), trimmed, stripped, version stamped,
# each with the pause program and kubectl of its architecture.
RELEASE_ARCHES := amd64 arm64
release:
	rm -rf dist && mkdir -p dist
	for arch in $(RELEASE_ARCHES); do \
		CGO_ENABLED=0 GOOS=linux GOARCH=$$arch $(GO) build -trimpath -ldflags "-s -w $(LDFLAGS) $(KUBECTL_LDFLAGS)" -o dist/skiff-linux-$$arch ./cmd/skiff || exit 1; \
	done
	cd dist && sha256sum skiff-linux-* > sha256sums.txt

# crictl, unmodified sigs.k8s.io/cri-tools (Debian 12 has no package of
# it), for `skiff crictl`: put it on PATH or beside skiff.
CRICTL_VERSION := v1.37.0
crictl:
	cd test/crictl && $(GO) build -ldflags "-X sigs.k8s.io/cri-tools/pkg/version.Version=$(CRICTL_VERSION)" -o $(abspath $(BIN))/crictl sigs.k8s.io/cri-tools/cmd/crictl

kubectl:
	cd test/kubectl && $(GO) build -ldflags "$(KUBECTL_LDFLAGS)" -o $(abspath $(BIN))/kubectl .

# Upstream's conformance suite (k8s.io/kubernetes test/e2e at the served
# version) and the ginkgo CLI that runs it, built from the module proxy
# through the helper module in test/conformance.
CONFORMANCE_BIN := $(BIN)/conformance
conformance-build: $(CONFORMANCE_BIN)/e2e.test $(CONFORMANCE_BIN)/ginkgo

$(CONFORMANCE_BIN)/e2e.test: test/conformance/go.mod test/conformance/go.sum
	mkdir -p $(CONFORMANCE_BIN)
	cd test/conformance && $(GO) test -c -ldflags "$(KUBECTL_LDFLAGS)" -o $(abspath $@) k8s.io/kubernetes/test/e2e

$(CONFORMANCE_BIN)/ginkgo: test/conformance/go.mod test/conformance/go.sum
	mkdir -p $(CONFORMANCE_BIN)
	cd test/conformance && $(GO) build -o $(abspath $@) github.com/onsi/ginkgo/v2/ginkgo

# The suite against a lab cluster of a server and two agents, with the
# images it needs built here (test/conformance/run.sh: FOCUS, SKIP, PROCS,
# OUT…); reports in bin/conformance/report. Needs root.
conformance:
	FOCUS='$(FOCUS)' SKIP='$(SKIP)' test/conformance/run.sh

# The CI's subset of the suite (test/conformance/ci-subset.txt, a sample of
# every area skiff claims), time-boxed: it fails on any failure in it.
test-conformance:
	FOCUS_FILE=test/conformance/ci-subset.txt SERIAL=0 PROCS=4 TIMEOUT=12m \
		OUT=$(abspath $(BIN))/conformance/ci-report timeout 30m test/conformance/run.sh

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	cd test/kubectl && $(GO) vet ./...
	cd test/conformance && $(GO) vet ./summary

# go test starts packages' builds and runs in the order they are named: the
# longest (test/e2e alone runs ~17 minutes) go first, so that they do not
# start last on a two-core machine. Each tier says when it starts.
LONG_PKGS := ./test/e2e ./agent ./controlplane
test: lint
	@echo "tier go test: $$(date -u +%T)"
	$(GO) test -count=1 -timeout 60m $(LONG_PKGS) $(PKGS)
	@echo "tier conformance: $$(date -u +%T)"
	$(MAKE) test-conformance
	@echo "tier chaos: $$(date -u +%T)"
	$(MAKE) test-chaos
	@echo "tier fuzz: $$(date -u +%T)"
	$(MAKE) fuzz FUZZTIME=500x
	@echo "tier arm64: $$(date -u +%T)"
	$(MAKE) test-arm64
	@echo "tier vm: $$(date -u +%T)"
	$(MAKE) test-vm
	@echo "tiers done: $$(date -u +%T)"

# The chaos tier (test/chaos): a lab of 3 servers and 2 agents under a
# client's writes through kills, a partition and a full disk, checked for
# lost writes, duplicates and leaks after each; prints its report table.
test-chaos:
	SKIFF_TEST_CHAOS=1 $(GO) test -count=1 -timeout 15m -v -run 'TestChaos$$' ./test/chaos/

# The unit tests of the packages with platform code (syscalls, netlink,
# cgroups, mounts, struct layouts), built for arm64 and run under
# qemu-user, so that arm64-only breakage shows here; cmd/skiff's test
# binary compiles every other package for arm64 too. (All packages' took
# 10 minutes; the control plane's have no platform code.)
ARM64_PKGS := ./agent/... ./cmd/... ./cni/... ./cri/... ./dns/... ./host/... \
	./logging/... ./probes/... ./proxy/... ./version/...
test-arm64:
	CGO_ENABLED=0 GOARCH=arm64 $(GO) test -short -count=1 -exec qemu-aarch64-static $(ARM64_PKGS)

# The VM tier: Debian VMs (test/vm/image.sh) on QEMU, a server and an agent
# installed with skiff install as the Vagrantfile does (test/vm/node.sh).
test-vm: build
	cd test/vm && SKIFF_TEST_VM=1 SKIFF_BINARY=$(abspath $(BIN))/skiff $(GO) test -count=1 -timeout 45m -v -run 'TestVMCluster$$' .

# One arm64 VM (qemu-system-aarch64, TCG: slow) running a pod; the arm64
# binary is built for it.
test-vm-arm64:
	CGO_ENABLED=0 GOARCH=arm64 $(GO) build -ldflags "$(LDFLAGS) $(KUBECTL_LDFLAGS)" -o $(BIN)/skiff-linux-arm64 ./cmd/skiff
	cd test/vm && SKIFF_TEST_VM=1 SKIFF_BINARY=$(abspath $(BIN))/skiff-linux-arm64 $(GO) test -count=1 -timeout 90m -v -run 'TestVMArm64$$' .

test-short:
	$(GO) test -short -count=1 $(PKGS)

bench:
	$(GO) test -run '^$$' -bench . -benchmem -timeout 30m ./controlplane/...

# The VM cluster coming up (boot, install server, install agent), as users run it.
bench-vm: build
	cd test/vm && SKIFF_TEST_VM=1 SKIFF_BINARY=$(abspath $(BIN))/skiff $(GO) test -count=1 -run '^$$' -bench BenchmarkVMCluster -benchtime=1x -timeout 30m .

# Every fuzz target of the repo (each a decoder the outside world reaches;
# its seeds also run in go test), FUZZTIME each (a duration, or a count of
# inputs such as 500x: CI's, since a duration that ends while a target
# still gathers its baseline coverage fails it with "context deadline
# exceeded"). A crash's input is left in the package's testdata/fuzz: it
# becomes a regression case there.
FUZZTIME ?= 60s
fuzz:
	@set -e; for f in $$(grep -rl --include='*_test.go' '^func Fuzz' --exclude-dir=conformance .); do \
		for t in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' $$f); do \
			echo "fuzz: $$t ($$(dirname $$f))"; \
			$(GO) test -run '^$$' -fuzz "^$$t\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 5s $$(dirname $$f)/; \
		done; \
	done

clean:
	rm -rf $(BIN) dist
