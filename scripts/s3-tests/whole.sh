#!/usr/bin/env bash
# The breadth comparison: the whole of ceph/s3-tests' test_s3.py and
# test_headers.py (883 tests at the pinned commit) straight at Ceph RGW, then
# through casket in front of it — the tests that passed straight only (388 on
# RGW 16, about 18 minutes on 2 cores; the other ~500 fail straight and say
# nothing about casket). Every test that passes straight but not through
# casket must be listed in results/whole-lost.txt with the contract's reason
# for it (compare.mjs --reasons). The outcomes are kept in
# results/whole-rgw-direct.txt and results/whole-rgw.txt; a run writes its own
# beside them to compare. Outside CI.
#   usage: scripts/s3-tests/whole.sh [OUT_DIR]   (after npm run build)
#   env:   WHOLE_DIRECT=kept   skip the straight run (~45 minutes): take
#          results/whole-rgw-direct.txt and its selection, whole-passing.txt
#          RGW must be running (CASKET_TEST_RGW_URL, CASKET_TEST_RGW_CONF as for
#          upstreams.sh; scripts/ceph-rgw-up.sh starts one)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:-$(mktemp -d)}"
mkdir -p "$out"
status=0
if [ "${WHOLE_DIRECT:-}" = kept ]; then
  cp "$here/results/whole-rgw-direct.txt" "$out/whole-rgw-direct.txt"
else
  node "$here/run.mjs" --target rgw-direct --selection whole --out "$out/whole-rgw-direct.txt" || status=1
fi
# Through casket: what passed straight (the kept selection is whole-passing.txt).
{ echo '# the PASS lines of whole-rgw-direct.txt'; sed -n 's/^PASS \([^ ]*\).*/\1/p' "$out/whole-rgw-direct.txt"; } > "$out/whole-passing.txt"
node "$here/run.mjs" --target rgw --selection "$out/whole-passing.txt" --out "$out/whole-rgw.txt" || status=1
node "$here/compare.mjs" "$out/whole-rgw-direct.txt" "$out/whole-rgw.txt" --reasons "$here/results/whole-lost.txt" || status=1
echo "outcomes in $out"
exit "$status"
