/**
 * What GET /_casket/events answers around the events themselves
 * (events/stream.ts), over a real memory log: the headers that keep a cache
 * or a buffering proxy (nginx's X-Accel-Buffering) from holding the stream,
 * EventSource's reconnect delay (`retry:`, HTML "Server-sent events",
 * https://html.spec.whatwg.org/multipage/server-sent-events.html), and
 * refusals as JSON that say why; and filters as a form or a URL typed by
 * hand gives them: comma-separated lists with spaces, fields left empty.
 */
import { describe, expect, it } from 'vitest';
import { MemoryEventLog } from '../../src/events/memory-log.js';
import { recordOf } from '../../src/events/record.js';
import { eventsEndpoint } from '../../src/events/stream.js';

const url = 'http://casket/_casket/events';

describe('an event stream opened', () => {
  it('is an event stream no cache keeps and no proxy buffers, telling EventSource to reconnect after 2 s', async () => {
    const res = await eventsEndpoint({ log: new MemoryEventLog(), authorize: async () => true })(new Request(url));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.headers.get('x-accel-buffering')).toBe('no');
    const reader = res.body!.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toBe(': casket events\nretry: 2000\n\n');
    await reader.cancel();
  });
});

describe('a subscriber refused', () => {
  const answer = async (res: Response) => ({ status: res.status, type: res.headers.get('content-type'), body: (await res.json()) as { error: string; message: string } });

  it('without an admin credential: 403 AccessDenied in JSON, saying what to sign with', async () => {
    const res = await answer(await eventsEndpoint({ log: new MemoryEventLog(), authorize: async () => false })(new Request(url)));
    expect(res).toEqual({ status: 403, type: 'application/json', body: { error: 'AccessDenied', message: 'The event stream needs an admin credential: sign the request (SigV4) with an admin access key.' } });
  });

  it('for a reason authorize gives (a console session gone): 403 naming that reason', async () => {
    const res = await answer(await eventsEndpoint({ log: new MemoryEventLog(), authorize: async () => 'the console session has ended' })(new Request(url)));
    expect(res).toEqual({ status: 403, type: 'application/json', body: { error: 'AccessDenied', message: 'The event stream: the console session has ended' } });
  });

  it('resuming from an id this log never gave, or sampling outside 100–60000 ms: 400 InvalidArgument saying which', async () => {
    const endpoint = eventsEndpoint({ log: new MemoryEventLog(), authorize: async () => true });
    expect(await answer(await endpoint(new Request(url, { headers: { 'last-event-id': 'nonsense' } })))).toEqual({ status: 400, type: 'application/json', body: { error: 'InvalidArgument', message: 'Last-Event-ID is not an id of this event stream.' } });
    expect(await answer(await endpoint(new Request(`${url}?sample=10`)))).toEqual({ status: 400, type: 'application/json', body: { error: 'InvalidArgument', message: 'sample is a number of milliseconds from 100 to 60000.' } });
  });

  it('not for a sample at either end of 100–60000 ms', async () => {
    const endpoint = eventsEndpoint({ log: new MemoryEventLog(), authorize: async () => true });
    for (const ms of ['100', '60000']) {
      const res = await endpoint(new Request(`${url}?sample=${ms}`));
      expect(res.status).toBe(200);
      await res.body!.cancel();
    }
  });
});

describe('filters from the query', () => {
  /** The keys of the records a stream opened with `query` sends, from the log's start, up to the last record appended. */
  async function keysFor(query: string): Promise<string[]> {
    const log = new MemoryEventLog();
    const written = (operation: string, bucket: string, key: string) => recordOf({ kind: 'written', operation, bucket, key, requestId: 'r', etag: 'e', size: 1 }, 'us-east-1');
    await log.append(written('PutObject', 'a', 'put-a'));
    await log.append(written('PutObject', 'b', 'put-b'));
    await log.append(written('PutObject', 'c', 'put-c'));
    await log.append(written('DeleteObject', 'a', 'delete-a'));
    await log.append(written('CopyObject', 'b', 'copy-b'));
    // The last, and selected by every filter below: once it is sent, everything before it was judged.
    await log.append(written('DeleteObject', 'b', 'end'));
    const res = await eventsEndpoint({ log, authorize: async () => true })(new Request(`${url}?lastEventId=0&${query}`));
    const reader = res.body!.getReader();
    let text = '';
    // The records are in the log already: a filter that drops the last one shows as a wait, cut short here (10 s, test/helpers/poll.ts).
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), 10_000)));
    while (!text.includes('"key":"end"')) {
      const next = await Promise.race([reader.read(), late]);
      if (next === 'late' || next.done) break;
      text += new TextDecoder().decode(next.value);
    }
    clearTimeout(timer);
    await reader.cancel();
    return [...text.matchAll(/"key":"([^"]+)"/g)].map((m) => m[1]!);
  }

  it('takes a list comma-separated, with spaces after the commas, or repeated', async () => {
    expect(await keysFor('bucket=a,%20b')).toEqual(['put-a', 'put-b', 'delete-a', 'copy-b', 'end']);
    expect(await keysFor('bucket=c&bucket=b')).toEqual(['put-b', 'put-c', 'copy-b', 'end']);
    expect(await keysFor('event=s3:ObjectRemoved:,%20s3:ObjectCreated:Copy')).toEqual(['delete-a', 'copy-b', 'end']);
  });

  it('reads a field left empty (a form sent blank) as no filter, not as a bucket or event named ""', async () => {
    expect(await keysFor('bucket=&event=&prefix=')).toEqual(['put-a', 'put-b', 'put-c', 'delete-a', 'copy-b', 'end']);
    expect(await keysFor('bucket=b,&event=s3:ObjectRemoved:')).toEqual(['end']);
  });
});
