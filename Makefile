# Soul Stack — see README.md. `make demo` runs the main job, `make test` runs all tests.
GO ?= go
BIN := bin

.PHONY: build test demo lab lab-down clean

build:
	$(GO) build -o $(BIN)/ ./cmd/...

test:
	bash scripts/test.sh

clean:
	rm -rf $(BIN) .soulstack-dev
