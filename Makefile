# Soul Stack — see README.md. `make demo` runs the main job, `make test` runs all tests.
GO ?= go
BIN := bin

.PHONY: build test demo demo-stop dev lab lab-down clean

build:
	$(GO) build -o $(BIN)/ ./cmd/...

test:
	bash scripts/test.sh

# A Keeper with 3 local souls in the background (.soulstack-dev), the hello
# example applied across them; it keeps running until `make demo-stop`.
demo: build
	bash scripts/demo.sh

demo-stop:
	bash scripts/demo.sh stop

# The same Keeper and souls in the foreground (Ctrl-C stops them).
dev: build
	$(BIN)/keeper dev

# A lab of 3 isolated Debian hosts in network namespaces (needs root), with
# systemd as PID 1 (FLAVOUR=sysv: tini and init scripts).
FLAVOUR ?= systemd
lab:
	$(GO) run ./internal/lab/labctl up --name demo --hosts 3 --flavour $(FLAVOUR)

lab-down:
	$(GO) run ./internal/lab/labctl down --name demo

clean:
	-bash scripts/demo.sh stop
	rm -rf $(BIN) .soulstack-dev
