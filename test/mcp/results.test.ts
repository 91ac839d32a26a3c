/**
 * The two small carriers around every tool call, without a casket: the
 * result a tool answers (src/mcp/results.ts — text for the model,
 * structuredContent for programs, a failure as isError the model can act
 * on, MCP server/tools "Tool Execution Errors") and the caller a request's
 * messages carry to its handler (src/mcp/request-caller.ts, issue 37
 * finding 1: a handler acts as the caller of its own request, never as
 * another's, and never as nobody).
 */
import { describe, expect, it } from 'vitest';
import { callerAuthInfo, requestCaller } from '../../src/mcp/request-caller.js';
import { ok, toolError } from '../../src/mcp/results.js';

describe('ok', () => {
  it('answers each text as a text part, and structuredContent only when given', () => {
    expect(ok('read 3 lines')).toStrictEqual({ content: [{ type: 'text', text: 'read 3 lines' }] });
    expect(ok(['one', 'two'], { etag: '"e"' })).toStrictEqual({ content: [{ type: 'text', text: 'one' }, { type: 'text', text: 'two' }], structuredContent: { etag: '"e"' } });
    expect(ok([])).toStrictEqual({ content: [] });
  });
});

describe('toolError', () => {
  it('is a tool error whose structuredContent repeats the text, invalid-argument unless it says otherwise', () => {
    expect(toolError('path names no bucket')).toStrictEqual({ isError: true, content: [{ type: 'text', text: 'path names no bucket' }], structuredContent: { error: 'invalid-argument', message: 'path names no bucket' } });
    expect(toolError('changed since you read it', { error: 'changed-since-read', current_etag: '"c"' })).toStrictEqual({
      isError: true,
      content: [{ type: 'text', text: 'changed since you read it' }],
      structuredContent: { error: 'changed-since-read', current_etag: '"c"', message: 'changed since you read it' },
    });
    // The text is the message, whatever the fields held.
    expect(toolError('said', { message: 'other' }).structuredContent).toStrictEqual({ error: 'invalid-argument', message: 'said' });
  });
});

describe('callerAuthInfo and requestCaller', () => {
  it("carry the request's caller to its handler, agent or person", () => {
    const agent = { accessKeyId: 'AKAGENT', agent: 'alice' };
    const person = { accessKeyId: 'AKPERSON' };
    expect(requestCaller({ authInfo: callerAuthInfo(agent) })).toBe(agent);
    expect(requestCaller({ authInfo: callerAuthInfo(person) })).toBe(person);
    // The SDK's AuthInfo names the client: the agent, or the key of a person. No token travels with it.
    expect(callerAuthInfo(agent)).toStrictEqual({ token: '', clientId: 'alice', scopes: [], extra: { casketCaller: agent } });
    expect(callerAuthInfo(person).clientId).toBe('AKPERSON');
  });

  it('throw when a handler runs with no caller, rather than act as nobody', () => {
    const message = 'An MCP tool ran outside of the request that called it.';
    for (const extra of [undefined, {}, { authInfo: { token: 't', clientId: 'c', scopes: [] } }, { authInfo: { token: 't', clientId: 'c', scopes: [], extra: {} } }, { authInfo: { token: 't', clientId: 'c', scopes: [], extra: { caller: { accessKeyId: 'AK' } } } }]) {
      expect(() => requestCaller(extra), JSON.stringify(extra)).toThrow(new Error(message));
    }
  });
});
