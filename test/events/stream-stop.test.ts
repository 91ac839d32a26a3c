/**
 * A stopping casket ends its event streams at once (events/stream.ts
 * `endAll`): an endless response would otherwise hold the drain to its
 * limit. casket runs in this process so the test can give the drain a
 * limit of 60 s and judge "at once" as well inside it, whatever the load.
 */
import { describe, expect, it } from 'vitest';
import { startInProcess } from '../helpers/in-process.js';
import { subscribe } from './sse.js';

const DRAIN_MS = 60_000;

describe('stopping casket', () => {
  it('ends its event streams at once, not after the drain limit', async () => {
    const running = await startInProcess();
    const stream = await subscribe(running.url, running.admin, '/_casket/events');
    expect(stream.status).toBe(200);
    const started = Date.now();
    await running.casket.close(DRAIN_MS);
    await stream.ended;
    expect(Date.now() - started).toBeLessThan(DRAIN_MS / 2);
    await running.stop();
  }, DRAIN_MS * 2);
});
