/**
 * What a stream costs its event log (events/stream.ts): a subscriber that
 * left costs no more reads, and one that reads the log on its own (not
 * from the shared tail, tail.ts) reads it at most once per batchMs while
 * events come, and not at all while none do — so a subscriber never costs
 * the writes a read per write (the measurement in stream.ts).
 */
import { describe, expect, it } from 'vitest';
import type { EventLog } from '../../src/events/log.js';
import { MemoryEventLog } from '../../src/events/memory-log.js';
import { recordOf } from '../../src/events/record.js';
import { eventsEndpoint } from '../../src/events/stream.js';
import { until } from '../helpers/poll.js';

const record = (key: string) => recordOf({ kind: 'written', operation: 'PutObject', bucket: 'b', key, requestId: 'r', etag: 'e', size: 1 }, 'us-east-1');
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A real memory log that counts its reads; with `headless`, head() fails, so the shared tail never starts and a resuming stream reads the log itself. */
class CountingLog extends MemoryEventLog implements EventLog {
  reads = 0;
  constructor(private readonly headless = false) {
    super();
  }
  private held: Promise<void> | undefined;
  /** Holds the next read's answer (taken from the log at once) until the returned function is called. */
  holdNext(): () => void {
    let release!: () => void;
    this.held = new Promise((resolve) => (release = resolve));
    return release;
  }
  override async read(after: string, limit: number) {
    this.reads++;
    const held = this.held;
    this.held = undefined;
    const page = await super.read(after, limit);
    await held;
    return page;
  }
  override head() {
    return this.headless ? Promise.reject(new Error('connect ECONNREFUSED')) : super.head();
  }
}

/** Reads `res` in the background; `text` is what came so far. */
function drain(res: Response) {
  const reader = res.body!.getReader();
  let text = '';
  const done = (async () => {
    const next = () => reader.read().catch(() => ({ done: true as const, value: undefined }));
    for (let r = await next(); !r.done; r = await next()) text += new TextDecoder().decode(r.value);
  })();
  return { get text() { return text; }, done, close: async () => { await reader.cancel(); await done; } };
}

/** A stream that has been sent its first event, over a log that counts its reads. */
async function streamWithFirstEvent() {
  const log = new CountingLog();
  const endpoint = eventsEndpoint({ log, authorize: async () => true, batchMs: 5, heartbeatMs: 60_000 });
  const stream = drain(await endpoint(new Request('http://casket/_casket/events')));
  await log.append(record('k1'));
  await until(() => stream.text.includes('id: 1\n'), 'the first event sent');
  return { log, endpoint, stream };
}

describe('a subscriber that left', () => {
  it('costs the log no more reads: the shared tail stops following it', async () => {
    const { log, stream } = await streamWithFirstEvent();
    await stream.close();
    const before = log.reads;
    for (let i = 2; i <= 5; i++) await log.append(record(`k${i}`));
    await sleep(100);
    expect(log.reads).toBe(before);
  });
});

describe('a stream ended by endAll (casket stopping)', () => {
  it('ends, and reads the log no more', async () => {
    const { log, endpoint, stream } = await streamWithFirstEvent();
    await sleep(50);
    const before = log.reads;
    endpoint.endAll();
    await stream.done;
    await sleep(100);
    expect(log.reads).toBe(before);
  });
});

/** Appends k1…kN, 20 ms apart (faster than any batchMs here); returns when it started. */
async function appendEvery20ms(log: CountingLog, n: number): Promise<number> {
  const started = Date.now();
  for (let i = 1; i <= n; i++) {
    await log.append(record(`k${i}`));
    await sleep(20);
  }
  return started;
}

describe('caught-up streams', () => {
  it('share reads of the log spaced by the batchMs the endpoint was given (the tail is made with it)', async () => {
    const log = new CountingLog();
    const endpoint = eventsEndpoint({ log, authorize: async () => true, batchMs: 300, heartbeatMs: 60_000 });
    const stream = drain(await endpoint(new Request('http://casket/_casket/events')));
    const started = await appendEvery20ms(log, 30);
    await until(() => stream.text.includes('id: 30\n'), 'the last event sent');
    expect(log.reads).toBeLessThanOrEqual(Math.floor((Date.now() - started) / 300) + 2);
    await stream.close();
  });
});

describe('a stream reading the log itself', () => {
  it('reads it at most once per batchMs while events come, and not while none do', async () => {
    const log = new CountingLog(true);
    const endpoint = eventsEndpoint({ log, authorize: async () => true, batchMs: 200, heartbeatMs: 60_000 });
    const stream = drain(await endpoint(new Request('http://casket/_casket/events?lastEventId=0')));
    const started = await appendEvery20ms(log, 20);
    await until(() => stream.text.includes('id: 20\n'), 'the last event sent');
    // Each read after the first waited batchMs since the one before: this many fit in the time taken.
    expect(log.reads).toBeLessThanOrEqual(Math.floor((Date.now() - started) / 200) + 2);
    // One more read after the last send finds nothing; after it, none.
    await sleep(300);
    const idle = log.reads;
    await sleep(500);
    expect(log.reads).toBe(idle);
    await stream.close();
  });

  it('sends an event appended during a read right after that read, not at the next append or heartbeat', async () => {
    const log = new CountingLog(true);
    const endpoint = eventsEndpoint({ log, authorize: async () => true, heartbeatMs: 60_000 });
    const release = log.holdNext();
    const stream = drain(await endpoint(new Request('http://casket/_casket/events?lastEventId=0')));
    await until(() => log.reads > 0, 'the held read');
    // The held read found the log empty; this append comes while it is out.
    await log.append(record('k1'));
    release();
    // Well before the 60 s heartbeat, which would otherwise be the next wake.
    await until(() => stream.text.includes('id: 1\n'), 'the event appended during the read');
    await stream.close();
  });
});
