/**
 * The logs hand a stream each record's JSON with the sequencer spliced in,
 * not parsed and written again (record.ts, LoggedEvent.json). A subscriber
 * must not be able to tell: the text is byte for byte JSON.stringify of the
 * record withSequencer makes, for every kind of event and every string a
 * key, agent or reason can hold.
 */
import { describe, expect, it } from 'vitest';
import { jsonWithSequencer, LoggedEvent, recordOf, withSequencer } from '../../src/events/record.js';
import type { WriteNotice } from '../../src/s3/context.js';

/** mulberry32: a small seeded generator, so a failure names its seed. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// Strings meant to look like the place the sequencer goes, and JSON's escapes.
const NASTY = ['}},"casket":', '"sequencer":"x"', '\\', '"', '\n', '{}', 'é', '😀', '\u2028', '%2F', ' ', '+', '/', 'a'];

function text(r: () => number): string {
  let s = '';
  const n = Math.floor(r() * 5);
  for (let i = 0; i < n; i++) s += NASTY[Math.floor(r() * NASTY.length)]!;
  return s;
}

function notice(r: () => number): WriteNotice {
  const maybe = <T>(v: T): T | undefined => (r() < 0.5 ? v : undefined);
  const kind = (['written', 'exact-retry', 'refused'] as const)[Math.floor(r() * 3)]!;
  const n: WriteNotice = {
    kind,
    operation: ['PutObject', 'CopyObject', 'DeleteObject', 'CompleteMultipartUpload'][Math.floor(r() * 4)]!,
    bucket: `b${text(r)}`,
    key: `k${text(r)}`,
    requestId: text(r),
  };
  const fields: Partial<WriteNotice> = {
    agent: maybe(text(r)),
    accessKey: maybe(text(r)),
    sourceIp: maybe('127.0.0.1'),
    etag: maybe(`"${text(r)}"`),
    size: maybe(Math.floor(r() * 1e9)),
    versionId: maybe(text(r)),
    previousETag: maybe(`"${text(r)}"`),
    deleteMarker: maybe(true),
    merged: maybe(true),
    ...(kind === 'refused' && { reason: text(r), status: 412, code: 'PreconditionFailed', currentETag: maybe(`"${text(r)}"`) }),
  };
  for (const [k, v] of Object.entries(fields)) if (v !== undefined) (n as unknown as Record<string, unknown>)[k] = v;
  return n;
}

describe('an event record read from the log', () => {
  it('is the same JSON whether spliced or parsed and written again (2,000 seeded records)', () => {
    for (let seed = 1; seed <= 2_000; seed++) {
      const r = random(seed);
      const stored = recordOf(notice(r), 'us-east-1', new Date(1_700_000_000_000 + seed));
      const sequencer = Math.floor(r() * 1e12).toString(16).toUpperCase().padStart(16, '0');
      const expected = JSON.stringify(withSequencer(stored, sequencer));
      const spliced = jsonWithSequencer(JSON.stringify(stored), sequencer);
      expect(spliced, `seed ${seed}`).toBe(expected);
      const event = new LoggedEvent(String(seed), JSON.stringify(stored), sequencer);
      expect(event.json, `seed ${seed}`).toBe(expected);
      expect(event.record, `seed ${seed}`).toEqual(withSequencer(stored, sequencer));
    }
  });

  it('falls back to parsing a record of another shape, and still gives its JSON', () => {
    const odd = JSON.stringify({ eventName: 's3:ObjectCreated:Put', s3: { object: { key: 'k' } } });
    expect(jsonWithSequencer(odd, '01')).toBeUndefined();
    const event = new LoggedEvent('1', odd, '01');
    expect(JSON.parse(event.json)).toEqual({ eventName: 's3:ObjectCreated:Put', s3: { object: { key: 'k', sequencer: '01' } } });
  });

  it('is never spliced where the splice would not be JSON.stringify of the record: an empty object, a sequencer already there', () => {
    // Each of these has `}},"casket":` where recordOf's JSON has it; the text a reader gets is still exactly the record's.
    const shapes = [
      { s3: { object: {} }, casket: {} },
      { s3: { object: { key: 'k', sequencer: '00' } }, casket: {} },
    ];
    for (const shape of shapes) {
      const stored = JSON.stringify(shape);
      expect(jsonWithSequencer(stored, '01'), stored).toBeUndefined();
      expect(new LoggedEvent('1', stored, '01').json, stored).toBe(JSON.stringify({ ...shape, s3: { object: { ...shape.s3.object, sequencer: '01' } } }));
    }
    // Not a JSON object at all: no text is made of it, and a reader is told it is not JSON.
    expect(jsonWithSequencer('}},"casket":{}', '01')).toBeUndefined();
    expect(() => new LoggedEvent('1', '}},"casket":{}', '01').json).toThrow(SyntaxError);
  });

  it('from the memory log (an object, not JSON) gives the same text', () => {
    const stored = recordOf(notice(random(7)), 'us-east-1');
    expect(new LoggedEvent('3', stored, '03').json).toBe(JSON.stringify(withSequencer(stored, '03')));
  });
});
