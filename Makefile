# Soul Stack — see README.md. `make demo` runs the main job, `make test` runs all tests.
GO ?= go
BIN := bin
DIST := dist
# The version stamped into every binary: `git describe` (scripts/version.sh;
# an untagged or dirty tree says so). `keeper --version` shows it.
VERSION := $(shell sh scripts/version.sh)
LDFLAGS := $(shell sh scripts/version.sh ldflags)
ARCHES := amd64 arm64

.PHONY: build test demo demo-stop dev lab lab-down clean dist package repo release api-docs screenshots docs

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/ ./cmd/...

# Static release binaries (no cgo: they run on any x86-64/arm64 Linux
# whatever its libc) in dist/linux-<arch>/, plus dist/soul-linux-<arch>, the
# names the Keeper serves from GET /v1/soul/binary.
dist:
	for a in $(ARCHES); do \
	  CGO_ENABLED=0 GOOS=linux GOARCH=$$a $(GO) build -trimpath -ldflags "-s -w $(LDFLAGS)" -o $(DIST)/linux-$$a/ ./cmd/... || exit 1; \
	  cp $(DIST)/linux-$$a/soul $(DIST)/soul-linux-$$a; \
	done

# .deb and .rpm of soulstack-keeper, soulstack-soul and soulctl for each
# arch in dist/ (nfpm as a Go library: internal/install/packages.go).
package: dist
	$(GO) run ./internal/install/mkpackage -version $(VERSION) -dist $(DIST) -arch $(shell echo $(ARCHES) | tr ' ' ,)

# A signed apt repository of the .debs that make package left in $(DIST),
# written to $(DIST)/apt for any web server: REPO_KEY is an armored OpenPGP
# secret key (gpg --export-secret-keys --armor KEYID). See docs/operations.md.
REPO_KEY ?=
repo:
	$(GO) run ./internal/install/mkrepo -dist $(DIST) -out $(DIST)/apt -key "$(REPO_KEY)"

test:
	bash scripts/test.sh

# docs/api/index.html, the rendered Operator API reference: redocly
# build-docs of internal/api/openapi.json with the @redocly/cli that
# scripts/test-deps.sh pins and installs (a test checks it is current).
REDOCLY_VERSION := $(shell sed -n 's/^REDOCLY_VERSION=//p' scripts/test-deps.sh)
REDOCLY ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/soulstack-test/redocly-$(REDOCLY_VERSION)/node_modules/.bin/redocly
api-docs:
	@test -x $(REDOCLY) || bash scripts/test-deps.sh
	mkdir -p docs/api
	cd internal/api && REDOCLY_TELEMETRY=off $(REDOCLY) build-docs openapi.json --output ../../docs/api/index.html

# The documentation site (docs/ and mkdocs.yml) into site/; a broken link
# between pages fails the build (internal/docsite tests it in make test).
docs:
	mkdocs build --strict

# docs/screenshots/*.png, the README's pictures of the web UI: the browser
# tests' harness (headless Chromium) over a seeded fleet.
screenshots:
	$(GO) test -tags screenshots -count=1 -run '^TestScreenshots$$' -v ./internal/ui

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
	rm -rf $(BIN) $(DIST) .soulstack-dev site
