/**
 * The record a subscriber or webhook receives for each write
 * (src/events/record.ts), shaped as AWS's S3 event notifications
 * (https://docs.aws.amazon.com/AmazonS3/latest/userguide/notification-content-structure.html,
 * event names from notification-how-to-event-types-and-destinations), and
 * the filters a subscriber sets (`?bucket=`, `?prefix=`, `?event=`, a
 * webhook's buckets/prefix/events). test/core/write-events.test.ts checks
 * the records real writes make through the stream.
 */
import { describe, expect, it } from 'vitest';
import { decodeEventKey, eventKey, LoggedEvent, matches, recordOf, selects, type EventFilter } from '../../src/events/record.js';
import type { WriteNotice } from '../../src/s3/context.js';

const base: WriteNotice = { kind: 'written', operation: 'PutObject', bucket: 'docs', key: 'k', requestId: 'req' };
const AT = new Date('2026-11-29T12:00:00.000Z');

describe('an event record', () => {
  it('names each write as AWS does, and casket\'s own events as casket\'s', () => {
    const cases: Array<[Partial<WriteNotice>, string, string]> = [
      [{}, 's3:ObjectCreated:Put', 'aws:s3'],
      [{ operation: 'CopyObject' }, 's3:ObjectCreated:Copy', 'aws:s3'],
      [{ operation: 'PostObject' }, 's3:ObjectCreated:Post', 'aws:s3'],
      [{ operation: 'CompleteMultipartUpload' }, 's3:ObjectCreated:CompleteMultipartUpload', 'aws:s3'],
      [{ operation: 'DeleteObject' }, 's3:ObjectRemoved:Delete', 'aws:s3'],
      [{ operation: 'DeleteObjects' }, 's3:ObjectRemoved:Delete', 'aws:s3'],
      [{ operation: 'DeleteObject', deleteMarker: true }, 's3:ObjectRemoved:DeleteMarkerCreated', 'aws:s3'],
      [{ operation: 'DeleteObjects', deleteMarker: true }, 's3:ObjectRemoved:DeleteMarkerCreated', 'aws:s3'],
      [{ operation: 'LifecycleExpiration' }, 's3:LifecycleExpiration:Delete', 'aws:s3'],
      [{ operation: 'LifecycleExpiration', deleteMarker: true }, 's3:LifecycleExpiration:DeleteMarkerCreated', 'aws:s3'],
      [{ kind: 'refused', reason: 'stale', status: 412, code: 'PreconditionFailed' }, 'casket:WriteRefused', 'casket'],
      [{ kind: 'refused', operation: 'DeleteObject', reason: 'stale', status: 412, code: 'PreconditionFailed' }, 'casket:WriteRefused', 'casket'],
      [{ kind: 'exact-retry' }, 'casket:ExactRetry', 'casket'],
      [{ kind: 'exact-retry', operation: 'CompleteMultipartUpload' }, 'casket:ExactRetry', 'casket'],
    ];
    for (const [n, name, source] of cases) {
      const r = recordOf({ ...base, ...n }, 'us-east-1', AT);
      expect([r.eventName, r.eventSource], JSON.stringify(n)).toEqual([name, source]);
    }
  });

  it('of a person\'s PutObject: the whole record, nothing casket does not know', () => {
    expect(recordOf({ ...base, key: 'red flower.jpg', accessKey: 'AKPERSON', sourceIp: '127.0.0.1', etag: '"e"', size: 5 }, 'eu-west-3', AT)).toEqual({
      eventVersion: '2.1',
      eventSource: 'aws:s3',
      awsRegion: 'eu-west-3',
      eventTime: '2026-11-29T12:00:00.000Z',
      eventName: 's3:ObjectCreated:Put',
      userIdentity: { principalId: 'AKPERSON' },
      requestParameters: { sourceIPAddress: '127.0.0.1' },
      responseElements: { 'x-amz-request-id': 'req' },
      s3: {
        s3SchemaVersion: '1.0',
        configurationId: 'casket',
        bucket: { name: 'docs', ownerIdentity: { principalId: 'casket' }, arn: 'arn:aws:s3:::docs' },
        object: { key: 'red+flower.jpg', eTag: '"e"', size: 5 },
      },
      casket: { operation: 'PutObject', accessKey: 'AKPERSON' },
    });
  });

  it('of an agent\'s refused write: who, why, the status and code answered, the current version', () => {
    const r = recordOf({ ...base, kind: 'refused', agent: 'alice', accessKey: 'AKALICE', reason: 'stale-read', status: 412, code: 'PreconditionFailed', currentETag: '"cur"', previousETag: '"p"', versionId: 'v1', changeset: 'cs-1', merged: true, size: 0 }, 'us-east-1', AT);
    expect(r.casket).toEqual({ operation: 'PutObject', agent: 'alice', accessKey: 'AKALICE', previousETag: '"p"', merged: true, changeset: 'cs-1', reason: 'stale-read', status: 412, code: 'PreconditionFailed', currentETag: '"cur"' });
    // A size of 0 (an empty object) is a size.
    expect(r.s3.object).toEqual({ key: 'k', size: 0, versionId: 'v1' });
  });

  it('names no refusal fields for a write, and no current version a refusal did not know', () => {
    expect(recordOf({ ...base, reason: 'x', status: 200, code: 'y', currentETag: '"c"', merged: false }, 'us-east-1', AT).casket).toEqual({ operation: 'PutObject' });
    expect(recordOf({ ...base, kind: 'refused', reason: 'no-if-match', status: 428, code: 'PreconditionRequired' }, 'us-east-1', AT).casket).toEqual({ operation: 'PutObject', reason: 'no-if-match', status: 428, code: 'PreconditionRequired' });
  });

  it('is made by someone: the access key, casket for its own lifecycle expirations, else anonymous', () => {
    const who = (n: Partial<WriteNotice>) => recordOf({ ...base, ...n }, 'us-east-1', AT).userIdentity.principalId;
    expect(who({ accessKey: 'AK1' })).toBe('AK1');
    expect(who({ operation: 'LifecycleExpiration' })).toBe('casket');
    expect(who({})).toBe('anonymous');
    expect(recordOf(base, 'us-east-1', AT).requestParameters.sourceIPAddress).toBe('');
  });

  it('carries the time it is made by default', () => {
    const before = Date.now();
    const t = Date.parse(recordOf(base, 'us-east-1').eventTime);
    expect(t).toBeGreaterThanOrEqual(before);
    expect(t).toBeLessThanOrEqual(Date.now());
  });
});

describe('an event key', () => {
  it('is URL-encoded as a form, as AWS writes it, `/` kept; decoded back exactly', () => {
    const cases: Array<[string, string]> = [
      ['red flower.jpg', 'red+flower.jpg'],
      ['a/b/c', 'a/b/c'],
      ['a+b', 'a%2Bb'],
      ['é?#&', '%C3%A9%3F%23%26'],
      ['100%', '100%25'],
      ['  /x', '++/x'],
    ];
    for (const [key, encoded] of cases) {
      expect(eventKey(key)).toBe(encoded);
      expect(decodeEventKey(encoded)).toBe(key);
    }
  });
});

describe('a filter', () => {
  const rec = (n: Partial<WriteNotice>) => new LoggedEvent('1', recordOf({ ...base, ...n }, 'us-east-1', AT), '0000000000000001');
  const put = rec({ bucket: 'docs', key: 'reports/a b.txt' });
  const refused = rec({ kind: 'refused', bucket: 'logs', key: 'x', reason: 'r', status: 412, code: 'PreconditionFailed' });
  const cases: Array<[EventFilter, boolean, boolean]> = [
    [{}, true, true],
    [{ buckets: [], events: [] }, true, true],
    [{ buckets: ['docs'] }, true, false],
    [{ buckets: ['other', 'logs'] }, false, true],
    [{ prefix: 'reports/a b' }, true, false],
    [{ prefix: 'reports/a+b' }, false, false],
    [{ prefix: '' }, true, true],
    [{ events: ['s3:ObjectCreated:'] }, true, false],
    [{ events: ['s3:ObjectCreated:*'] }, true, false],
    [{ events: ['s3:ObjectRemoved:*', 'casket:'] }, false, true],
    [{ events: ['ObjectCreated'] }, false, false],
    // Only a trailing `*` is AWS's wildcard; anywhere else it is a character no event name holds.
    [{ events: ['s3:Object*Created:'] }, false, false],
    [{ events: ['*casket:'] }, false, false],
    [{ buckets: ['docs'], prefix: 'reports/', events: ['s3:'] }, true, false],
    [{ buckets: ['docs'], prefix: 'other/' }, false, false],
  ];
  it('selects the buckets, decoded key prefixes and event-name prefixes it names (AWS\'s `*` too), all of them at once', () => {
    for (const [filter, wantsPut, wantsRefused] of cases) {
      expect([selects(filter, put), selects(filter, refused)], JSON.stringify(filter)).toEqual([wantsPut, wantsRefused]);
      expect([matches(filter, put.record), matches(filter, refused.record)], JSON.stringify(filter)).toEqual([wantsPut, wantsRefused]);
    }
  });

  it('that asks for nothing passes a record it cannot parse along untouched; one that asks reads it', () => {
    const broken = new LoggedEvent('1', '{"not json', '0000000000000001');
    expect(selects({}, broken)).toBe(true);
    expect(selects({ buckets: [] }, broken)).toBe(true);
    expect(() => selects({ prefix: 'x' }, broken)).toThrow(SyntaxError);
    expect(() => selects({ buckets: ['docs'] }, broken)).toThrow(SyntaxError);
    expect(() => selects({ events: ['s3:'] }, broken)).toThrow(SyntaxError);
  });
});
