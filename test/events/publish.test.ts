/**
 * The write path's hand-over to the event log (src/events/publish.ts): the
 * record of each write is in the log when publish returns, and a log that
 * cannot take it fails no write — the write has happened — but leaves an
 * error line naming the write, for the operator.
 */
import { describe, expect, it } from 'vitest';
import { MemoryEventLog } from '../../src/events/memory-log.js';
import { EventPublisher } from '../../src/events/publish.js';
import type { WriteNotice } from '../../src/s3/context.js';

const notice: WriteNotice = { kind: 'written', operation: 'PutObject', bucket: 'docs', key: 'a b.txt', requestId: 'req-1', etag: 'e', size: 3 };

describe('publishing a write', () => {
  it('puts its record, in the region given, in the log before it returns', async () => {
    const log = new MemoryEventLog();
    await new EventPublisher(log, 'eu-west-3', { error: () => {} }).publish(notice);
    const [event] = (await log.read('0', 10)).events;
    expect([event?.record.awsRegion, event?.record.s3.object.key, event?.record.responseElements['x-amz-request-id']]).toEqual(['eu-west-3', 'a+b.txt', 'req-1']);
  });

  it('fails no write when the log cannot take it: an error line names the bucket, key and request', async () => {
    const log = new MemoryEventLog();
    log.append = async () => {
      throw new Error('the disk is full');
    };
    const lines: Array<[Record<string, unknown>, string]> = [];
    await expect(new EventPublisher(log, 'us-east-1', { error: (fields: Record<string, unknown>, message: string) => void lines.push([fields, message]) } as never).publish(notice)).resolves.toBeUndefined();
    expect(lines.map(([f, m]) => [m, f.bucket, f.key, f.requestId, (f.err as Error).message])).toEqual([['event not recorded in the event log', 'docs', 'a b.txt', 'req-1', 'the disk is full']]);
  });
});
