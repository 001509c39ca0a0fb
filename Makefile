# Boomerang build, test and benchmark entry points.
GO          ?= go
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
BUF         ?= github.com/bufbuild/buf/cmd/buf@v1.75.0
BENCHTIME   ?= 1s
PKGS        ?= ./...
# Debian's Python, for its python3-protobuf (the Python package index is not
# used); a python3 earlier on PATH, such as pyenv's, would not see it.
PYTHON      ?= /usr/bin/python3
PROTOC      ?= protoc

.PHONY: all build test test-go test-sqs test-ts test-py test-web ui fmt-check vet lint bench pgo proto clean

all: build

build:
	$(GO) build ./...

# The one test command: formatting, vet, then every Go test with the race
# detector, then the TypeScript and Python SDKs' tests, then the web
# panel's. CI runs exactly this.
test: fmt-check vet test-go test-ts test-py test-web

# Tests, and the server binaries they build, leave out the server's CPU
# profile (cmd/boomerang/default.pgo, see pgo): it changes what the
# compiler optimizes, not what the code does, and with it every package
# the server imports would be compiled once more.
vet test-go test-ts test-py test-web: export GOFLAGS := -pgo=off

test-go:
	$(GO) test -race -count=1 -timeout 20m $(PKGS)

# The SQS FIFO sink's suite against a real queue instead of the in-test
# stand-in: BOOMERANG_TEST_SQS_FIFO_URL names the queue, the standard AWS
# configuration (AWS_REGION, credentials) reaches it. Not part of test.
test-sqs:
	@test -n "$$BOOMERANG_TEST_SQS_FIFO_URL" || \
		{ echo "make test-sqs: set BOOMERANG_TEST_SQS_FIFO_URL to a FIFO queue's URL (https://sqs.REGION.amazonaws.com/ACCOUNT/NAME.fifo) and AWS credentials"; exit 1; }
	$(GO) test -race -count=1 -timeout 5m -run '^TestSQSSuite$$' -v ./internal/delivery

# The TypeScript SDK (sdk/typescript): its dependencies from the lock
# file, then its tests against the real server, which they build.
test-ts:
	cd sdk/typescript && npm ci --no-audit --no-fund && npm test

# The Python SDK (sdk/python): its tests against the real server, which they
# build, with Debian's python3-protobuf and python3-uvicorn (the ASGI test).
test-py:
	cd sdk/python && PYTHONPATH=src $(PYTHON) -m unittest discover -s tests -t .

# The web panel (web/): its packages from the lock file, then its build
# into web/dist, which the server binary embeds (go build after make ui).
# Playwright's own browser download cannot work here: the browser tests
# use Debian's chromium.
ui:
	cd web && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund && npm run build

# The panel's unit tests (Vitest), then its browser tests (Playwright,
# Debian's chromium) against the real server built with the panel in it.
test-web: ui
	cd web && npm test
	$(GO) build -o web/e2e-bin/boomerang ./cmd/boomerang
	cd web && BOOMERANG_BIN=$(CURDIR)/web/e2e-bin/boomerang npx playwright test

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

# Regenerates the server's profile for profile-guided optimization,
# cmd/boomerang/default.pgo, which go build uses by itself: CPU profiles of
# registrations over TCP (pipelined, 64 waiting callers, batches of 100),
# of firing, and of registration to delivery, merged. What it gave:
# docs/benchmarks.md, round eighteen.
PGO_DIR ?= /tmp/boomerang-pgo
pgo:
	rm -rf $(PGO_DIR) && mkdir -p $(PGO_DIR)
	$(GO) test -pgo=off -run '^$$' -bench 'Register/server' -benchtime 400000x -cpuprofile $(PGO_DIR)/pipelined.prof -o $(PGO_DIR)/boomload.test ./internal/boomload
	$(GO) test -pgo=off -run '^$$' -bench 'Register/server' -benchtime 100000x -cpuprofile $(PGO_DIR)/waiting.prof -o $(PGO_DIR)/boomload.test ./internal/boomload -args -boomload.conns 64 -boomload.depth 1
	$(GO) test -pgo=off -run '^$$' -bench 'Register/server' -benchtime 1000x -cpuprofile $(PGO_DIR)/batches.prof -o $(PGO_DIR)/boomload.test ./internal/boomload -args -boomload.conns 64 -boomload.depth 1 -boomload.batch 100
	$(GO) test -pgo=off -run '^$$' -bench 'FireLateness/run=1024$$' -benchtime 1x -cpuprofile $(PGO_DIR)/fire.prof -o $(PGO_DIR)/scheduler.test ./internal/scheduler
	$(GO) test -pgo=off -run '^$$' -bench 'RegisterToDelivered' -benchtime 200000x -cpuprofile $(PGO_DIR)/delivered.prof -o $(PGO_DIR)/delivery.test ./internal/delivery
	$(GO) tool pprof -proto $(PGO_DIR)/*.prof > cmd/boomerang/default.pgo

# Regenerates the checked-in protobuf code (buf.gen.yaml) from every .proto
# in the tree, and the TypeScript SDK's (buf.gen.es.yaml) from the public
# API. The Go generators run as go tools; protoc-gen-es is a devDependency
# of sdk/typescript, installed from its lock file. The Python SDK's code
# comes from protoc 3.21 (Debian 12's protobuf-compiler), the release of
# Debian's python3-protobuf runtime: newer protoc output needs a newer
# runtime.
proto:
	$(GO) run $(BUF) generate
	cd sdk/typescript && npm ci --no-audit --no-fund
	$(GO) run $(BUF) generate --template buf.gen.es.yaml
	@$(PROTOC) --version | grep -q '^libprotoc 3\.21\.' || \
		{ echo "make proto: sdk/python needs protoc 3.21 (apt-get install protobuf-compiler on Debian 12)"; exit 1; }
	$(PROTOC) -I api --python_out=sdk/python/src --pyi_out=sdk/python/src api/boomerang/v1/boomerang.proto

clean:
	$(GO) clean -testcache
