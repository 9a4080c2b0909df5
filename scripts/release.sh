#!/usr/bin/env bash
# release.sh cuts a release: checks it is one (a clean tree, a CHANGELOG.md
# section for it, no such tag yet), builds `make dist package` with the
# version stamped in, writes tarballs, SHA256SUMS and RELEASE_NOTES.md (the
# release's CHANGELOG.md section), then tags the commit it built.
#
#   scripts/release.sh [--dry-run] 1.2.3     (or v1.2.3)
#
# Before it: move the [Unreleased] notes of CHANGELOG.md under
# "## [1.2.3] - YYYY-MM-DD" and commit. --dry-run does everything but the
# tag (a tree with uncommitted changes is allowed, and said). Output goes to
# $DIST (default dist/release-v1.2.3); ARCHES (default "amd64 arm64") picks
# the architectures. Nothing is pushed: the script prints what to push.
set -euo pipefail
cd "$(dirname "$0")/.."

dry=0
if [ "${1:-}" = "--dry-run" ]; then dry=1; shift; fi
if [ $# -ne 1 ]; then
	echo "usage: $0 [--dry-run] VERSION (e.g. 1.2.3)" >&2
	exit 2
fi
ver=${1#v}
if ! printf '%s\n' "$ver" | grep -Eq '^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.]+)?$'; then
	echo "release: $1 is not a semantic version (1.2.3 or 1.2.3-rc.1)" >&2
	exit 2
fi
tag="v$ver"
say() { printf 'release: %s\n' "$*"; }
fail() { printf 'release: %s\n' "$*" >&2; exit 1; }

# The release's section of CHANGELOG.md: the lines after its heading up to
# the next "## [" heading (or the link references at the end).
notes=$(awk -v v="$ver" '
	index($0, "## [" v "]") == 1 { on = 1; next }
	on && /^## \[/ { exit }
	on && /^\[[^]]+\]: / { exit }
	on { print }
' CHANGELOG.md | sed -e '/./,$!d')
heading=$(grep -m1 -F "## [$ver]" CHANGELOG.md || true)
if [ -z "$heading" ] || [ -z "$(printf '%s' "$notes" | tr -d '[:space:]')" ]; then
	fail "CHANGELOG.md has no notes under \"## [$ver] - YYYY-MM-DD\": move the [Unreleased] notes there and commit first"
fi
date=$(printf '%s\n' "$heading" | sed -n 's/^## \[[^]]*\] - \([0-9-]*\).*/\1/p')
[ -n "$date" ] || fail "CHANGELOG.md: \"$heading\" has no date (## [$ver] - YYYY-MM-DD)"

if git rev-parse -q --verify "refs/tags/$tag" >/dev/null; then
	fail "tag $tag exists already"
fi
if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
	if [ $dry = 1 ]; then
		say "the tree has uncommitted changes (a real release refuses them)"
	else
		fail "the tree has uncommitted changes: commit or drop them first"
	fi
fi
commit=$(git rev-parse HEAD)

out=${DIST:-dist/release-$tag}
arches=${ARCHES:-amd64 arm64}
say "building $tag of $(git rev-parse --short=12 HEAD) for $arches into $out"
rm -rf "$out"
mkdir -p "$out"
ldflags="-X github.com/soulstack/soulstack/internal/version.version=$tag -X github.com/soulstack/soulstack/internal/version.commit=$commit"
make --no-print-directory dist package DIST="$out" ARCHES="$arches" VERSION="$tag" LDFLAGS="$ldflags"

# One tarball per architecture (the three binaries and the docs that go with
# them), reproducible: sorted names, the commit's time, root-owned.
mtime=$(git log -1 --format=%ct HEAD)
for a in $arches; do
	name="soulstack-$tag-linux-$a"
	stage="$out/.stage/$name"
	mkdir -p "$stage"
	cp "$out/linux-$a/keeper" "$out/linux-$a/soul" "$out/linux-$a/soulctl" LICENSE README.md CHANGELOG.md "$stage/"
	tar -C "$out/.stage" --sort=name --mtime="@$mtime" --owner=0 --group=0 --numeric-owner -cf - "$name" | gzip -n -9 > "$out/$name.tar.gz"
done
rm -rf "$out/.stage"

(
	cd "$out"
	LC_ALL=C sha256sum -- *.tar.gz *.deb *.rpm soul-linux-* > SHA256SUMS
)

{
	printf '# Soul Stack %s (%s)\n\n' "$tag" "$date"
	printf '%s\n\n' "$notes"
	cat <<-NOTES
	## Downloads

	Binaries (\`soulstack-$tag-linux-<arch>.tar.gz\`), \`.deb\` and \`.rpm\` packages of
	soulstack-keeper, soulstack-soul and soulctl, and the static soul binaries the
	Keeper serves. Check them with \`sha256sum -c SHA256SUMS\`.
	NOTES
} > "$out/RELEASE_NOTES.md"
say "wrote $out/SHA256SUMS and $out/RELEASE_NOTES.md"

if [ $dry = 1 ]; then
	say "dry run: would tag $commit as $tag (git tag -a $tag -m 'Soul Stack $tag')"
	exit 0
fi
[ "$(git rev-parse HEAD)" = "$commit" ] || fail "HEAD moved during the build: not tagging"
git tag -a "$tag" -m "Soul Stack $tag" "$commit"
say "tagged $tag; publish with: git push origin $tag, and upload $out/* with RELEASE_NOTES.md as the notes"
