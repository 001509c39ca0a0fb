# Boomerang build, test and benchmark entry points.
GO          ?= go
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
BUF         ?= github.com/bufbuild/buf/cmd/buf@v1.75.0
BENCHTIME   ?= 1s
PKGS        ?= ./...

.PHONY: all build test fmt-check vet lint bench proto clean

all: build

build:
	$(GO) build ./...

# The one test command: formatting, vet, then every test with the race
# detector. CI runs exactly this.
test: fmt-check vet
	$(GO) test -race -count=1 -timeout 20m $(PKGS)

fmt-check:
	@out="$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))"; \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

lint: fmt-check vet
	$(GO) run $(STATICCHECK) $(PKGS)

# Benchmarks print ratios against in-run baselines; see docs/benchmarks.md
# for the commands behind each recorded number.
bench:
	$(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) $(PKGS)

# Regenerates the checked-in protobuf code (buf.gen.yaml) from every .proto
# in the tree. Generators run as go tools; nothing needs installing.
proto:
	$(GO) run $(BUF) generate

clean:
	$(GO) clean -testcache
