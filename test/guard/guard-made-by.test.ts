/**
 * Guard.madeBy, the proof behind an exact retry (docs/design.md §3): a
 * refused write is answered 200 only when the write log's newest entry for
 * the key was made by the same access key and `amz-sdk-invocation-id`. What
 * test/guard/guard.test.ts leaves out: a key with no write log at all, a
 * delete that left the key absent, and a log entry or a call that names no
 * access key — which proves nothing about who the caller is.
 */
import { describe, expect, it } from 'vitest';
import type { ObjectInfo } from '../../src/backends/types.js';
import { Guard } from '../../src/guard/guard.js';
import { MemoryStateStore } from '../../src/state/memory.js';
import type { WriteLogEntry } from '../../src/state/types.js';

const V1 = '1'.repeat(64);
const info = (etag: string): ObjectInfo => ({ bucket: 'b', key: 'k', etag, size: 10, lastModified: new Date(), headers: {}, metadata: {} });

/** A guard whose write log holds `entries` for b/k, oldest first. */
async function logged(...entries: Array<Partial<WriteLogEntry>>): Promise<Guard> {
  const state = new MemoryStateStore();
  for (const e of entries) await state.appendWriteLog({ at: new Date(), bucket: 'b', key: 'k', operation: 'PutObject', ...e });
  return new Guard(state, { mode: 'enforce', agentWrites: 'require' });
}

describe('made by this very call', () => {
  it('a key casket never wrote (no write log): no, and no error', async () => {
    const guard = await logged();
    expect(await guard.madeBy('b', 'k', info(V1), 'AKALICE', 'inv-1')).toBe(false);
    expect(await guard.madeBy('b', 'k', null, 'AKALICE', 'inv-1')).toBe(false);
  });

  it("a DeleteObject's retry: the call that removed the key, which is still absent: yes; the key written again since: no", async () => {
    const guard = await logged({ operation: 'DeleteObject', accessKey: 'AKALICE', invocationId: 'inv-del', previousETag: V1 });
    expect(await guard.madeBy('b', 'k', null, 'AKALICE', 'inv-del')).toBe(true);
    expect(await guard.madeBy('b', 'k', info(V1), 'AKALICE', 'inv-del')).toBe(false);
  });

  it('an entry that names no access key, asked for a call that names none: no (nothing shows it is the same caller)', async () => {
    const guard = await logged({ invocationId: 'inv-1', newETag: V1 });
    expect(await guard.madeBy('b', 'k', info(V1), undefined, 'inv-1')).toBe(false);
  });
});
