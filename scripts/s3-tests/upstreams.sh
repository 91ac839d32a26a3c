#!/usr/bin/env bash
# Nothing lost through casket: runs the s3-tests selection straight
# at moto and at Ceph RGW and through casket in front of each, checks the
# through-casket outcomes against the kept lists (results/moto.txt,
# results/rgw.txt), and lists every test that passes straight but not through
# casket (compare.mjs: only test_object_write_check_etag, the SHA-256 ETag,
# may be). moto is started by the runner; RGW must be running already
# (CASKET_TEST_RGW_URL, default http://127.0.0.1:18080; with
# CASKET_TEST_RGW_CONF each run gets a user in a fresh tenant).
#   usage: scripts/s3-tests/upstreams.sh [moto] [rgw]   (default: both; after npm run build)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
upstreams=("$@")
[ ${#upstreams[@]} -gt 0 ] || upstreams=(moto rgw)
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
status=0
for u in "${upstreams[@]}"; do
  node "$here/run.mjs" --target "$u-direct" --out "$out/$u-direct.txt" || status=1
  node "$here/run.mjs" --target "$u" --out "$out/$u.txt" --expect "$here/results/$u.txt" || status=1
  node "$here/compare.mjs" "$out/$u-direct.txt" "$out/$u.txt" || status=1
done
exit "$status"
