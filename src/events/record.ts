/**
 * The record of one event, shaped as AWS S3 event notifications
 * (https://docs.aws.amazon.com/AmazonS3/latest/userguide/notification-content-structure.html):
 * `{"Records": [record]}` with eventVersion, eventSource, awsRegion,
 * eventTime, eventName, userIdentity, requestParameters, responseElements
 * and `s3` (bucket, object key URL-encoded, eTag, size, versionId,
 * sequencer), plus casket's own facts under `casket` (docs/design.md §9).
 *
 * Where it knowingly differs from AWS:
 * - eventName carries the `s3:` prefix AWS uses in notification
 *   configurations (`s3:ObjectCreated:Put`), where AWS records say
 *   `ObjectCreated:Put`: one spelling for filters and records alike.
 * - Events AWS has no name for are casket's own, with eventSource `casket`:
 *   `casket:WriteRefused` (a 412/428/404 refusal: reason, status, the
 *   current ETag) and `casket:ExactRetry` (a retry answered with the version
 *   its first attempt made: nothing written).
 * - `sequencer` orders every event in casket's event log (not only those
 *   of one key): hex, fixed width, compared as strings, as AWS advises.
 */
import type { WriteNotice } from '../s3/context.js';

export interface EventRecord {
  eventVersion: '2.1';
  eventSource: 'aws:s3' | 'casket';
  awsRegion: string;
  /** ISO 8601, when casket committed (or refused) the write. */
  eventTime: string;
  eventName: string;
  userIdentity: { principalId: string };
  requestParameters: { sourceIPAddress: string };
  responseElements: { 'x-amz-request-id': string };
  s3: {
    s3SchemaVersion: '1.0';
    configurationId: string;
    bucket: { name: string; ownerIdentity: { principalId: string }; arn: string };
    object: { key: string; size?: number; eTag?: string; versionId?: string; sequencer: string };
  };
  casket: {
    /** The S3 operation: PutObject, CopyObject, CompleteMultipartUpload, DeleteObject, DeleteObjects. */
    operation: string;
    agent?: string;
    accessKey?: string;
    /** The version this write replaced (absent: the key did not exist, or casket could not tell). */
    previousETag?: string;
    /** The write was a three-way merge of an edit (docs/design.md §6): `previousETag` is the version merged with. */
    merged?: true;
    /** The changeset this write was an entry of (src/changesets/): one record per entry, all with this id. */
    changeset?: string;
    /** Refusals: casket's reason (x-casket-reason), the HTTP status and S3 error code answered, the current version. */
    reason?: string;
    status?: number;
    code?: string;
    currentETag?: string;
  };
}

/** A record as the event log holds it: everything but the sequencer, which is its place in the log. */
export type StoredRecord = Omit<EventRecord, 's3'> & { s3: Omit<EventRecord['s3'], 'object'> & { object: Omit<EventRecord['s3']['object'], 'sequencer'> } };

/**
 * One event as read back from the log: its id (the SSE id) and the record
 * with its sequencer. The logs keep each record as JSON; a reader that only
 * forwards it (a stream with no filter, a webhook) takes `json` and never
 * parses it. Parsing every record and writing it again was most of what a
 * subscriber cost casket per write (README, Console: garbage collection
 * alone ~23 µs per 4 KiB PutObject). `record` parses on first use.
 */
export class LoggedEvent {
  private parsed: EventRecord | undefined;
  private text: string | undefined;

  /** `stored`: the record as the log keeps it, JSON (sqlite, redis) or the object itself (memory). */
  constructor(
    readonly id: string,
    private readonly stored: string | StoredRecord,
    private readonly sequencer: string,
  ) {}

  get record(): EventRecord {
    return (this.parsed ??= withSequencer(typeof this.stored === 'string' ? (JSON.parse(this.stored) as StoredRecord) : this.stored, this.sequencer));
  }

  /** The record as JSON, byte for byte `JSON.stringify(record)`. */
  get json(): string {
    if (this.text !== undefined) return this.text;
    // Spliced even when the record was parsed already: the same bytes (record-json.test.ts), for less work than writing it again.
    const spliced = typeof this.stored === 'string' ? jsonWithSequencer(this.stored, this.sequencer) : undefined;
    return (this.text = spliced ?? JSON.stringify(this.record));
  }
}

/**
 * recordOf's JSON with the sequencer added where withSequencer puts it: last
 * in `s3.object`, which is the last member of `s3`, which `casket` follows.
 * `}},"casket":` can only be that place: inside a JSON string every `"` is
 * escaped, and no other member is named casket. undefined when the text is
 * not of that shape (the caller parses instead).
 */
export function jsonWithSequencer(stored: string, sequencer: string): string | undefined {
  const at = stored.indexOf('}},"casket":');
  if (at <= 0 || stored[at - 1] === '{' || stored.indexOf('"sequencer":') !== -1) return undefined;
  return `${stored.slice(0, at)},"sequencer":${JSON.stringify(sequencer)}${stored.slice(at)}`;
}

/**
 * A key as AWS writes it in an event record: URL-encoded as a form
 * (`red flower.jpg` → `red+flower.jpg`, the AWS page's own example), `/` kept.
 */
export function eventKey(key: string): string {
  return encodeURIComponent(key).replace(/%2F/g, '/').replace(/%20/g, '+');
}

function eventName(n: WriteNotice): string {
  if (n.kind === 'refused') return 'casket:WriteRefused';
  if (n.kind === 'exact-retry') return 'casket:ExactRetry';
  switch (n.operation) {
    case 'CopyObject':
      return 's3:ObjectCreated:Copy';
    // A browser-form upload (RESTObjectPOST), as AWS names it in event notifications.
    case 'PostObject':
      return 's3:ObjectCreated:Post';
    case 'CompleteMultipartUpload':
      return 's3:ObjectCreated:CompleteMultipartUpload';
    case 'DeleteObject':
    case 'DeleteObjects':
      // Unversioned buckets: the object is gone. A versioned bucket's
      // delete that leaves a marker is s3:ObjectRemoved:DeleteMarkerCreated.
      return n.deleteMarker ? 's3:ObjectRemoved:DeleteMarkerCreated' : 's3:ObjectRemoved:Delete';
    // The embedded store's lifecycle Expiration (s3/lifecycle-expiration.ts), named as AWS names its own
    // (notification-how-to-event-types-and-destinations: s3:LifecycleExpiration:Delete, :DeleteMarkerCreated).
    case 'LifecycleExpiration':
      return n.deleteMarker ? 's3:LifecycleExpiration:DeleteMarkerCreated' : 's3:LifecycleExpiration:Delete';
    default:
      return 's3:ObjectCreated:Put';
  }
}

/** The record of a write that landed, a retry answered, or a refusal. */
export function recordOf(n: WriteNotice, region: string, at: Date = new Date()): StoredRecord {
  // A lifecycle expiration is casket's own act, no caller's: not 'anonymous'.
  const principal = n.accessKey ?? (n.operation === 'LifecycleExpiration' ? 'casket' : 'anonymous');
  return {
    eventVersion: '2.1',
    eventSource: n.kind === 'written' ? 'aws:s3' : 'casket',
    awsRegion: region,
    eventTime: at.toISOString(),
    eventName: eventName(n),
    userIdentity: { principalId: principal },
    requestParameters: { sourceIPAddress: n.sourceIp ?? '' },
    responseElements: { 'x-amz-request-id': n.requestId },
    s3: {
      s3SchemaVersion: '1.0',
      configurationId: 'casket',
      bucket: { name: n.bucket, ownerIdentity: { principalId: 'casket' }, arn: `arn:aws:s3:::${n.bucket}` },
      // A member left undefined is not in the record: every reader gets its JSON, which JSON.stringify writes without it.
      object: { key: eventKey(n.key), eTag: n.etag, size: n.size, versionId: n.versionId },
    },
    casket: {
      operation: n.operation,
      agent: n.agent,
      accessKey: n.accessKey,
      previousETag: n.previousETag,
      ...(n.merged && { merged: true as const }),
      changeset: n.changeset,
      ...(n.kind === 'refused' && { reason: n.reason, status: n.status, code: n.code, currentETag: n.currentETag }),
    },
  };
}

/** The stored record with its place in the log. */
export function withSequencer(stored: StoredRecord, sequencer: string): EventRecord {
  return { ...stored, s3: { ...stored.s3, object: { ...stored.s3.object, sequencer } } };
}

/** Which events a subscriber or a webhook wants: a bucket, a key prefix, event-name prefixes (`s3:ObjectCreated:`; AWS's `s3:ObjectCreated:*` works too). */
export interface EventFilter {
  buckets?: string[];
  prefix?: string;
  events?: string[];
}

export function matches(filter: EventFilter, record: EventRecord): boolean {
  if (filter.buckets && filter.buckets.length > 0 && !filter.buckets.includes(record.s3.bucket.name)) return false;
  if (filter.prefix && !decodeEventKey(record.s3.object.key).startsWith(filter.prefix)) return false;
  if (filter.events && filter.events.length > 0 && !filter.events.some((e) => record.eventName.startsWith(e.replace(/\*$/, '')))) return false;
  return true;
}

/** `matches` for an event read from the log; a filter that asks for nothing does not parse the record. */
export function selects(filter: EventFilter, event: LoggedEvent): boolean {
  const none = !filter.buckets?.length && !filter.prefix && !filter.events?.length;
  return none || matches(filter, event.record);
}

export function decodeEventKey(key: string): string {
  return decodeURIComponent(key.replace(/\+/g, '%20'));
}
