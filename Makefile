# Boomerang build, test and benchmark entry points.
GO          ?= go
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
BENCHTIME   ?= 1s
PKGS        ?= ./...

.PHONY: all build test fmt-check vet lint bench clean

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

clean:
	$(GO) clean -testcache
