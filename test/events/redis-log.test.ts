/**
 * The event log of `--state redis` (src/events/redis-log.ts), in this
 * process against a real redis-server: one Redis Stream
 * (https://redis.io/docs/latest/develop/data-types/streams/) that every
 * casket appends to and reads. Stream ids are the SSE ids and make the
 * sequencer, fixed-width hex compared as strings, as AWS advises
 * (https://docs.aws.amazon.com/AmazonS3/latest/userguide/notification-content-structure.html).
 * A reader behind what the stream trimmed, or ahead of anything it gave,
 * hears `lost`; webhook cursors and delivery leases are shared by every
 * casket with the same prefix. test/events/several-caskets.test.ts drives
 * two caskets through it end to end.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordOf } from '../../src/events/record.js';
import { RedisEventLog } from '../../src/events/redis-log.js';
import { clockPast, until } from '../helpers/poll.js';
import { hasRedis, startRedis, type RunningRedis } from '../helpers/redis.js';
import { need } from '../helpers/tools.js';

const record = (key: string) => recordOf({ kind: 'written', operation: 'PutObject', bucket: 'b', key, requestId: 'r', etag: 'e', size: 1 }, 'us-east-1');

describe.runIf(need('redis-server', hasRedis()))('the Redis event log', () => {
  let redis: RunningRedis;
  /** A plain client, to look at the stream as Redis holds it. */
  let raw: Redis;
  let prefixes = 0;
  /** Each test its own prefix: its own stream, cursors and leases. */
  const fresh = () => `t${++prefixes}:`;
  const open = (prefix: string, maxEvents?: number) => RedisEventLog.connect({ url: redis.url }, { prefix, ...(maxEvents !== undefined && { maxEvents }) });

  beforeAll(async () => {
    redis = await startRedis();
    raw = new Redis(redis.url);
  });
  afterAll(async () => {
    raw.disconnect();
    await redis.stop();
  });

  it('before any event: the head is 0-0, from which nothing is lost; any other cursor missed what it knew', async () => {
    const log = await open(fresh());
    expect(await log.head()).toBe('0-0');
    expect(await log.read('0-0', 10)).toEqual({ events: [], lost: false });
    expect(await log.read('1700000000000-0', 10)).toEqual({ events: [], lost: true });
    await log.close();
  });

  it('reads after a cursor, in order, with the stream ids; head names the newest; every casket of the prefix sees them', async () => {
    const prefix = fresh();
    const log = await open(prefix);
    const start = await log.head();
    for (const k of ['a', 'b', 'c']) await log.append(record(k));
    const page = await log.read(start, 10);
    expect(page.lost).toBe(false);
    expect(page.events.map((e) => e.record.s3.object.key)).toEqual(['a', 'b', 'c']);
    for (const e of page.events) expect(e.id).toMatch(/^\d+-\d+$/);
    expect(await log.head()).toBe(page.events[2]!.id);
    const after = await log.read(page.events[0]!.id, 1);
    expect([after.events.map((e) => e.record.s3.object.key), after.lost]).toEqual([['b'], false]);
    expect(await log.read(page.events[2]!.id, 10)).toEqual({ events: [], lost: false });
    // The stream is `<prefix>events`: another casket with the prefix reads it, one with another prefix does not.
    expect(await raw.xlen(`${prefix}events`)).toBe(3);
    const other = await open(prefix);
    expect((await other.read(start, 10)).events.map((e) => e.id)).toEqual(page.events.map((e) => e.id));
    const elsewhere = await open(fresh());
    expect(await elsewhere.head()).toBe('0-0');
    await Promise.all([log.close(), other.close(), elsewhere.close()]);
  });

  it('makes each id a sequencer of 12 + 8 upper-case hex digits, so string order is stream order', async () => {
    const prefix = fresh();
    const log = await open(prefix);
    // Ids another casket could have added, chosen where decimal text sorts otherwise (9 < 10, 10 < 9 as strings).
    for (const id of ['9-10', '10-9', '10-10', '255-4096']) await raw.xadd(`${prefix}events`, id, 'r', JSON.stringify(record(id)));
    const page = await log.read('0-0', 10);
    // Nothing was ever dropped: from before the first entry nothing is lost.
    expect(page.lost).toBe(false);
    const sequencers = page.events.map((e) => e.record.s3.object.sequencer);
    expect(sequencers).toEqual(['000000000009' + '0000000A', '00000000000A' + '00000009', '00000000000A' + '0000000A', '0000000000FF' + '00001000']);
    expect([...sequencers].sort()).toEqual(sequencers);
    // The spliced JSON carries the same sequencer as the parsed record.
    expect(JSON.parse(page.events[3]!.json).s3.object.sequencer).toBe('0000000000FF00001000');
    // A cursor between two ids of one millisecond, and one of an earlier millisecond with a larger sequence number.
    expect((await log.read('10-9', 10)).events.map((e) => e.id)).toEqual(['10-10', '255-4096']);
    expect((await log.read('9-11', 10)).events.map((e) => e.id)).toEqual(['10-9', '10-10', '255-4096']);
    await log.close();
  });

  it('tells a reader behind what the stream trimmed, or ahead of anything it gave, that it lost events', async () => {
    const prefix = fresh();
    const log = await open(prefix, 4);
    await log.append(record('k0'));
    const first = await log.head();
    for (let i = 1; i < 300; i++) await log.append(record(`k${i}`));
    // MAXLEN ~ trims whole nodes (of 100 entries or 4 KiB by default): the oldest are gone, at least the newest 4 kept.
    const kept = await raw.xlen(`${prefix}events`);
    expect(kept).toBeGreaterThanOrEqual(4);
    expect(kept).toBeLessThan(300);
    const oldest = (await raw.xrange(`${prefix}events`, '-', '+', 'COUNT', 1))[0]![0];
    const behind = await log.read(first, 10);
    expect([behind.events[0]?.id, behind.events.length, behind.lost]).toEqual([oldest, Math.min(10, kept), true]);
    const head = await log.head();
    expect(await log.read(head, 10)).toEqual({ events: [], lost: false });
    // From the oldest kept id nothing is lost; from before it, the stream cannot tell what it trimmed: lost.
    const fromOldest = await log.read(oldest, 1);
    expect(fromOldest.lost).toBe(false);
    const [ms, n] = oldest.split('-').map(Number);
    const justBefore = n! > 0 ? `${ms}-${n! - 1}` : `${ms! - 1}-99999`;
    const edge = await log.read(justBefore, 1);
    expect([edge.events.map((e) => e.id), edge.lost]).toEqual([[oldest], true]);
    // Ahead of the newest id the stream ever gave: a cursor from another Redis.
    const [headMs, headN] = head.split('-').map(Number);
    expect(await log.read(`${headMs}-${headN! + 1}`, 10)).toEqual({ events: [], lost: true });
    expect(await log.read(`${headMs! + 1}-0`, 10)).toEqual({ events: [], lost: true });
    await log.close();
  });

  it('is, as casket opens it, the stream casket:events, each entry one field r holding the record\'s JSON', async () => {
    const log = await RedisEventLog.connect({ url: redis.url });
    const stored = record('plain');
    await log.append(stored);
    const entries = await raw.xrange('casket:events', '-', '+');
    expect(entries.map(([, fields]) => fields)).toEqual([['r', JSON.stringify(stored)]]);
    await log.close();
  });

  it('tells a reader behind an entry deleted by hand (XDEL), or behind a stream emptied (XTRIM), that it lost events', async () => {
    const prefix = fresh();
    const log = await open(prefix);
    for (const k of ['a', 'b', 'c', 'd']) await log.append(record(k));
    const ids = (await log.read('0-0', 10)).events.map((e) => e.id);
    await raw.xdel(`${prefix}events`, ids[2]!);
    expect((await log.read(ids[1]!, 10)).lost).toBe(true);
    expect((await log.read(ids[2]!, 10)).lost).toBe(false);
    await raw.xtrim(`${prefix}events`, 'MAXLEN', 0);
    expect(await log.read(ids[2]!, 10)).toEqual({ events: [], lost: true });
    expect(await log.read(ids[3]!, 10)).toEqual({ events: [], lost: false });
    await log.close();
  });

  it('refuses to read a key of another type where its stream should be, rather than call it empty', async () => {
    const prefix = fresh();
    await raw.set(`${prefix}events`, 'not a stream');
    const log = await open(prefix);
    await expect(log.head()).rejects.toThrow(/WRONGTYPE/);
    await expect(log.read('0-0', 10)).rejects.toThrow(/WRONGTYPE/);
    await log.close();
  });

  it('wakes its listeners once per append of another casket, and not while nothing is appended', async () => {
    const prefix = fresh();
    const [here, there] = await Promise.all([open(prefix), open(prefix)]);
    const heard = [0, 0];
    here.onAppend(() => heard[0]!++);
    here.onAppend(() => heard[1]!++);
    // Longer than one blocking read (2 s): an empty answer wakes nobody.
    await new Promise((r) => setTimeout(r, 2_500));
    expect(heard).toEqual([0, 0]);
    await there.append(record('one'));
    await until(() => heard[0]! > 0, 'the append to wake this casket');
    await new Promise((r) => setTimeout(r, 800));
    expect(heard).toEqual([1, 1]);
    await Promise.all([here.close(), there.close()]);
  });

  it('once closed holds no connection to Redis, its follower\'s neither', async () => {
    const clients = async () => String(await raw.client('LIST')).trim().split('\n').length;
    const before = await clients();
    const log = await open(fresh());
    log.onAppend(() => {});
    await until(async () => (await clients()) === before + 2, 'the log and its follower to connect');
    await log.close();
    await until(async () => (await clients()) === before, 'both connections to close');
    // Nor does the follower come back.
    await new Promise((r) => setTimeout(r, 1_000));
    expect(await clients()).toBe(before);
  });

  it('wakes its listeners again once Redis is back from an outage', async () => {
    // A server of its own: this one goes down.
    const down = await startRedis();
    try {
      const [here, there] = await Promise.all([RedisEventLog.connect({ url: down.url }), RedisEventLog.connect({ url: down.url })]);
      let heard = 0;
      here.onAppend(() => heard++);
      await new Promise((r) => setTimeout(r, 200));
      await down.stop();
      // While it is down each failed blocking read wakes the readers (they then find the log out of reach).
      await until(() => heard > 0, 'the outage to wake the readers');
      await down.start();
      await until(async () => there.append(record('back')).then(() => true, () => false), 'the other casket to append again');
      const before = heard;
      await there.append(record('again'));
      await until(() => heard > before, 'the append after the outage to wake this casket');
      await Promise.all([here.close(), there.close()]);
    } finally {
      await down.stop();
    }
  });

  it('takes as a Last-Event-ID only a stream id: two integers of 1 to 15 digits', async () => {
    const log = await open(fresh());
    for (const id of ['0-0', '1700000000000-12', '123456789012345-123456789012345']) expect(log.validId(id), id).toBe(true);
    for (const id of ['', '1', '1-', '-1', '1-0-0', '1234567890123456-0', '0-1234567890123456', 'a-1', ' 1-0', '1-0 ', '1.5-0']) expect(log.validId(id), id).toBe(false);
    await log.close();
  });

  it('keeps webhook cursors where every casket of the prefix sees them', async () => {
    const prefix = fresh();
    const [one, two, elsewhere] = await Promise.all([open(prefix), open(prefix), open(fresh())]);
    expect(await one.getCursor('hook')).toBeUndefined();
    await one.setCursor('hook', '5-0');
    await one.setCursor('hook', '7-1');
    await one.setCursor('other', '6-0');
    expect([await two.getCursor('hook'), await two.getCursor('other')]).toEqual(['7-1', '6-0']);
    expect(await elsewhere.getCursor('hook')).toBeUndefined();
    await Promise.all([one.close(), two.close(), elsewhere.close()]);
  });

  it('gives a target\'s delivery lease to one casket at a time: renewed by its holder, taken by another once it runs out', async () => {
    const prefix = fresh();
    const [one, two] = await Promise.all([open(prefix), open(prefix)]);
    const taken = Date.now();
    expect(await one.lease('hook', 'one', 300)).toBe(true);
    expect(await two.lease('hook', 'two', 300)).toBe(false);
    // Another target's lease is another lease.
    expect(await two.lease('other', 'two', 300)).toBe(true);
    // Renewed by its holder: still held after the first 300 ms would have run out.
    expect(await one.lease('hook', 'one', 60_000)).toBe(true);
    await clockPast(taken + 600);
    expect(await two.lease('hook', 'two', 300)).toBe(false);
    // Not renewed: once it runs out the other casket takes it, and then the first one may not.
    await until(async () => one.lease('other', 'one', 60_000), 'the other target\'s lease to run out and go to the first casket');
    expect(await two.lease('other', 'two', 300)).toBe(false);
    await Promise.all([one.close(), two.close()]);
  });

  it('tells its listeners of every append, another casket\'s too; one that left hears no more', async () => {
    const prefix = fresh();
    const [here, there] = await Promise.all([open(prefix), open(prefix)]);
    let heard = 0;
    const off = here.onAppend(() => heard++);
    // The follower reads from the head it found when it connected: wait for it before the other casket appends.
    await new Promise((r) => setTimeout(r, 200));
    await there.append(record('from-there'));
    await until(() => heard > 0, 'the other casket\'s append to wake this one');
    const before = heard;
    await here.append(record('from-here'));
    expect(heard).toBeGreaterThan(before);
    off();
    const after = heard;
    await here.append(record('late'));
    await there.append(record('late-there'));
    await new Promise((r) => setTimeout(r, 300));
    expect(heard).toBe(after);
    await Promise.all([here.close(), there.close()]);
  });
});
