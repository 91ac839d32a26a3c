/**
 * A sampled stream (`?sample=MS`, events/stream.ts; the console's live
 * view asks for one): at most one send every MS milliseconds, carrying what
 * matched since the last, and a count of what it left out only when it left
 * something out. tail.test.ts checks which records a send of a burst keeps.
 */
import { describe, expect, it } from 'vitest';
import { MemoryEventLog } from '../../src/events/memory-log.js';
import { recordOf } from '../../src/events/record.js';
import { eventsEndpoint, SAMPLE_RECORDS } from '../../src/events/stream.js';

const record = (key: string) => recordOf({ kind: 'written', operation: 'PutObject', bucket: 'b', key, requestId: 'r', etag: 'e', size: 1 }, 'us-east-1');
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const ids = (text: string) => [...text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));

/** Each chunk the stream sends after its opening comment, with when it came, until `last` is sent. */
async function sends(res: Response, last: number): Promise<Array<{ at: number; text: string }>> {
  const reader = res.body!.getReader();
  await reader.read(); // the opening comment
  const got: Array<{ at: number; text: string }> = [];
  while (!got.some((s) => ids(s.text).includes(last))) {
    const { done, value } = await reader.read();
    if (done) break;
    got.push({ at: Date.now(), text: new TextDecoder().decode(value) });
  }
  await reader.cancel();
  return got;
}

describe('a sampled stream', () => {
  it('sends at most once per interval: what comes within one is gathered into the next send', async () => {
    const log = new MemoryEventLog();
    const endpoint = eventsEndpoint({ log, authorize: async () => true, batchMs: 5, heartbeatMs: 60_000 });
    const res = await endpoint(new Request('http://casket/_casket/events?sample=1000'));
    const seen = sends(res, 30);
    let n = 0;
    for (const gap of [0, 50, 50]) {
      await sleep(gap);
      for (let i = 0; i < 10; i++) await log.append(record(`k${++n}`));
    }
    const got = await seen;
    // The first burst goes at once (nothing was sent yet); the next two, 50 ms apart, wait out the 1000 ms together.
    expect(got.map((s) => ids(s.text))).toEqual([Array.from({ length: 10 }, (_, i) => i + 1), Array.from({ length: 20 }, (_, i) => i + 11)]);
    expect(got[1]!.at - got[0]!.at).toBeGreaterThanOrEqual(990);
  });

  it('counts an interval whose records its filter dropped as no send: the next match goes at once', async () => {
    const log = new MemoryEventLog();
    const endpoint = eventsEndpoint({ log, authorize: async () => true, batchMs: 5, heartbeatMs: 60_000 });
    // A minute between sends: a send wrongly counted would hold the next match that long.
    const seen = sends(await endpoint(new Request('http://casket/_casket/events?sample=60000&prefix=kept/')), 2);
    await log.append(record('dropped/1'));
    await sleep(100);
    await log.append(record('kept/2'));
    const got = await Promise.race([seen, sleep(10_000).then(() => 'not within 10 s' as const)]);
    expect(got === 'not within 10 s' ? got : got.map((s) => ids(s.text))).toEqual([[2]]);
  });

  it('counts nothing left out when an interval brings exactly SAMPLE_RECORDS', async () => {
    const log = new MemoryEventLog();
    const endpoint = eventsEndpoint({ log, authorize: async () => true, heartbeatMs: 60_000 });
    const seen = sends(await endpoint(new Request('http://casket/_casket/events?sample=100')), SAMPLE_RECORDS);
    // Appended in one turn of the event loop: the tail reads them in one batch, one interval's worth.
    for (let i = 1; i <= SAMPLE_RECORDS; i++) await log.append(record(`k${i}`));
    const got = await seen;
    const text = got.map((s) => s.text).join('');
    expect(text).not.toContain('event: skipped');
    expect(ids(text)).toHaveLength(SAMPLE_RECORDS);
  });
});

describe('a sampled stream that resumes', () => {
  // The console's EventSource sends Last-Event-ID again on every reconnect: after heavy writes its backlog is pages long.
  it('is sent the newest SAMPLE_RECORDS of its backlog once, read to the log end across pages, with a count of the rest', async () => {
    const log = new MemoryEventLog();
    for (let i = 1; i <= 300; i++) await log.append(record(`k${i}`));
    const endpoint = eventsEndpoint({ log, authorize: async () => true, batchMs: 5, heartbeatMs: 60_000, pageSize: 100 });
    const got = await sends(await endpoint(new Request('http://casket/_casket/events?sample=1000&lastEventId=0')), 300);
    expect(got).toHaveLength(1);
    expect(got[0]!.text).toContain(`event: skipped\ndata: {"count":${300 - SAMPLE_RECORDS}}`);
    expect(ids(got[0]!.text)).toEqual(Array.from({ length: SAMPLE_RECORDS }, (_, i) => 300 - SAMPLE_RECORDS + i + 1));
  });

  it('then goes on sampled from the tail: what comes next waits out the interval', async () => {
    const log = new MemoryEventLog();
    for (let i = 1; i <= 10; i++) await log.append(record(`k${i}`));
    const endpoint = eventsEndpoint({ log, authorize: async () => true, batchMs: 5, heartbeatMs: 60_000 });
    const seen = sends(await endpoint(new Request('http://casket/_casket/events?sample=1000&lastEventId=0')), 11);
    await sleep(100);
    await log.append(record('k11'));
    const got = await seen;
    expect(got.map((s) => ids(s.text))).toEqual([Array.from({ length: 10 }, (_, i) => i + 1), [11]]);
    // Nothing was left out of the backlog: no count of none.
    expect(got[0]!.text).not.toContain('event: skipped');
    expect(got[1]!.at - got[0]!.at).toBeGreaterThanOrEqual(890);
  });

  it('keeps to its filter in the backlog: the newest matching records, and the count of the matching ones left out', async () => {
    const log = new MemoryEventLog();
    for (let i = 1; i <= 300; i++) await log.append(record(`${i % 2 === 0 ? 'kept' : 'other'}/${i}`));
    const endpoint = eventsEndpoint({ log, authorize: async () => true, batchMs: 5, heartbeatMs: 60_000, pageSize: 100 });
    const got = await sends(await endpoint(new Request('http://casket/_casket/events?sample=1000&prefix=kept/&lastEventId=0')), 300);
    expect(got).toHaveLength(1);
    expect(got[0]!.text).toContain(`event: skipped\ndata: {"count":${150 - SAMPLE_RECORDS}}`);
    expect(ids(got[0]!.text)).toEqual(Array.from({ length: SAMPLE_RECORDS }, (_, i) => 300 - 2 * (SAMPLE_RECORDS - 1 - i)));
  });
});
