/**
 * What casket's stateless MCP endpoint accepts in one POST, checked before
 * any message reaches a tool server (JSON-RPC 2.0, https://www.jsonrpc.org/specification;
 * MCP base protocol, https://modelcontextprotocol.io/specification/2025-11-25/basic):
 *
 * - Request ids are unique within a POST. The spec requires it ("The request
 *   ID MUST NOT have been previously used by the requestor within the same
 *   session"), and the transport pairs answers with requests by id: two
 *   requests sharing one are answered when the first of them is, while the
 *   other still runs (issue 37, finding 1). Ids that are equal as text (`1`
 *   and `"1"`) count as one, as a client or bridge that keys by string would
 *   see them. Such a batch is refused whole, -32600 Invalid Request: nothing
 *   of it runs.
 * - Anonymous clients may only discover — initialize, ping, tools/list and
 *   notifications/initialized (finding 5) — and only when casket lets
 *   unsigned requests in (--anonymous read; http.ts anonymousDiscovery).
 *   Anything else needs credentials.
 * - `notifications/cancelled` is dropped. Each POST has its own server
 *   connection here (no session), so a cancellation can only name a request
 *   of the same POST — and a cancelled request is never answered
 *   (basic/utilities/cancellation: "The receiver SHOULD NOT send a response"),
 *   which would leave the POST waiting forever. The request runs and is
 *   answered; a client that no longer wants it ignores the answer.
 */

/** Methods an unauthenticated client may send: they show only what every client sees. */
const DISCOVERY = new Set(['initialize', 'ping', 'tools/list', 'notifications/initialized']);

const CANCELLED = 'notifications/cancelled';

export type Admitted =
  | { ok: true; body: unknown; messages: number }
  | { ok: false; status: number; code: number; message: string; challenge?: boolean };

function methodOf(m: unknown): string | undefined {
  // Stryker disable next-line ConditionalExpression: a string, number or boolean has no method property either: the next lines would find none
  if (typeof m !== 'object') return undefined;
  if (m === null || Array.isArray(m)) return undefined;
  const method = (m as { method?: unknown }).method;
  return typeof method === 'string' ? method : undefined;
}

/** Whether the message is a request (a method and an id), as opposed to a notification or a response. */
function idOf(m: unknown): { id: unknown } | undefined {
  return methodOf(m) !== undefined && Object.hasOwn(m as object, 'id') ? { id: (m as { id: unknown }).id } : undefined;
}

/** Judges one parsed body: the body to hand the transport (cancellations dropped), or why it is refused. */
export function admit(body: unknown, anonymous: boolean, discoveryOpen = true): Admitted {
  const batch = Array.isArray(body);
  const messages: unknown[] = batch ? body : [body];
  if (anonymous && !discoveryOpen) {
    return { ok: false, status: 401, code: -32001, message: 'Unauthorized: casket needs credentials — log in through your MCP client (OAuth, see WWW-Authenticate), or Authorization: Bearer <token from `casket mcp token`>, or a SigV4 signature.', challenge: true };
  }
  // Stryker disable next-line StringLiteral: any string that names no discovery method is refused the same
  if (anonymous && !messages.every((m) => DISCOVERY.has(methodOf(m) ?? ''))) {
    return { ok: false, status: 401, code: -32001, message: 'Unauthorized: without credentials only initialize, ping, tools/list and notifications/initialized are answered — log in through your MCP client (OAuth), or Authorization: Bearer <token from `casket mcp token`>, or a SigV4 signature.', challenge: true };
  }
  const seen = new Set<string>();
  for (const m of messages) {
    const request = idOf(m);
    if (!request) continue;
    // A number's JSON is its text, as String writes it (1 and "1" are one key); other ids are keyed by their JSON.
    const key = typeof request.id === 'string' ? request.id : JSON.stringify(request.id);
    if (seen.has(key)) return { ok: false, status: 400, code: -32600, message: `Invalid Request: request id ${JSON.stringify(request.id)} is used twice in this batch; ids must be unique. Nothing was run.` };
    seen.add(key);
  }
  const kept = messages.filter((m) => methodOf(m) !== CANCELLED);
  return { ok: true, body: batch ? kept : kept[0], messages: kept.length };
}
