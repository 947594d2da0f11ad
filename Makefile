# gocoll: make demo runs a local 4-rank job, make test runs the test suite.
GO      ?= go
BIN     := bin
RANKS   ?= 4
RACE_PKGS := ./codec/... ./transport/... ./comm/... ./collective/...

.PHONY: all build demo test fmt-check vet test-race test-all fuzz bench clean

all: build

build:
	$(GO) build -o $(BIN)/gocoll ./cmd/gocoll
	$(GO) build -o $(BIN)/allreduce ./examples/allreduce
	$(GO) build -o $(BIN)/exchange ./examples/exchange

# A 4-rank job in local processes, linked through shared memory: every rank averages a gradient
# with one Allreduce and prints it, then rank 0 prints the bandwidth of
# 16 MiB allreduces.
demo: build
	$(BIN)/gocoll run -n $(RANKS) $(BIN)/allreduce

test: fmt-check vet test-race test-all

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

test-race:
	$(GO) test -race -count=1 -timeout 10m $(RACE_PKGS)

# Every package without the race detector (allocation counts only mean
# something here), and codec again without unsafe.
test-all:
	$(GO) test -count=1 -timeout 10m ./...
	$(GO) test -count=1 -timeout 5m -tags purego ./codec/...

# Short fuzzing runs of every target that parses bytes from a peer.
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzHeader$$' -fuzztime 30s ./codec

# Point-to-point and kernel benchmarks.
bench:
	$(GO) test -run '^$$' -bench . -benchtime 1s ./codec ./transport/... ./comm

clean:
	rm -rf $(BIN)
