#!/bin/sh
# generate.sh regenerates the Go code of the soul stream protocol. The output
# is committed, so a build needs no protoc; rerun this after editing a .proto.
#
# Needs protoc (Debian: protobuf-compiler) and the two generators:
#   GOBIN=/tmp/gobin go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
#   GOBIN=/tmp/gobin go install connectrpc.com/connect/cmd/protoc-gen-connect-go@v1.21.1
set -eu
cd "$(dirname "$0")"
PATH="${GOBIN:-/tmp/gobin}:$(go env GOPATH)/bin:$PATH"
protoc -I . \
	--go_out=. --go_opt=paths=source_relative \
	--connect-go_out=. --connect-go_opt=paths=source_relative \
	soulstack/v1/soul.proto
