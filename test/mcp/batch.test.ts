/**
 * What the MCP endpoint lets through in one POST (src/mcp/batch.ts), before
 * any message reaches a tool server: request ids unique within a batch
 * (issue 37, finding 1), only discovery without credentials (finding 5),
 * and cancellations dropped. adversarial-json-rpc and caller-isolation drive
 * the same through a casket; here every branch of the judgement is shown.
 */
import { describe, expect, it } from 'vitest';
import { admit } from '../../src/mcp/batch.js';

const call = (id: unknown) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'list_directory', arguments: { path: 'b' } } });
const ping = (id: unknown) => ({ jsonrpc: '2.0', id, method: 'ping' });
const initialized = { jsonrpc: '2.0', method: 'notifications/initialized' };
const cancelled = (requestId: unknown) => ({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId } });

const UNAUTHORIZED = 'Unauthorized: without credentials only initialize, ping, tools/list and notifications/initialized are answered — log in through your MCP client (OAuth), or Authorization: Bearer <token from `casket mcp token`>, or a SigV4 signature.';
const NEEDS_CREDENTIALS = 'Unauthorized: casket needs credentials — log in through your MCP client (OAuth, see WWW-Authenticate), or Authorization: Bearer <token from `casket mcp token`>, or a SigV4 signature.';
const twice = (id: unknown) => ({ ok: false, status: 400, code: -32600, message: `Invalid Request: request id ${JSON.stringify(id)} is used twice in this batch; ids must be unique. Nothing was run.` });

describe('admit: request ids', () => {
  it('passes a lone message and a batch of distinct ids as they are', () => {
    expect(admit(call(1), false)).toEqual({ ok: true, body: call(1), messages: 1 });
    const batch = [call(1), call(2), call('3'), ping('a'), ping(null), initialized];
    expect(admit(batch, false)).toEqual({ ok: true, body: batch, messages: 6 });
  });

  it('refuses a batch in which a request id is used twice, whole, with -32600', () => {
    expect(admit([call(1), call(2), ping(1)], false)).toEqual(twice(1));
    expect(admit([call('x'), call('x')], false)).toEqual(twice('x'));
    expect(admit([ping(null), call(null)], false)).toEqual(twice(null));
  });

  it('takes ids equal as text as one (1 and "1"), as a client keying by string would', () => {
    expect(admit([call(1), call('1')], false)).toEqual(twice('1'));
    expect(admit([call('1'), call(1)], false)).toEqual(twice(1));
  });

  it('keeps apart ids that differ as JSON', () => {
    expect(admit([call({ a: 1 }), call({ b: 1 })], false)).toMatchObject({ ok: true, messages: 2 });
    expect(admit([call({ a: 1 }), call({ a: 1 })], false)).toEqual(twice({ a: 1 }));
  });

  it('counts only requests: notifications carry no id, and responses are not requests', () => {
    const responses = [{ jsonrpc: '2.0', id: 1, result: {} }, { jsonrpc: '2.0', id: 1, result: {} }, call(1)];
    expect(admit(responses, false)).toEqual({ ok: true, body: responses, messages: 3 });
    expect(admit([initialized, initialized], false)).toMatchObject({ ok: true, messages: 2 });
    // Not messages at all: the transport's JSON-RPC parse refuses them (post-transport.ts), not this.
    expect(admit([null, 1, 'x', [call(1)], [call(1)]], false)).toMatchObject({ ok: true, messages: 5 });
  });
});

describe('admit: cancellations', () => {
  it('drops notifications/cancelled and runs what it names', () => {
    expect(admit([call(1), cancelled(1)], false)).toEqual({ ok: true, body: [call(1)], messages: 1 });
    expect(admit(cancelled(1), false)).toEqual({ ok: true, body: undefined, messages: 0 });
    expect(admit([cancelled(1), cancelled(2)], false)).toEqual({ ok: true, body: [], messages: 0 });
  });
});

describe('admit: anonymous clients', () => {
  it('answers discovery: initialize, ping, tools/list, notifications/initialized', () => {
    const discovery = [{ jsonrpc: '2.0', id: 1, method: 'initialize', params: {} }, ping(2), { jsonrpc: '2.0', id: 3, method: 'tools/list' }, initialized];
    expect(admit(discovery, true)).toEqual({ ok: true, body: discovery, messages: 4 });
    expect(admit(ping(1), true, true)).toEqual({ ok: true, body: ping(1), messages: 1 });
  });

  it('refuses 401 anything else, in a batch too, with a challenge', () => {
    const refused = { ok: false, status: 401, code: -32001, message: UNAUTHORIZED, challenge: true };
    for (const body of [
      call(1), [ping(1), call(2)], cancelled(1), [ping(1), cancelled(1)], { jsonrpc: '2.0', id: 1, result: {} },
      // Not a message with a method: nothing an anonymous client may send.
      null, 'ping', { method: 7 }, [ping(1), null],
    ]) expect(admit(body, true), JSON.stringify(body)).toEqual(refused);
  });

  it('refuses 401 even discovery when casket lets no unsigned request in', () => {
    for (const body of [ping(1), [initialized], []]) expect(admit(body, true, false)).toEqual({ ok: false, status: 401, code: -32001, message: NEEDS_CREDENTIALS, challenge: true });
    // A caller with credentials is not anonymous: discovery closed or not.
    expect(admit(call(1), false, false)).toEqual({ ok: true, body: call(1), messages: 1 });
  });
});
