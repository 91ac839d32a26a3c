/**
 * Streams that have caught up share one read of the event log
 * (events/tail.ts): however many subscribers are connected, each event is
 * read and encoded once, and every subscriber — caught up, resuming from
 * further back, or joining while events arrive — still gets exactly the
 * events after its cursor, in log order, none twice and none missing.
 */
import { describe, expect, it } from 'vitest';
import type { EventLog } from '../../src/events/log.js';
import { MemoryEventLog } from '../../src/events/memory-log.js';
import { recordOf } from '../../src/events/record.js';
import { eventsEndpoint, SAMPLE_RECORDS } from '../../src/events/stream.js';
import { EventTail } from '../../src/events/tail.js';
import { until } from '../helpers/poll.js';

const record = (key: string) => recordOf({ kind: 'written', operation: 'PutObject', bucket: key.startsWith('x') ? 'other' : 'b', key, requestId: 'r', etag: 'e', size: 1 }, 'us-east-1');

/** A real memory log that counts its reads. */
class CountingLog extends MemoryEventLog implements EventLog {
  reads = 0;
  override read(after: string, limit: number) {
    this.reads++;
    return super.read(after, limit);
  }
}

/** Reads a stream in the background, collecting its ids in order. */
function collect(res: Response) {
  const ids: number[] = [];
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  const done = (async () => {
    const next = () => reader.read().catch(() => ({ done: true as const, value: undefined }));
    for (let r = await next(); !r.done; r = await next()) {
      text += decoder.decode(r.value);
      const cut = text.lastIndexOf('\n\n');
      if (cut < 0) continue;
      for (const m of text.slice(0, cut).matchAll(/^id: (\d+)$/gm)) ids.push(Number(m[1]));
      text = text.slice(cut + 2);
    }
  })();
  return { ids, close: async () => { await reader.cancel(); await done; } };
}

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

describe('the shared tail of the event log', () => {
  it('five caught-up subscribers cost one read of the log per batch, not one each', async () => {
    const log = new CountingLog();
    const endpoint = eventsEndpoint({ log, authorize: async () => true, batchMs: 5 });
    const subs = await Promise.all(Array.from({ length: 5 }, async () => collect(await endpoint(new Request('http://casket/_casket/events')))));
    const before = log.reads;
    for (let i = 1; i <= 300; i++) await log.append(record(`k${i}`));
    await until(async () => subs.every((s) => s.ids.length === 300), 'every subscriber has the 300 events');
    for (const s of subs) expect(s.ids).toEqual(range(1, 300));
    // One batch, appended at once: read once (a page of 500), not five times.
    expect(log.reads - before).toBe(1);
    await Promise.all(subs.map((s) => s.close()));
  });

  it('subscribers caught up, resuming from further back, filtered and joining mid-flow each get exactly their events, in order', async () => {
    const log = new CountingLog();
    // The tail starts at the head when the first subscriber joins: the
    // resumed reader starts behind it and catches up on its own. A tail of
    // 50 events is trimmed many times over the run.
    const endpoint = eventsEndpoint({ log, authorize: async () => true, batchMs: 2, pageSize: 40, tailEvents: 50 });
    for (let i = 1; i <= 120; i++) await log.append(record(`k${i}`));
    const live = collect(await endpoint(new Request('http://casket/_casket/events')));
    const resumed = collect(await endpoint(new Request('http://casket/_casket/events', { headers: { 'last-event-id': '7' } })));
    const filtered = collect(await endpoint(new Request('http://casket/_casket/events?bucket=other')));
    let late: ReturnType<typeof collect> | undefined;
    let lateFrom = 0;
    // Appends in bursts with pauses, so the tail reads many times while readers join.
    for (let i = 121; i <= 1120; i++) {
      await log.append(record(i % 10 === 0 ? `x${i}` : `k${i}`));
      if (i % 97 === 0) await new Promise((r) => setTimeout(r, 3));
      if (i === 600) {
        lateFrom = Number(await log.head()) + 1;
        late = collect(await endpoint(new Request('http://casket/_casket/events')));
      }
    }
    await until(async () => live.ids.length === 1000 && resumed.ids.length === 1113 && filtered.ids.length === 100 && late!.ids.length === 1120 - lateFrom + 1, 'every subscriber has its events');
    expect(live.ids).toEqual(range(121, 1120));
    expect(resumed.ids).toEqual(range(8, 1120));
    expect(filtered.ids).toEqual(range(121, 1120).filter((i) => i % 10 === 0));
    expect(late!.ids).toEqual(range(lateFrom, 1120));
    await Promise.all([live, resumed, filtered, late!].map((s) => s.close()));
  });
});

describe('EventTail', () => {
  it('answers a cursor only with exactly the events after it, through every trim', async () => {
    const log = new MemoryEventLog();
    const tail = new EventTail(log, { keep: 10, pageSize: 7, batchMs: 0 });
    await tail.join();
    let appended = 0;
    let answered = 0;
    for (let round = 0; round < 40; round++) {
      const read = new Promise<void>((resolve) => {
        const off = tail.onNews(() => {
          off();
          resolve();
        });
      });
      const burst = 1 + (round % 6);
      for (let i = 0; i < burst; i++) await log.append(record(`k${++appended}`));
      await read;
      // Every cursor from before the first event to the newest: undefined, or exactly what follows it.
      for (let cursor = 0; cursor <= appended; cursor++) {
        const after = tail.after(String(cursor));
        if (after === undefined) continue;
        answered++;
        expect(after.map((e) => Number(e.id))).toEqual(range(cursor + 1, appended));
        for (const e of after) expect(e.text).toBe(`id: ${e.id}\ndata: ${JSON.stringify({ Records: [e.event.record] })}\n\n`);
      }
      // The newest events are always held: a caught-up reader never reads the log.
      expect(tail.after(String(appended))).toEqual([]);
      expect(tail.after(String(appended - 1))?.map((e) => e.id)).toEqual([String(appended)]);
    }
    // It held at least the last `keep` events after every trim (10 cursors × 40 rounds).
    expect(answered).toBeGreaterThanOrEqual(400);
    tail.leave();
  });
});

describe('EventTail when the log fails it', () => {
  /** Waits for the tail's next read (its news). */
  const news = (tail: EventTail) =>
    new Promise<void>((resolve) => {
      const off = tail.onNews(() => {
        off();
        resolve();
      });
    });

  it('out of reach when the first reader joins: it cannot tell (readers read the log) until an append finds the log back', async () => {
    const log = new CountingLog();
    await log.append(record('k1'));
    const head = log.head.bind(log);
    let down = true;
    log.head = async () => (down ? Promise.reject(new Error('redis down')) : head());
    const tail = new EventTail(log, { pageSize: 10, batchMs: 0 });
    await tail.join();
    expect(tail.after('1')).toBeUndefined();
    down = false;
    const read = news(tail);
    await log.append(record('k2'));
    await read;
    // It took the head then (2): from there it follows; a cursor before it reads the log.
    expect(tail.after('2')).toEqual([]);
    expect(tail.after('1')).toBeUndefined();
    const more = news(tail);
    await log.append(record('k3'));
    await more;
    expect(tail.after('2')?.map((e) => e.id)).toEqual(['3']);
    tail.leave();
  });

  it('a read that fails lets go of what it holds (readers read the log), tells them, and follows again from the next append', async () => {
    const log = new CountingLog();
    const tail = new EventTail(log, { pageSize: 10, batchMs: 0 });
    await tail.join();
    let read = news(tail);
    await log.append(record('k1'));
    await read;
    expect(tail.after('0')?.map((e) => e.id)).toEqual(['1']);
    const pages = log.read.bind(log);
    log.read = async () => Promise.reject(new Error('redis down'));
    read = news(tail);
    await log.append(record('k2'));
    await read;
    expect(tail.after('0')).toBeUndefined();
    expect(tail.after('1')).toBeUndefined();
    log.read = pages;
    read = news(tail);
    await log.append(record('k3'));
    await read;
    expect(tail.after('3')).toEqual([]);
    tail.leave();
  });

  it('a log that forgot what the tail had not read yet: it starts again from the head', async () => {
    const log = new MemoryEventLog(4);
    const tail = new EventTail(log, { pageSize: 10, batchMs: 0 });
    await tail.join();
    // Past the memory log's cap and slack in one turn: the tail reads once, after all of them.
    const read = news(tail);
    for (let i = 1; i <= 1100; i++) void log.append(record(`k${i}`));
    await read;
    expect(tail.after('0')).toBeUndefined();
    expect(tail.after('1100')).toEqual([]);
    tail.leave();
  });

  it('stops following when its last reader leaves: no more reads of the log, nothing held', async () => {
    const log = new CountingLog();
    const tail = new EventTail(log, { pageSize: 10, batchMs: 0 });
    await tail.join();
    await tail.join();
    const read = news(tail);
    await log.append(record('k1'));
    await read;
    tail.leave();
    // One reader is left: still following.
    expect(tail.after('0')?.map((e) => e.id)).toEqual(['1']);
    tail.leave();
    expect(tail.after('0')).toBeUndefined();
    const reads = log.reads;
    await log.append(record('k2'));
    await new Promise((r) => setTimeout(r, 50));
    expect(log.reads).toBe(reads);
    expect(tail.after('1')).toBeUndefined();
  });
});

describe('a sampled stream (?sample=MS, the console live view)', () => {
  it('sends the newest records of each interval after a count of those left out', async () => {
    const log = new MemoryEventLog();
    const endpoint = eventsEndpoint({ log, authorize: async () => true, batchMs: 5 });
    const res = await endpoint(new Request('http://casket/_casket/events?sample=100'));
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let text = '';
    for (let i = 1; i <= 300; i++) await log.append(record(`k${i}`));
    while (!text.includes('id: 300\n')) text += decoder.decode((await reader.read()).value);
    await reader.cancel();
    expect(text).toContain(`event: skipped\ndata: {"count":${300 - SAMPLE_RECORDS}}\n\n`);
    expect([...text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]))).toEqual(range(300 - SAMPLE_RECORDS + 1, 300));
  });

  it('refuses a sample outside 100–60000 ms', async () => {
    const endpoint = eventsEndpoint({ log: new MemoryEventLog(), authorize: async () => true });
    for (const bad of ['0', '99', '60001', 'fast', '1.5']) {
      const res = await endpoint(new Request(`http://casket/_casket/events?sample=${bad}`));
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: string }).error).toBe('InvalidArgument');
    }
  });
});

/** A memory log whose next head() or read() answers what it finds at once, but only when the test lets it. */
class HeldLog extends MemoryEventLog implements EventLog {
  reads: number[] = [];
  readonly listening = new Set<() => void>();
  private heldHead: Promise<void> | undefined;
  private heldRead: Promise<void> | undefined;
  /** Set while a held read waits. */
  readWaiting = false;

  /** Holds the next head(); resolve the returned function to let it answer. */
  holdHead(): () => void {
    let release!: () => void;
    this.heldHead = new Promise((r) => (release = r));
    return release;
  }
  holdRead(): () => void {
    let release!: () => void;
    this.heldRead = new Promise((r) => (release = r));
    return release;
  }
  override async head() {
    const held = this.heldHead;
    this.heldHead = undefined;
    const head = await super.head();
    if (held) await held;
    return head;
  }
  override async read(after: string, limit: number) {
    this.reads.push(Date.now());
    const held = this.heldRead;
    this.heldRead = undefined;
    const page = await super.read(after, limit);
    if (held) {
      this.readWaiting = true;
      await held;
      this.readWaiting = false;
    }
    return page;
  }
  override onAppend(listener: () => void) {
    const off = super.onAppend(listener);
    const handle = () => {
      this.listening.delete(handle);
      off();
    };
    this.listening.add(handle);
    return handle;
  }
}

describe('EventTail while appends, reads and readers come and go', () => {
  const news = (tail: EventTail) =>
    new Promise<void>((resolve) => {
      const off = tail.onNews(() => {
        off();
        resolve();
      });
    });
  const ids = (events: readonly { id: string }[] | undefined) => events?.map((e) => e.id);
  /** A tail with one reader, reading the log's first append (k1), that read held back until `release`. */
  const readingK1 = async () => {
    const log = new HeldLog();
    const tail = new EventTail(log, { pageSize: 10, batchMs: 0 });
    await tail.join();
    const release = log.holdRead();
    await log.append(record('k1'));
    await until(() => log.readWaiting, 'the tail to be reading k1');
    return { log, tail, release };
  };

  it('an append made while the tail reads is read right after, not held until the next append, and read once', async () => {
    const { log, tail, release } = await readingK1();
    await log.append(record('k2'));
    // One read at a time: a second one now would read k1 again.
    await new Promise((r) => setTimeout(r, 50));
    expect(log.reads.length).toBe(1);
    release();
    await until(() => tail.after('0')?.length === 2, 'the tail to hold k2 too');
    expect(ids(tail.after('0'))).toEqual(['1', '2']);
    expect(log.reads.length).toBe(2);
    tail.leave();
  });

  it('a join whose head comes back late does not move the tail back behind what it read since', async () => {
    const log = new HeldLog();
    const tail = new EventTail(log, { pageSize: 10, batchMs: 0 });
    const release = log.holdHead();
    const joining = tail.join(); // its head, 0, held back
    const read = news(tail);
    await log.append(record('k1')); // the tail reads on its own meanwhile, from the head then: 1
    await read;
    release();
    await joining;
    // Back at 0 it would answer that nothing follows 0, and read event 1 a second time.
    expect(tail.after('0')).toBeUndefined();
    expect(tail.after('1')).toEqual([]);
    const more = news(tail);
    await log.append(record('k2'));
    await more;
    expect(ids(tail.after('1'))).toEqual(['2']);
    tail.leave();
  });

  it('a join left before its head came back leaves nothing behind for the next reader', async () => {
    const log = new HeldLog();
    await log.append(record('k1'));
    const tail = new EventTail(log, { pageSize: 10, batchMs: 0 });
    const release = log.holdHead();
    const joining = tail.join(); // its head, 1, held back
    tail.leave();
    await log.append(record('k2'));
    release();
    await joining;
    await tail.join(); // the head is 2 now
    expect(tail.after('1')).toBeUndefined();
    expect(tail.after('2')).toEqual([]);
    tail.leave();
  });

  it('a read in flight when the last reader leaves holds nothing for the next one', async () => {
    const { log, tail, release } = await readingK1();
    tail.leave();
    release();
    await until(() => !log.readWaiting, 'the read to end');
    await log.append(record('k2'));
    await tail.join();
    // The new reader starts at 2: event 1 is not what follows it.
    expect(tail.after('2')).toEqual([]);
    expect(tail.after('1')).toBeUndefined();
    tail.leave();
  });

  it('reads no more once its last reader left, even from a news listener with appends pending', async () => {
    const { log, tail, release } = await readingK1();
    await log.append(record('k2')); // pending: another read would follow this one
    tail.onNews(() => tail.leave());
    release();
    await until(() => !log.readWaiting, 'the read to end');
    await new Promise((r) => setTimeout(r, 50));
    expect(log.reads.length).toBe(1);
  });

  it('listens to the log once however many readers, and not at all once they left', async () => {
    const log = new HeldLog();
    const tail = new EventTail(log, { batchMs: 0 });
    await tail.join();
    await tail.join();
    expect(log.listening.size).toBe(1);
    tail.leave();
    tail.leave();
    expect(log.listening.size).toBe(0);
  });

  it('tells a news listener no more once it left', async () => {
    const log = new MemoryEventLog();
    const tail = new EventTail(log, { pageSize: 10, batchMs: 0 });
    await tail.join();
    let heard = 0;
    const off = tail.onNews(() => heard++);
    let read = news(tail);
    await log.append(record('k1'));
    await read;
    expect(heard).toBe(1);
    off();
    read = news(tail);
    await log.append(record('k2'));
    await read;
    expect(heard).toBe(1);
    tail.leave();
  });

  it('reads the log at most once per batchMs, however the appends come', async () => {
    const log = new HeldLog();
    const tail = new EventTail(log, { pageSize: 10, batchMs: 300 });
    await tail.join();
    for (let i = 1; i <= 3; i++) {
      const read = news(tail);
      await log.append(record(`k${i}`));
      await read;
    }
    expect(ids(tail.after('0'))).toEqual(['1', '2', '3']);
    // Timers never fire early: a lower bound holds on a loaded machine.
    for (let i = 1; i < log.reads.length; i++) expect(log.reads[i]! - log.reads[i - 1]!).toBeGreaterThanOrEqual(290);
    tail.leave();
  });

  it('holds at most twice `keep` events, trimming back to `keep`', async () => {
    const log = new MemoryEventLog();
    const tail = new EventTail(log, { keep: 5, pageSize: 1, batchMs: 0 });
    await tail.join();
    for (let i = 1; i <= 10; i++) {
      const read = news(tail);
      await log.append(record(`k${i}`));
      await read;
      // Held: what follows `start` up to the newest; 9 events before the 10th trims to the newest 5.
      const held = Array.from({ length: i + 1 }, (_, c) => c).filter((c) => tail.after(String(c)) !== undefined);
      expect(held, `after ${i}`).toEqual(Array.from({ length: i < 10 ? i + 1 : 6 }, (_, c) => (i < 10 ? c : c + 5)));
    }
    tail.leave();
  });
});
