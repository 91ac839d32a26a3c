/**
 * Webhook retries back off (docs/design.md §9, src/events/webhooks.ts): a
 * receiver that answers 500 gets the failed delivery again after
 * `backoffMs`, then twice that, and so on up to `maxBackoffMs` — not a
 * steady hammering of a receiver that is already failing. After `attempts`
 * the event is dropped. Judged at a real receiver on 127.0.0.1 by when each
 * attempt arrived; the lower bounds hold on any machine (a timer never fires
 * early), the cap's upper bound leaves twice the cap of slack.
 */
import { CreateBucketCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startCasket } from '../helpers/casket.js';
import { sdk } from '../helpers/clients.js';
import { until } from '../helpers/poll.js';
import { startReceiver } from './receiver.js';

const SECRET = 'test-webhook-secret-backoff-0123456789';
const cleanup: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const f of cleanup.reverse()) await f();
});

describe('webhook retries', () => {
  it('back off: each wait doubles from backoffMs up to maxBackoffMs, then the event is dropped', async () => {
    const receiver = await startReceiver(SECRET);
    cleanup.push(() => receiver.close());
    receiver.answer = 'fail';
    const dir = mkdtempSync(join(tmpdir(), 'casket-backoff-'));
    cleanup.push(async () => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, 'notifications.json');
    const settings = { timeoutMs: 2000, attempts: 6, backoffMs: 100, maxBackoffMs: 400 };
    writeFileSync(file, JSON.stringify({ webhooks: [{ name: 'hook', url: receiver.url, secret: SECRET }], ...settings }), { mode: 0o600 });
    const casket = await startCasket({ args: ['--notifications', file] });
    cleanup.push(() => casket.stop());
    const admin = sdk(casket.url, casket.admin);
    cleanup.push(async () => admin.destroy());
    await admin.send(new CreateBucketCommand({ Bucket: 'hooks' }));
    await admin.send(new PutObjectCommand({ Bucket: 'hooks', Key: 'k', Body: 'x' }));

    await until(async () => casket.logs.some((l) => l.includes('webhook event dropped after the last attempt')), 'the event dropped after its last attempt', 20_000);
    const attempts = receiver.deliveries.filter((d) => d.record.s3.object.key === 'k');
    expect(attempts).toHaveLength(6);
    expect(new Set(attempts.map((d) => d.eventId)).size).toBe(1);
    const gaps = attempts.slice(1).map((d, i) => d.at - attempts[i]!.at);
    // 100, 200, 400, then the cap: 400, 400 (a few ms of clock rounding allowed below).
    const waits = [100, 200, 400, 400, 400];
    gaps.forEach((gap, i) => expect(gap, `wait before attempt ${i + 2}: ${gaps.join(', ')} ms`).toBeGreaterThanOrEqual(waits[i]! - 5));
    // Capped: the waits past the cap do not keep doubling (800, then 1600); 1200 leaves a loaded machine 800 ms of lateness.
    for (const gap of gaps.slice(3)) expect(gap, `a wait past the cap: ${gaps.join(', ')} ms`).toBeLessThan(1200);
  });
});
