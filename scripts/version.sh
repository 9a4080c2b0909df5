#!/bin/sh
# version.sh prints the version and commit of this checkout, the values
# `make build`/`make dist` stamp into the binaries with -ldflags -X:
#   scripts/version.sh          -> v1.2.3 | v1.2.3-4-gabcdef012345[-dirty] | v0.0.0-untagged-abcdef012345[-dirty]
#   scripts/version.sh commit   -> the full commit hash (or "unknown")
#   scripts/version.sh ldflags  -> the -X flags for go build
# A tree without a v* release tag says "untagged"; a tree with uncommitted
# changes to tracked files says "dirty".
set -eu
cd "$(dirname "$0")/.."
pkg=github.com/soulstack/soulstack/internal/version
commit=$(git rev-parse HEAD 2>/dev/null || echo unknown)
if v=$(git describe --tags --match 'v[0-9]*' --abbrev=12 --dirty 2>/dev/null); then
	:
elif [ "$commit" != unknown ]; then
	v="v0.0.0-untagged-$(git rev-parse --short=12 HEAD)"
	git diff --quiet HEAD -- 2>/dev/null || v="$v-dirty"
else
	v="v0.0.0-untagged"
fi
case "${1:-version}" in
version) echo "$v" ;;
commit) echo "$commit" ;;
ldflags) echo "-X $pkg.version=$v -X $pkg.commit=$commit" ;;
*) echo "usage: $0 [version|commit|ldflags]" >&2; exit 2 ;;
esac
