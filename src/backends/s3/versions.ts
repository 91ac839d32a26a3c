/**
 * The current version of a key on the upstream, with casket's ETag resolved
 * (etags.ts): one HEAD, retried when the object is replaced while its ETag
 * is computed. Also remembers the version this process last saw of each key
 * (HEAD, GET, its own writes), so a conditional write whose If-Match names
 * it goes upstream with that version's upstream ETag at once, no HEAD
 * first. Only a hint: the upstream's If-Match is the arbiter, and a stale
 * entry costs a 412 and then the HEAD that would have come first anyway.
 */
import { S3Error } from '../../vocabulary/errors.js';
import { validateKey } from '../../vocabulary/names.js';
import { headBucket } from './buckets.js';
import { drain, errorFrom, type UpstreamClient } from './client.js';
import { VersionChanged, type ETagResolver, type UpstreamObject } from './etags.js';
import { Recent } from './recent.js';

/** The most times a look at the upstream is repeated while the object keeps changing. */
export const MAX_ATTEMPTS = 5;

/** Keys whose last seen version is remembered. */
const LAST_SEEN_ENTRIES = 50_000;

export class Versions {
  private readonly lastSeen = new Recent<UpstreamObject>(LAST_SEEN_ENTRIES);

  constructor(private readonly client: UpstreamClient, private readonly etags: ETagResolver) {}

  /** The current version with its casket ETag (null: no such key; throws NoSuchBucket). */
  async current(bucket: string, key: string): Promise<UpstreamObject | null> {
    validateKey(key);
    for (let attempt = 0; ; attempt++) {
      const res = await this.client.send({ method: 'HEAD', bucket, key });
      await drain(res);
      if (res.status === 404) {
        this.unseen(bucket, key);
        await headBucket(this.client, bucket);
        return null;
      }
      if (res.status >= 300) throw await errorFrom(res, { method: 'HEAD', bucket, key });
      try {
        const current = await this.etags.resolve(bucket, key, res.headers);
        this.seen(bucket, key, current);
        return current;
      } catch (e) {
        // Replaced while its ETag was being computed: look again.
        if (!(e instanceof VersionChanged) || attempt >= MAX_ATTEMPTS) throw e instanceof VersionChanged ? new S3Error('SlowDown', 'The object keeps changing upstream; please retry.') : e;
      }
    }
  }

  /** The version this process last saw of the key, if it remembers one. */
  lastSeenOf(bucket: string, key: string): UpstreamObject | undefined {
    return this.lastSeen.get(`${bucket}\0${key}`);
  }

  seen(bucket: string, key: string, current: UpstreamObject): void {
    this.lastSeen.set(`${bucket}\0${key}`, current);
  }

  unseen(bucket: string, key: string): void {
    this.lastSeen.delete(`${bucket}\0${key}`);
  }
}
