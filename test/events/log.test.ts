/**
 * The event logs (events/log.ts) read from a cursor, tell a reader that
 * fell behind what they keep (`lost`), keep webhook cursors, and the
 * stream (events/stream.ts) turns that into `event: lost` on a resume and
 * `event: lagged` and the end for a subscriber that fell behind. SQLite
 * keeps ids across a reopen; memory and SQLite are run here, Redis in
 * redis-log.test.ts (and end to end by several-caskets.test.ts).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { integerSequencer, type EventLog } from '../../src/events/log.js';
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

describe.each(logs)('%s event log, told of appends', (_, open) => {
  it('tells every listener of each append; one that throws fails neither the append nor the others; one that left hears no more', async () => {
    const log = open(100);
    const heard: string[] = [];
    const offA = log.onAppend(() => heard.push('a'));
    log.onAppend(() => {
      throw new Error('a reader failed');
    });
    log.onAppend(() => heard.push('c'));
    await log.append(record('one'));
    expect(heard).toEqual(['a', 'c']);
    offA();
    await log.append(record('two'));
    expect(heard).toEqual(['a', 'c', 'c']);
    await log.close();
  });
});

describe('where a log starts forgetting, exactly', () => {
  const ids = (page: { events: Array<{ id: string }> }) => page.events.map((e) => Number(e.id));
  const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

  it('memory: past the cap and its slack of 1,024 it keeps the newest `max`; a cursor just before them has lost nothing', async () => {
    const log = new MemoryEventLog(4);
    expect(await log.head()).toBe('0');
    expect(await log.read('0', 10)).toEqual({ events: [], lost: false });
    for (let i = 1; i <= 1028; i++) await log.append(record(`k${i}`));
    // At the cap plus its slack nothing is forgotten yet.
    expect(ids(await log.read('0', 2))).toEqual([1, 2]);
    await log.append(record('k1029'));
    expect(await log.head()).toBe('1029');
    const edge = await log.read('1025', 10);
    expect([ids(edge), edge.lost]).toEqual([range(1026, 1029), false]);
    const behind = await log.read('1024', 10);
    expect([ids(behind), behind.lost]).toEqual([range(1026, 1029), true]);
    expect(ids(await log.read('1026', 2))).toEqual([1027, 1028]);
    expect(await log.read('1029', 10)).toEqual({ events: [], lost: false });
    // A cursor ahead of the log (another log's, before a restart): lost, and nothing to send.
    expect(await log.read('1030', 10)).toEqual({ events: [], lost: true });
  });

  it('memory: a cursor ahead of an empty log has lost what it missed', async () => {
    expect(await new MemoryEventLog().read('1', 10)).toEqual({ events: [], lost: true });
  });

  it('sqlite: every 512 appends it forgets past the cap; ids go on after a reopen, and the TTL forgets on opening', async () => {
    const path = join(mkdtempSync(join(dir, 'edge-')), 'events.db');
    const log = new SqliteEventLog(path, 3600_000, 4);
    expect(await log.head()).toBe('0');
    expect(await log.read('0', 10)).toEqual({ events: [], lost: false });
    for (let i = 1; i <= 511; i++) await log.append(record(`k${i}`));
    expect(ids(await log.read('0', 2))).toEqual([1, 2]);
    await log.append(record('k512'));
    const edge = await log.read('508', 10);
    expect([ids(edge), edge.lost]).toEqual([range(509, 512), false]);
    const behind = await log.read('507', 10);
    expect([ids(behind), behind.lost]).toEqual([range(509, 512), true]);
    expect(await log.read('512', 10)).toEqual({ events: [], lost: false });
    expect(await log.read('513', 10)).toEqual({ events: [], lost: true });
    await log.close();
    // Reopened with a TTL every kept event is past: forgotten at once, and the next id is still 513.
    await new Promise((r) => setTimeout(r, 5));
    const again = new SqliteEventLog(path, 1, 4);
    expect(await again.head()).toBe('512');
    const gone = await again.read('508', 10);
    expect(gone).toEqual({ events: [], lost: true });
    // Every event forgotten: a cursor just before the newest missed it.
    expect(await again.read('511', 10)).toEqual({ events: [], lost: true });
    expect(await again.read('512', 10)).toEqual({ events: [], lost: false });
    await again.append(record('k513'));
    expect(ids(await again.read('512', 10))).toEqual([513]);
    await again.close();
  });

  it('sqlite: a TTL shorter than the time between appends keeps the log from growing, pruning twice what was appended since', async () => {
    const log = new SqliteEventLog(join(mkdtempSync(join(dir, 'ttl-')), 'events.db'), 1, 100_000);
    // Each prune (every 512 appends) forgets up to 1,024 expired events: more than came since, so it keeps up.
    for (let i = 1; i <= 2048; i++) {
      await log.append(record(`k${i}`));
      if (i % 512 === 511) await new Promise((r) => setTimeout(r, 5)); // past the TTL of 1 ms
    }
    const kept = await log.read('0', 5_000);
    expect(kept.lost).toBe(true);
    expect(kept.events.length).toBeLessThan(512);
    await log.close();
  });

  it('gives each id a sequencer of 16 upper-case hex digits, as AWS writes them', () => {
    expect([integerSequencer(1), integerSequencer(255), integerSequencer(2 ** 40 + 10)]).toEqual(['0000000000000001', '00000000000000FF', '000001000000000A']);
  });

  it.each(logs)('%s: takes as a Last-Event-ID only an integer of 1 to 15 digits', (_, open) => {
    const log = open(10);
    for (const id of ['0', '7', '123456789012345']) expect(log.validId(id), id).toBe(true);
    for (const id of ['', '1234567890123456', '1-0', 'x1', '1x', ' 1', '-1', '1.5']) expect(log.validId(id), id).toBe(false);
    void log.close();
  });
});

describe('the SQLite event log', () => {
  it('keeps appends of one turn in order, each resolved once kept; cursors move and outlive a reopen; a closed log refuses an append', async () => {
    const path = join(mkdtempSync(join(dir, 'turn-')), 'events.db');
    const log = new SqliteEventLog(path, 3600_000);
    let told = 0;
    log.onAppend(() => told++);
    // One turn: one transaction, one signal, every promise resolved.
    await Promise.all(['a', 'b', 'c'].map((k) => log.append(record(k))));
    expect(told).toBe(1);
    expect((await log.read('0', 10)).events.map((e) => [e.id, e.record.s3.object.key])).toEqual([['1', 'a'], ['2', 'b'], ['3', 'c']]);
    expect(await log.getCursor('hook')).toBeUndefined();
    await log.setCursor('hook', '1');
    await log.setCursor('hook', '3');
    await log.setCursor('other', '2');
    await log.close();
    const again = new SqliteEventLog(path, 3600_000);
    expect([await again.getCursor('hook'), await again.getCursor('other')]).toEqual(['3', '2']);
    expect(await again.lease()).toBe(true);
    await again.close();
    await expect(again.append(record('late'))).rejects.toThrow();
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
    expect(text).toContain('event: lost\ndata: {"after":"1","message":"Events after this id are no longer kept; the stream goes on from the oldest kept."}\n\n');
    expect(text).not.toContain('id: 2\n');
  });

  it('a resume from an id the log never reached (a memory log since restarted) hears `lost` and goes on with what comes next', async () => {
    const log = new MemoryEventLog();
    await log.append(record('k1'));
    const endpoint = eventsEndpoint({ log, authorize: async () => true, heartbeatMs: 60_000 });
    const res = await endpoint(new Request('http://casket/_casket/events', { headers: { 'last-event-id': '99' } }));
    setTimeout(() => void log.append(record('k2')), 200);
    const text = await read(res, (t) => t.includes('id: ') || t.includes('event: lagged'));
    expect(text).toContain('event: lost\ndata: {"after":"99",');
    expect(text).not.toContain('event: lagged');
    expect([...text.matchAll(/^id: (\d+)$/gm)].map((m) => m[1])).toEqual(['2']);
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
    // The stream's last words, and then its end (the loop above reads until done).
    expect(text.endsWith('event: lagged\ndata: {"after":"0","message":"This subscriber fell behind the event log; reconnect with Last-Event-ID."}\n\n')).toBe(true);
  });

  it('a subscriber that resumed and has been sent what it missed, then falls behind, gets `lagged` and the end too', async () => {
    const log = new MemoryEventLog(4);
    await log.append(record('k0'));
    const endpoint = eventsEndpoint({ log, authorize: async () => true });
    const res = await endpoint(new Request('http://casket/_casket/events', { headers: { 'last-event-id': '0' } }));
    const reader = res.body!.getReader();
    let text = '';
    while (!text.includes('id: 1\n')) text += new TextDecoder().decode((await reader.read()).value);
    for (let i = 0; i < 1100; i++) await log.append(record(`k${i}`));
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
    }
    expect(text).not.toContain('event: lost');
    expect(text.endsWith('event: lagged\ndata: {"after":"1","message":"This subscriber fell behind the event log; reconnect with Last-Event-ID."}\n\n')).toBe(true);
  });

  it('refuses whom authorize refuses, and an id of another kind', async () => {
    const log = new MemoryEventLog();
    expect((await eventsEndpoint({ log, authorize: async () => false })(new Request('http://casket/_casket/events'))).status).toBe(403);
    expect((await eventsEndpoint({ log, authorize: async () => true })(new Request('http://casket/_casket/events?lastEventId=1-0'))).status).toBe(400);
  });
});
