/**
 * The caller of the MCP request being handled, carried by the request itself
 * (AsyncLocalStorage, https://nodejs.org/api/async_context.html) rather than
 * by the tool server that serves it: a tool handler reads `env.caller` at
 * every S3 request it makes, possibly long after it started, and must get
 * the caller of the HTTP request that started it — never whoever the pooled
 * server was lent to since (issue 37, finding 1). Every promise continuation
 * a handler awaits keeps the store of the `run` it began under.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Caller } from './door.js';

const current = new AsyncLocalStorage<Caller>();

/** Runs `handle` (and everything it starts) as `caller`. */
export function runAs<T>(caller: Caller, handle: () => T): T {
  return current.run(caller, handle);
}

/** The caller of the request this code runs for; throws outside of any (a tool run without a request is a bug, not an anonymous call). */
export function requestCaller(): Caller {
  const caller = current.getStore();
  if (!caller) throw new Error('An MCP tool ran outside of the request that called it.');
  return caller;
}
