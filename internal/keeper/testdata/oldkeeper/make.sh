#!/usr/bin/env bash
# Makes the fixtures of TestM6PreviousVersionDatabase: what the last
# version that kept the token signing key in the database (commit 6d99f91,
# the one the December 2026 audit looked at) leaves behind, made by that
# version's own keeper binary through its own API.
#
#   sqlite.tar.gz   its data directory (keeper.db, TLS material, keeper_id)
#                   after `keeper init` and the API calls below
#   postgres.sql.gz pg_dump --inserts of the same on PostgreSQL
#   pgdata.tar.gz   the data directory of the PostgreSQL keeper (TLS, id)
#   tokens.json     the tokens it issued and what each must do after the
#                   upgrade: work until it expires (with the stored expiry),
#                   or stay refused (revoked, expired, archon disabled)
#
# Usage: make.sh OLD_KEEPER_BIN_DIR [POSTGRES_URL]
#   OLD_KEEPER_BIN_DIR holds keeper built from 6d99f91:
#     git archive 6d99f91 | tar -x -C /tmp/old && (cd /tmp/old && go build -o bin/ ./cmd/keeper)
#   POSTGRES_URL: a server's maintenance database (default
#     $SOULSTACK_TEST_DATABASE_URL); a database soulstack_m6_fixture is
#     created there and dropped at the end.
set -euo pipefail
bin=$1
pgbase=${2:-${SOULSTACK_TEST_DATABASE_URL:?}}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
keeper_pid=
cleanup() {
	if [ -n "$keeper_pid" ]; then kill "$keeper_pid" 2>/dev/null || true; fi
	rm -rf "$work"
}
trap cleanup EXIT

api() { # api TOKEN METHOD PATH [BODY]
	curl -sS --fail-with-body -X "$2" -H "Authorization: Bearer $1" -H 'Content-Type: application/json' \
		${4:+--data "$4"} "http://127.0.0.1:$port$3"
}

# populate DATA_DIR [--database-url URL]: init, serve, issue tokens, stop.
populate() {
	local dir=$1; shift
	port=$((20000 + RANDOM % 10000))
	admin=$("$bin/keeper" init --data-dir "$dir" --token-ttl 87600h "$@")
	"$bin/keeper" serve --data-dir "$dir" --listen "127.0.0.1:$port" "$@" >"$work/serve.log" 2>&1 &
	keeper_pid=$!
	for _ in $(seq 100); do curl -s "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
	olga=$(api "$admin" POST /v1/archons '{"name":"olga","role":"operator","ttl":"87600h"}' | jq -r .token.token)
	vera=$(api "$admin" POST /v1/archons '{"name":"vera","role":"viewer","ttl":"87600h"}' | jq -r .token.token)
	dora=$(api "$admin" POST /v1/archons '{"name":"dora","role":"operator","ttl":"87600h"}')
	# olga's own second token, minted by her (the old version let any token
	# mint any lifetime: it must keep working until its stored expiry).
	child=$(api "$olga" POST /v1/tokens '{"ttl":"43800h","description":"minted by olga"}' | jq -r .token)
	revoked=$(api "$admin" POST /v1/tokens '{"ttl":"87600h","description":"revoked"}')
	api "$admin" DELETE "/v1/tokens/$(jq -r .id <<<"$revoked")" >/dev/null
	expired=$(api "$admin" POST /v1/tokens '{"ttl":"1s","description":"expired"}' | jq -r .token)
	api "$admin" POST "/v1/archons/$(jq -r .archon.id <<<"$dora")/disable" >/dev/null
	jq -n --arg admin "$admin" --arg olga "$olga" --arg vera "$vera" --arg child "$child" \
		--arg revoked "$(jq -r .token <<<"$revoked")" --arg expired "$expired" \
		--arg dora "$(jq -r .token.token <<<"$dora")" '[
		{name: "admin (keeper init)", token: $admin, archon: "admin", role: "admin", works: true},
		{name: "olga (POST /v1/archons)", token: $olga, archon: "olga", role: "operator", works: true},
		{name: "vera (POST /v1/archons)", token: $vera, archon: "vera", role: "viewer", works: true},
		{name: "olga'"'"'s own token", token: $child, archon: "olga", role: "operator", works: true},
		{name: "revoked", token: $revoked, works: false, refusal: "revoked"},
		{name: "expired", token: $expired, works: false, refusal: "expired"},
		{name: "disabled archon", token: $dora, works: false, refusal: "disabled"}
	]' >"$work/tokens-$(basename "$dir").json"
	kill -TERM "$keeper_pid"
	wait "$keeper_pid" || true
	keeper_pid=
	rm -rf "$dir/services"
}

populate "$work/sqlite"
tar -C "$work/sqlite" -czf "$here/sqlite.tar.gz" .

db=soulstack_m6_fixture
psql "$pgbase" -qc "DROP DATABASE IF EXISTS $db WITH (FORCE)" -c "CREATE DATABASE $db"
pgurl=$(sed -E "s#/[^/?]+(\?|$)#/$db\1#" <<<"$pgbase")
populate "$work/pg" --database-url "$pgurl"
pg_dump --inserts --no-owner --no-privileges "$pgurl" | gzip -9 >"$here/postgres.sql.gz"
psql "$pgbase" -qc "DROP DATABASE $db WITH (FORCE)"
tar -C "$work/pg" -czf "$here/pgdata.tar.gz" .

jq -n --slurpfile s "$work/tokens-sqlite.json" --slurpfile p "$work/tokens-pg.json" \
	'{sqlite: $s[0], postgres: $p[0]}' >"$here/tokens.json"
echo "fixtures written to $here"
