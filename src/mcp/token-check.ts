/**
 * Whether a casket lets a bearer token in, asked before `casket mcp token`
 * prints it (issue 40: a token minted with a wrong secret, or for an agent
 * the key may not act as, used to fail only at its first use). The token is
 * shown to the casket at the endpoint exactly as a client will show it —
 * `Authorization: Bearer` on a JSON-RPC `ping` to /_casket/mcp — so the
 * check is the endpoint's own authentication (mcp-door.ts: the HMAC, the
 * expiry, the key's agent binding), not a second copy of its rules. A ping
 * reaches no tool and changes nothing.
 */
import { mcpUrl } from './stdio.js';

/** How long the casket has to answer the check. */
const CHECK_TIMEOUT_MS = 10_000;

/** undefined: the casket at `endpoint` accepts the token; else why not, in a sentence for the user. */
export async function checkToken(endpoint: string, token: string): Promise<string | undefined> {
  let url: URL;
  try {
    url = mcpUrl(endpoint);
  } catch {
    return `--endpoint ${endpoint} is not a URL (e.g. http://127.0.0.1:9000)`;
  }
  let res: Response;
  try {
    res = await fetch(url, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
      signal: AbortSignal.timeout(CHECK_TIMEOUT_MS),
    });
  } catch (e) {
    // undici wraps the socket's error (ECONNREFUSED…) as the cause, or several (one per address) in an AggregateError.
    const c = (e as { cause?: { code?: string; message?: string; errors?: Array<{ code?: string }> } }).cause;
    const cause = c?.code ?? c?.errors?.[0]?.code ?? c?.message ?? (e as Error).message;
    return `could not reach casket at ${endpoint} to check the token (${cause}); no token printed — check --endpoint, or mint with --offline`;
  }
  // Stryker disable next-line StringLiteral: a body that is not JSON says the same as none: the status
  const body = await res.text().catch(() => '');
  if (res.ok) return undefined;
  let reason = `HTTP ${res.status}`;
  try {
    const message = (JSON.parse(body) as { error?: { message?: unknown } }).error?.message;
    if (typeof message === 'string') reason = message.replace(/^Unauthorized: /, '');
  } catch {
    // Not casket's JSON-RPC error: the status says enough.
  }
  if (res.status === 401) return `casket at ${endpoint} refused the token: ${reason}; no token printed`;
  return `casket at ${endpoint} answered ${reason} when asked to check the token (is it casket's endpoint?); no token printed`;
}
