#!/usr/bin/env bash
# membership-long.sh: issue 32's must-show test with more data. The test that CI runs
# (TestMembershipChangesUnderQuorumClients in cmd/kura) loads 2,000 keys and runs 4
# writers while two nodes join at once, one is decommissioned and one is SIGKILLed and
# removed; this runs the same test with KEYS keys loaded (default 200,000) and WRITERS
# writers (default 16), so that the streams take a while and the clients race them.
#
#   scripts/membership-long.sh                 # 200,000 keys, 16 writers
#   KEYS=1000000 WRITERS=32 scripts/membership-long.sh
#   KURA_MEMBERSHIP_SEED=123 scripts/membership-long.sh   # repeat a run's choices
#
# It prints the test's log: the epochs of each change, the writes and reads acknowledged
# during them, and any read that returned less than was acknowledged.
set -euo pipefail
cd "$(dirname "$0")/.."
export KURA_MEMBERSHIP_KEYS="${KEYS:-200000}" KURA_MEMBERSHIP_WRITERS="${WRITERS:-16}"
echo "membership-long: $KURA_MEMBERSHIP_KEYS keys, $KURA_MEMBERSHIP_WRITERS writers; $(uptime)"
go test ./cmd/kura -run '^TestMembershipChangesUnderQuorumClients$' -count=1 -v -timeout 90m
