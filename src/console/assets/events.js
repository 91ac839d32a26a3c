// The live part of the console: /_casket/events (Server-Sent Events of S3
// event notification records with casket's own fields), read with the
// browser's EventSource, which sends the session cookie (same origin) and
// resumes by itself with Last-Event-ID after a dropped connection.

/** What a record is, for a person: write, delete, refused, merge or retry. */
export function outcomeOf(record) {
  const c = record.casket ?? {};
  const name = record.eventName ?? '';
  if (c.reason || (typeof c.status === 'number' && c.status >= 400) || /Refus/i.test(name)) return 'refused';
  if (c.merged || c.merge || /Merge/i.test(name)) return 'merge';
  if (c.retry || c.exactRetry || /Retry/i.test(name)) return 'retry';
  if (/Removed/.test(name)) return 'delete';
  return 'write';
}

/** A key as the record carries it: form-encoded, as AWS writes keys in event records. */
function recordKey(key) {
  try {
    return decodeURIComponent(key.replace(/\+/g, ' '));
  } catch {
    return key;
  }
}

/** A record as the views show it. */
export function fromRecord(record, id) {
  const c = record.casket ?? {};
  return {
    id,
    at: record.eventTime,
    bucket: record.s3?.bucket?.name ?? '',
    key: recordKey(record.s3?.object?.key ?? ''),
    eventName: record.eventName ?? '',
    outcome: outcomeOf(record),
    agent: c.agent ?? null,
    accessKey: c.accessKey ?? null,
    previousETag: c.previousETag ?? null,
    newETag: record.s3?.object?.eTag ? `"${String(record.s3.object.eTag).replace(/"/g, '')}"` : null,
    currentETag: c.currentETag ? `"${String(c.currentETag).replace(/"/g, '')}"` : null,
    reason: c.reason ?? null,
    status: c.status ?? null,
  };
}

/**
 * Subscribes to the stream with server-side filters (bucket, prefix, event),
 * from `lastEventId` when given (a replay of what the event log keeps), else from now;
 * onEvent(row) per record, onState('live' | 'reconnecting' | 'unavailable'),
 * onSkipped(count) when a sampled stream (`sample`: ms) left records out.
 * Returns a function that closes it.
 */
export function subscribe(filters, onEvent, onState, onSkipped) {
  const query = new URLSearchParams();
  // sample: a person's view asks for the newest records every so many ms, not every record (stream.ts).
  for (const name of ['bucket', 'prefix', 'event', 'lastEventId', 'sample']) if (filters[name]) query.set(name, filters[name]);
  const source = new EventSource(`/_casket/events${query.size ? `?${query}` : ''}`, { withCredentials: true });
  const handle = (message) => {
    let data;
    try {
      data = JSON.parse(message.data);
    } catch {
      return;
    }
    for (const record of data.Records ?? []) onEvent(fromRecord(record, message.lastEventId));
  };
  source.addEventListener('message', handle);
  source.addEventListener('skipped', (message) => {
    try {
      onSkipped?.(JSON.parse(message.data).count);
    } catch {
      // Not ours to fail on.
    }
  });
  source.addEventListener('open', () => onState('live'));
  source.addEventListener('error', () => onState(source.readyState === EventSource.CLOSED ? 'unavailable' : 'reconnecting'));
  return () => source.close();
}
