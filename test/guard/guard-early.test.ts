/**
 * The guard's early check (Expect: 100-continue, RFC 9110 §10.1.1) on plain
 * values: boto3 and awscli send the header on every PUT, so what the check
 * costs is paid on every such write. An unconditional write has nothing to
 * check early and must not read the current version (upstream, a HEAD); a
 * condition that holds is permitted once the current version is read, so the
 * client is told to send its body.
 */
import { describe, expect, it } from 'vitest';
import type { ObjectInfo } from '../../src/backends/types.js';
import { Guard } from '../../src/guard/guard.js';
import type { WriteConditions } from '../../src/guard/preconditions.js';
import { Refusal } from '../../src/guard/refusal.js';
import { MemoryStateStore } from '../../src/state/memory.js';

const V1 = '1'.repeat(64);
const V2 = '2'.repeat(64);
const info = (etag: string): ObjectInfo => ({ bucket: 'b', key: 'k', etag, size: 10, lastModified: new Date(), headers: {}, metadata: {} });

/** A person's write (no agent) checked early against `current`: the permit's condition or the refusal, and how often the current version was read. */
async function early(current: string | null, conditions: WriteConditions) {
  const guard = new Guard(new MemoryStateStore(), { mode: 'enforce', agentWrites: 'require' });
  let reads = 0;
  try {
    const permit = await guard.checkWrite({
      bucket: 'b',
      key: 'k',
      conditions,
      early: true,
      current: async () => {
        reads++;
        return current ? info(current) : null;
      },
    });
    return { permit: permit.condition, reads };
  } catch (e) {
    if (!(e instanceof Refusal)) throw e;
    return { refused: e.reason, current: e.current?.etag, reads };
  }
}

describe('the early check (Expect: 100-continue)', () => {
  it('an unconditional write: permitted without reading the current version', async () => {
    expect(await early(V1, {})).toEqual({ permit: { type: 'none' }, reads: 0 });
  });

  it('an If-Match on the current version: permitted, after one read of it', async () => {
    expect(await early(V1, { ifMatch: [V1] })).toEqual({ permit: { type: 'if-match', etags: [V1] }, reads: 1 });
  });

  it('If-None-Match: * on an absent key, or an ETag that is not current: permitted', async () => {
    expect(await early(null, { ifNoneMatch: '*' })).toEqual({ permit: { type: 'if-none-match' }, reads: 1 });
    expect(await early(V1, { ifNoneMatch: [V2] })).toEqual({ permit: { type: 'if-none-match', etags: [V2] }, reads: 1 });
  });
});
