/**
 * The event logs (events/log.ts) read from a cursor, tell a reader that
 * fell behind what they keep (`lost`), keep webhook cursors, and the
 * stream (events/stream.ts) turns that into `event: lost` on a resume and
 * `event: lagged` and the end for a subscriber that fell behind. SQLite
 * keeps ids across a reopen; memory and SQLite are run here, Redis by
 * several-caskets.test.ts.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { EventLog } from '../../src/events/log.js';
import { MemoryEventLog } from '../../src/events/memory-log.js';
import { recordOf } from '../../src/events/record.js';
import { SqliteEventLog } from '../../src/events/sqlite-log.js';
import { eventsEndpoint } from '../../src/events/stream.js';

const dir = mkdtempSync(join(tmpdir(), 'casket-events-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const record = (key: string) => recordOf({ kind: 'written', operation: 'PutObject', bucket: 'b', key, requestId: 'r', etag: 'e', size: 1 }, 'us-east-1');

const logs: Array<[string, (max: number) => EventLog]> = [
  ['memory', (max) => new MemoryEventLog(max)],
  ['sqlite', (max) => new SqliteEventLog(join(mkdtempSync(join(dir, 's-')), 'events.db'), 3600_000, max)],
];

describe.each(logs)('%s event log', (_, open) => {
  it('reads after a cursor, in order, with growing sequencers; head names the newest', async () => {
    const log = open(100);
    const start = await log.head();
    for (const k of ['a', 'b', 'c']) await log.append(record(k));
    const page = await log.read(start, 10);
    expect(page.lost).toBe(false);
    expect(page.events.map((e) => e.record.s3.object.key)).toEqual(['a', 'b', 'c']);
    expect(await log.head()).toBe(page.events[2]!.id);
    const after = await log.read(page.events[0]!.id, 1);
    expect(after.events.map((e) => e.record.s3.object.key)).toEqual(['b']);
    const seq = page.events.map((e) => e.record.s3.object.sequencer);
    expect([...seq].sort()).toEqual(seq);
    await log.setCursor('t', page.events[1]!.id);
    expect(await log.getCursor('t')).toBe(page.events[1]!.id);
    await log.close();
  });

  it('tells a reader whose cursor is behind what is kept, or ahead of the log, that it lost events', async () => {
    const log = open(4);
    // Past the cap (memory trims in slices of 1024; sqlite every 512 appends).
    for (let i = 0; i < 1100; i++) await log.append(record(`k${i}`));
    const behind = await log.read('1', 10);
    expect(behind.lost).toBe(true);
    expect(behind.events.length).toBeGreaterThan(0);
    expect((await log.read(await log.head(), 10)).lost).toBe(false);
    expect((await log.read('999999', 10)).lost).toBe(true);
    await log.close();
  });
});

describe('the stream over a log that forgot', () => {
  const read = async (res: Response, until: (text: string) => boolean): Promise<string> => {
    const reader = res.body!.getReader();
    let text = '';
    const decoder = new TextDecoder();
    while (!until(text)) {
      const { done, value } = await reader.read();
      if (done) return text + '<end>';
      text += decoder.decode(value);
    }
    await reader.cancel();
    return text;
  };

  it('a resume from before what is kept hears `lost` and goes on from the oldest kept', async () => {
    const log = new MemoryEventLog(4);
    for (let i = 0; i < 1100; i++) await log.append(record(`k${i}`));
    const endpoint = eventsEndpoint({ log, authorize: async () => true });
    const text = await read(await endpoint(new Request('http://casket/_casket/events', { headers: { 'last-event-id': '1' } })), (t) => t.includes('id: '));
    expect(text).toContain('event: lost');
    expect(text).not.toContain('id: 2\n');
  });

  it('a subscriber that falls behind while connected gets `lagged` and the end', async () => {
    const log = new MemoryEventLog(4);
    const endpoint = eventsEndpoint({ log, authorize: async () => true });
    const res = await endpoint(new Request('http://casket/_casket/events'));
    const reader = res.body!.getReader();
    await reader.read(); // the opening comment; nothing more is pulled until asked
    for (let i = 0; i < 1100; i++) await log.append(record(`k${i}`));
    let text = '';
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
    }
    expect(text).toContain('event: lagged');
  });

  it('refuses whom authorize refuses, and an id of another kind', async () => {
    const log = new MemoryEventLog();
    expect((await eventsEndpoint({ log, authorize: async () => false })(new Request('http://casket/_casket/events'))).status).toBe(403);
    expect((await eventsEndpoint({ log, authorize: async () => true })(new Request('http://casket/_casket/events?lastEventId=1-0'))).status).toBe(400);
  });
});
