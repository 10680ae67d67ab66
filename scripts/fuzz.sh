#!/usr/bin/env bash
# Runs each fuzz target of what a peer or a client can send a node (the internode frame
# decoder and message codecs, the metadata log's entries, the RESP handler, the ACL rule
# parser and ACL file loader) with -fuzz for a bounded time. CI runs it after the tests
# (.ci/run); about two minutes in all. FUZZTIME sets each target's time (default 10s).
# A target that finds a failure writes its input under the package's testdata/fuzz/, which
# then becomes a regular test case once committed.
set -euo pipefail
cd "$(dirname "$0")/.."
t=${FUZZTIME:-10s}
targets=(
  "./internal/transport FuzzDecode"
  "./internal/wire FuzzDecoders"
  "./internal/wire FuzzDecodeMeta"
  "./internal/wire FuzzRepairDecoders"
  "./internal/wire FuzzDecodeScanPage"
  "./internal/meta FuzzDecodeEntry"
  "./internal/resp FuzzHandler"
  "./internal/acl FuzzParseRules"
  "./internal/acl FuzzLoadFile"
)
for tg in "${targets[@]}"; do
  set -- $tg
  if ! grep -qs "^func $2(" "$1"/*_test.go; then
    echo "fuzz.sh: no target $2 in $1" >&2
    exit 1
  fi
  echo "== $1 $2 ($t)"
  go test -run='^$' -fuzz="^$2\$" -fuzztime="$t" "$1"
done
