/**
 * Who is writing (src/guard/identity.ts, docs/design.md §4): the agent a
 * request acts for, from the access key's binding and the agent header. A
 * bound key's agent holds whatever the header says; a key bound to one agent
 * naming another is AccessDenied; a name that is not 1 to 128 printable
 * ASCII characters without spaces is InvalidArgument.
 */
import { describe, expect, it } from 'vitest';
import { resolveAgent } from '../../src/guard/identity.js';
import { S3Error } from '../../src/vocabulary/errors.js';

/** The S3 error code and message resolveAgent throws, or the agent it resolves. */
function outcome(bound: string | undefined, header: string | undefined): { agent: string | undefined } | { code: string; message: string } {
  try {
    return { agent: resolveAgent(bound, header) };
  } catch (e) {
    if (!(e instanceof S3Error)) throw e;
    return { code: e.code, message: e.message };
  }
}

describe('resolveAgent', () => {
  it('a key bound to no agent acts for the agent its header names, trimmed; without a header, for none', () => {
    expect(outcome(undefined, 'alice')).toEqual({ agent: 'alice' });
    expect(outcome(undefined, '  alice\t')).toEqual({ agent: 'alice' });
    expect(outcome(undefined, undefined)).toEqual({ agent: undefined });
  });

  it('an empty or blank header names no agent (a client that sends the header empty)', () => {
    expect(outcome(undefined, '')).toEqual({ agent: undefined });
    expect(outcome(undefined, '   ')).toEqual({ agent: undefined });
    expect(outcome('bob', '   ')).toEqual({ agent: 'bob' });
  });

  it('a bound key acts for its agent, with or without the header naming it', () => {
    expect(outcome('bob', undefined)).toEqual({ agent: 'bob' });
    expect(outcome('bob', 'bob')).toEqual({ agent: 'bob' });
    expect(outcome('bob', ' bob ')).toEqual({ agent: 'bob' });
  });

  it('a key bound to bob naming alice: AccessDenied, naming both', () => {
    const r = outcome('bob', 'alice');
    expect(r).toMatchObject({ code: 'AccessDenied' });
    expect((r as { message: string }).message).toBe('This access key is bound to agent "bob" and cannot act as agent "alice".');
  });

  it('a name with a space, a control character or more than 128 characters: InvalidArgument, bound key or not', () => {
    const invalid = { code: 'InvalidArgument', message: 'The agent header must be 1 to 128 printable ASCII characters without spaces.' };
    expect(outcome(undefined, 'al ice')).toEqual(invalid);
    expect(outcome(undefined, 'al\u0007ice')).toEqual(invalid);
    expect(outcome(undefined, 'a'.repeat(129))).toEqual(invalid);
    expect(outcome('bob', 'b o b')).toEqual(invalid);
    expect(outcome(undefined, 'a'.repeat(128))).toEqual({ agent: 'a'.repeat(128) });
    expect(outcome(undefined, 'agent-7/ci@host')).toEqual({ agent: 'agent-7/ci@host' });
  });
});
