# gocoll: make demo runs a local 4-rank job, make test runs the test suite.
GO      ?= go
BIN     := bin
RANKS   ?= 4
# The packages whose goroutines share state, and package race, which
# reports to the detector what it cannot see. codec's and the kernels'
# arithmetic is pure functions, tested without the detector in test-all;
# test-race runs only the kernels' test that the detector sees their
# assembly's accesses. collective comes first: go test starts packages'
# tests in the order given, two at a time on two CPUs, and collective's
# take the longest (104 s of the 269 s all took, on a Zen 3 VM): listed
# fifth, it started a minute in and ran alone at the end. The race run
# took 2 min 53 s so, and 1 min 59 s with collective first (2026-11-29).
RACE_PKGS := ./collective/... ./internal/transport/... ./comm/... ./internal/core/... ./internal/rendezvous/... ./internal/timeline/... ./internal/race/... ./internal/hugepage/...

.PHONY: all build benchtool demo test fmt-check vet test-race test-all test-tools cross fuzz bench gobench clean

all: build

build:
	$(GO) build -o $(BIN)/gocoll ./cmd/gocoll
	$(GO) build -o $(BIN)/allreduce ./examples/allreduce
	$(GO) build -o $(BIN)/exchange ./examples/exchange
	$(GO) build -o $(BIN)/workerpool ./examples/workerpool
	$(GO) build -o $(BIN)/train ./examples/train
	$(GO) build -o $(BIN)/sweep ./examples/sweep

# benchtool (compare, plot, model) is in the tools module, so that the
# library's users never download its plotting and linear algebra.
benchtool:
	cd tools && $(GO) build -o ../$(BIN)/benchtool ./benchtool

# A 4-rank job in local processes, linked through shared memory: every rank averages a gradient
# with one Allreduce and prints it, then rank 0 prints the bandwidth of
# 16 MiB allreduces and, from the communicator's counts, the algorithm and
# transport of each collective it called.
demo: build
	$(BIN)/gocoll run -n $(RANKS) $(BIN)/allreduce

test: fmt-check vet test-race test-all test-tools

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...
	cd tools && $(GO) vet ./...

# -short: the race run leaves out the tests that start processes (and
# build the gocoll command to do so), whose other processes the detector
# cannot see; test-all runs them. Tests whose ranks all run in the test's
# own process run here, over sockets too.
test-race:
	$(GO) test -race -short -count=1 -timeout 10m $(RACE_PKGS)
	$(GO) test -race -short -count=1 -run '^TestRaceReports$$' ./internal/kernel

# Every package without the race detector (allocation counts only mean
# something here), and the element views and kernels again without
# unsafe.
test-all:
	$(GO) test -count=1 -timeout 10m ./...
	$(GO) test -count=1 -timeout 5m -tags purego ./codec/... ./internal/kernel/... ./internal/objcodec/...

test-tools:
	cd tools && $(GO) test -count=1 -timeout 5m ./...

# The other platforms, whose differences the code must mind: the Linux
# architectures (arm64, riscv64 and loong64 have no epoll_wait, arm and
# 386 have 32-bit ints and iovec lengths, s390x is big-endian), and macOS
# and FreeBSD, where tcp links stay in the runtime's netpoller and there
# is no shared memory. Each is vetted (compiled, tests too); of Windows
# only the packages programs import are built (the command, its launcher
# and the tests use Unix process groups and signals); 386 runs on
# an amd64 kernel, so its suite runs as well, and the netpoller's tcp
# links run here under the netpoll tag. Not part of test: on a clean
# cache each platform compiles the standard library again, about a
# minute.
cross:
	for a in arm64 riscv64 loong64 s390x arm 386; do GOOS=linux GOARCH=$$a $(GO) vet ./... || exit 1; done
	for os in darwin freebsd; do GOOS=$$os GOARCH=amd64 $(GO) vet ./... || exit 1; done
	GOOS=windows GOARCH=amd64 $(GO) build ./comm/... ./collective/... ./codec/...
	GOOS=linux GOARCH=386 $(GO) test -short -count=1 -timeout 10m ./...
	$(GO) test -tags netpoll -count=1 -timeout 10m ./internal/transport/... ./internal/core/... ./comm/... ./collective/...

# Short fuzzing runs of every target that parses bytes from a peer.
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzHeader$$' -fuzztime 30s ./internal/wire
	$(GO) test -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime 30s ./internal/kernel
	$(GO) test -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime 30s ./internal/objcodec
	$(GO) test -run '^$$' -fuzz '^FuzzRoundTrip$$' -fuzztime 30s ./internal/objcodec
	$(GO) test -run '^$$' -fuzz '^FuzzRecvObject$$' -fuzztime 30s -fuzzminimizetime 20s ./collective
	$(GO) test -run '^$$' -fuzz '^FuzzServer$$' -fuzztime 30s ./internal/transport/auth
	$(GO) test -run '^$$' -fuzz '^FuzzServerFrames$$' -fuzztime 30s ./internal/rendezvous

# Point-to-point and kernel benchmarks.
# A short sweep (about a minute and a half on 2 cores) into bench/results/: allreduce,
# bcast and gather of 2 ranks over shared memory and tcp, allreduce's link
# algorithms of 4 ranks over tcp for the cost model, and the gob-encoded
# object collectives; then a plot beside Open MPI's and mpi4py's figures
# where bench/reference/results (or REFERENCE=dir) has them (see
# bench/reference/README.md), the comparison with those, and the
# model fitted to the tcp points.
RESULTS := bench/results
REFERENCE ?= bench/reference/results
ANCHORS := $(wildcard $(REFERENCE)/openmpi.csv $(REFERENCE)/mpi4py.csv)
SWEEP   := $(BIN)/gocoll bench --scale 0.5
bench: build benchtool
	mkdir -p $(RESULTS)
	$(SWEEP) -n 2 --transport shm --sizes 8:16M --objects --csv $(RESULTS)/shm.csv --json $(RESULTS)/shm.json
	$(SWEEP) -n 2 --transport tcp --sizes 8:16M --csv $(RESULTS)/tcp.csv --json $(RESULTS)/tcp.json
	$(SWEEP) -n 4 --transport tcp --collectives allreduce --algos ring,recursive_doubling,rabenseifner,tree \
		--sizes 8:4M --csv $(RESULTS)/tcp-algos.csv --json $(RESULTS)/tcp-algos.json
	$(BIN)/benchtool plot -o $(RESULTS)/sweep.png --np 2 --collective allreduce,bcast,gather \
		$(RESULTS)/shm.csv $(RESULTS)/tcp.csv $(ANCHORS)
	$(if $(ANCHORS),$(BIN)/benchtool compare $(RESULTS)/shm.csv $(RESULTS)/tcp.csv $(ANCHORS) | tee $(RESULTS)/compare.txt)
	$(BIN)/benchtool model $(RESULTS)/tcp-algos.csv | tee $(RESULTS)/model.txt

# The Go benchmarks of the kernels, links and point-to-point paths.
gobench:
	$(GO) test -run '^$$' -bench . -benchtime 1s ./internal/kernel ./internal/transport/... ./comm ./collective

clean:
	rm -rf $(BIN)
