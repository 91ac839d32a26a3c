/**
 * The caller of the MCP request being handled, carried by the request's own
 * messages rather than by the tool server that serves it: the endpoint puts
 * it in each message's `authInfo` (http.ts → post-transport.ts), which is
 * how the MCP SDK hands a transport's validated token to request handlers
 * (MessageExtraInfo.authInfo → RequestHandlerExtra.authInfo), and each tool
 * handler takes it from its own `extra` (tool.ts guarded). So a handler keeps
 * the caller of the HTTP request that started it for its whole life, never
 * whoever the pooled server was lent to since (issue 37, finding 1). A client
 * cannot set it: no part of a JSON-RPC message reaches `authInfo`.
 *
 * Not an AsyncLocalStorage, as it was: on Node 20 a store once entered turns
 * on promise hooks for the whole process, for good — measured, a casket
 * that had answered one MCP call then spent 9% more CPU on every GetObject
 * (271 → 295 µs at c=8, docs/performance.md).
 */
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import type { Caller } from './door.js';

/** The key of `authInfo.extra` that holds casket's caller. */
const CALLER = 'casketCaller';

/** The authInfo a request's messages carry: who casket authenticated (its token is not repeated here). */
export function callerAuthInfo(caller: Caller): AuthInfo {
  return { token: '', clientId: caller.agent ?? caller.accessKeyId, scopes: [], extra: { [CALLER]: caller } };
}

/** The caller of the request a handler runs for, from its `extra`; throws without one (a tool run without a request is a bug, not an anonymous call). */
export function requestCaller(extra: { authInfo?: AuthInfo } | undefined): Caller {
  const caller = extra?.authInfo?.extra?.[CALLER] as Caller | undefined;
  if (!caller) throw new Error('An MCP tool ran outside of the request that called it.');
  return caller;
}
