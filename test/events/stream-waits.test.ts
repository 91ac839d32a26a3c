/**
 * An event stream while it has nothing to send (events/stream.ts): a
 * comment every heartbeat, so a proxy does not close it as idle (the HTML
 * spec's advice, https://html.spec.whatwg.org/multipage/server-sent-events.html#authoring-notes),
 * and while its log is out of reach (Redis down): a comment saying so, the
 * cursor held, and the events it missed once the log is back.
 */
import { describe, expect, it } from 'vitest';
import { MemoryEventLog } from '../../src/events/memory-log.js';
import { recordOf } from '../../src/events/record.js';
import { eventsEndpoint } from '../../src/events/stream.js';

const record = (key: string) => recordOf({ kind: 'written', operation: 'PutObject', bucket: 'b', key, requestId: 'r', etag: 'e', size: 1 }, 'us-east-1');

/** Reads `res` until `enough` holds over the text or `ms` pass; the reader is cancelled either way. */
async function readUntil(res: Response, enough: (text: string) => boolean, ms = 10_000): Promise<string> {
  const reader = res.body!.getReader();
  let text = '';
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), ms)));
  while (!enough(text)) {
    const next = await Promise.race([reader.read(), late]);
    if (next === 'late' || next.done) break;
    text += new TextDecoder().decode(next.value);
  }
  clearTimeout(timer);
  await reader.cancel();
  return text;
}

const heartbeats = (text: string) => text.split(': heartbeat\n\n').length - 1;

/** A memory log whose head() fails: the shared tail (tail.ts) never starts, so a stream resuming with an id reads the log on its own. */
class HeadlessLog extends MemoryEventLog {
  override head() {
    return Promise.reject(new Error('connect ECONNREFUSED'));
  }
}

describe('a stream with nothing to send', () => {
  it('sends a heartbeat comment every heartbeatMs, caught up or resuming', async () => {
    const log = new MemoryEventLog();
    const endpoint = eventsEndpoint({ log, authorize: async () => true, heartbeatMs: 50 });
    for (const url of ['http://casket/_casket/events', 'http://casket/_casket/events?lastEventId=0']) {
      const text = await readUntil(await endpoint(new Request(url)), (t) => heartbeats(t) >= 3);
      expect(text.startsWith(': casket events\nretry: 2000\n\n: heartbeat\n\n: heartbeat\n\n: heartbeat\n\n'), text).toBe(true);
    }
  });

  it('sends heartbeats too while it reads the log itself (the shared tail found no head when it joined: Redis was down)', async () => {
    const log = new HeadlessLog();
    const endpoint = eventsEndpoint({ log, authorize: async () => true, heartbeatMs: 50 });
    const text = await readUntil(await endpoint(new Request('http://casket/_casket/events?lastEventId=0')), (t) => heartbeats(t) >= 3);
    expect(text.startsWith(': casket events\nretry: 2000\n\n: heartbeat\n\n: heartbeat\n\n: heartbeat\n\n'), text).toBe(true);
  });

  it('sends no heartbeat before heartbeatMs has passed (15 s unless set), nor when an event comes', async () => {
    for (const heartbeatMs of [60_000, undefined]) {
      const log = new MemoryEventLog();
      const endpoint = eventsEndpoint({ log, authorize: async () => true, ...(heartbeatMs !== undefined && { heartbeatMs }) });
      const res = await endpoint(new Request('http://casket/_casket/events'));
      setTimeout(() => void log.append(record('k1')), 100);
      const text = await readUntil(res, () => false, 500);
      expect(text).toMatch(/^: casket events\nretry: 2000\n\nid: 1\ndata: [^\n]+\n\n$/);
    }
  });

  it('sends an event at once while it reads the log itself, not at the next heartbeat', async () => {
    const log = new HeadlessLog();
    const endpoint = eventsEndpoint({ log, authorize: async () => true, heartbeatMs: 60_000 });
    const res = await endpoint(new Request('http://casket/_casket/events?lastEventId=0'));
    setTimeout(() => void log.append(record('k1')), 100);
    const text = await readUntil(res, (t) => t.includes('id: 1\n'));
    expect(text).toMatch(/^: casket events\nretry: 2000\n\nid: 1\n/);
  });
});

/** A memory log whose reads fail while `down`, as the Redis log's do while Redis is out of reach. */
class FlakyLog extends MemoryEventLog {
  down = false;
  override read(after: string, limit: number) {
    if (this.down) return Promise.reject(new Error('connect ECONNREFUSED'));
    return super.read(after, limit);
  }
}

describe('a stream whose log is out of reach', () => {
  it('says so in a comment, holds its cursor, and sends what it missed once the log is back', async () => {
    const log = new FlakyLog();
    const endpoint = eventsEndpoint({ log, authorize: async () => true, heartbeatMs: 60_000 });
    await log.append(record('before'));
    log.down = true;
    const res = await endpoint(new Request('http://casket/_casket/events?lastEventId=0'));
    await log.append(record('during'));
    setTimeout(() => (log.down = false), 300);
    const text = await readUntil(res, (t) => t.includes('"key":"during"'));
    expect(text).toContain(': event log unavailable, retrying\n\n');
    expect([...text.matchAll(/^id: (\d+)$/gm)].map((m) => m[1])).toEqual(['1', '2']);
  });
});
