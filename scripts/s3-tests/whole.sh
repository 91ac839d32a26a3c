#!/usr/bin/env bash
# The breadth comparison: the whole of ceph/s3-tests' test_s3.py and
# test_headers.py (805 tests at the pinned commit) straight at Ceph RGW and
# through casket in front of it. Every test that passes straight but not
# through casket must be listed in results/whole-lost.txt with the contract's
# reason for it (compare.mjs --reasons). The outcomes are kept in
# results/whole-rgw-direct.txt and results/whole-rgw.txt; a run writes its own
# beside them to compare. About 25 minutes a run on 2 cores: outside CI.
# RGW must be running (CASKET_TEST_RGW_URL, CASKET_TEST_RGW_CONF as for
# upstreams.sh).
#   usage: scripts/s3-tests/whole.sh [OUT_DIR]   (after npm run build)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:-$(mktemp -d)}"
mkdir -p "$out"
status=0
node "$here/run.mjs" --target rgw-direct --selection whole --out "$out/whole-rgw-direct.txt" || status=1
node "$here/run.mjs" --target rgw --selection whole --out "$out/whole-rgw.txt" || status=1
node "$here/compare.mjs" "$out/whole-rgw-direct.txt" "$out/whole-rgw.txt" --reasons "$here/results/whole-lost.txt" || status=1
echo "outcomes in $out"
exit "$status"
