/**
 * Lifecycle Expiration on the embedded store: the objects a bucket's rules
 * say are due (backends/fs/expiring-objects.ts) are deleted as a DeleteObject
 * would delete them — through the one guarded write path (write.ts), so the
 * write log records it, events fire and an agent that read the key learns of
 * it in changed_since_read. The operation is named `LifecycleExpiration`, with
 * no agent and no access key, as AWS names its own deletes
 * (s3:LifecycleExpiration:Delete / DeleteMarkerCreated events,
 * https://docs.aws.amazon.com/AmazonS3/latest/userguide/notification-how-to-event-types-and-destinations.html).
 *
 * Each delete is conditional on the ETag the rule judged (If-Match): a PUT
 * that lands between judging and deleting changed the object the rule no
 * longer judged, and wins — the next sweep judges the new version afresh. In
 * a versioned bucket the delete makes a delete marker, as AWS's Expiration of
 * a current version does.
 */
import { Readable } from 'node:stream';
import type { DeleteResult, ExpiredObject } from '../backends/types.js';
import { Refusal } from '../guard/refusal.js';
import { UNRESTRICTED } from './access.js';
import type { RequestContext, Services } from './context.js';
import { guardedWrite } from './write.js';

export const LIFECYCLE_EXPIRATION = 'LifecycleExpiration';

function contextOf(requestId: string, bucket: string, key: string): RequestContext {
  return {
    requestId,
    operation: 'DeleteObject',
    method: 'DELETE',
    bucket,
    key,
    query: new URLSearchParams(),
    headers: {},
    auth: null,
    accessKey: undefined,
    agent: undefined,
    access: UNRESTRICTED,
    etagSuffix: false,
    body: Readable.from([]),
    payload: () => {
      throw new Error('a lifecycle expiration has no request body');
    },
  };
}

export interface ExpiryOutcome extends ExpiredObject {
  /** expired: deleted (or hidden behind a delete marker); kept: changed since it was judged, left as it is. */
  outcome: 'expired' | 'kept';
  versionId?: string;
}

/**
 * Deletes each judged object unless it changed since. CASKET_TEST_EXPIRY_PAUSE_MS
 * waits that long between judging and deleting, for
 * test/integration/lifecycle-expiration.test.ts's race only; never set in production.
 */
export async function expireObjects(services: Services, due: ExpiredObject[], sweepId: string): Promise<ExpiryOutcome[]> {
  if (due.length === 0) return [];
  services.log.info({ sweep: sweepId, objects: due.map((d) => ({ bucket: d.bucket, key: d.key, etag: d.etag, rule: d.ruleId })) }, 'lifecycle expiration: objects due');
  const pause = Number(process.env.CASKET_TEST_EXPIRY_PAUSE_MS ?? 0);
  if (pause > 0) await new Promise((resolve) => setTimeout(resolve, pause));
  const outcomes: ExpiryOutcome[] = [];
  for (const d of due) {
    const ctx = contextOf(`${sweepId}-${outcomes.length}`, d.bucket, d.key);
    try {
      const result = await guardedWrite<DeleteResult>({
        ctx,
        services,
        bucket: d.bucket,
        key: d.key,
        operation: LIFECYCLE_EXPIRATION,
        conditions: { ifMatch: [d.etag] },
        deletes: true,
        bodyComing: false,
        commit: (permit) => services.backend.deleteObject(d.bucket, d.key, { ...permit }),
        written: () => null,
        replaced: (r) => r.replaced,
        madeVersion: (r) => (r.deleteMarker ? r.versionId : undefined),
        landed: () => ({ replaced: null }),
      });
      outcomes.push({ ...d, outcome: 'expired', ...(result.deleteMarker && result.versionId !== undefined && { versionId: result.versionId }) });
    } catch (e) {
      // Rewritten or deleted since it was judged: the newer write wins.
      if (!(e instanceof Refusal)) throw e;
      outcomes.push({ ...d, outcome: 'kept' });
    }
  }
  return outcomes;
}
