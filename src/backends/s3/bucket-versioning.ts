/**
 * Whether an upstream bucket has versioning (Enabled or Suspended), for the
 * commit loop (commit.ts): in a versioned bucket casket does not rely on the
 * upstream enforcing conditional writes, because the capability probe
 * (capabilities.ts) ran in an unversioned scratch bucket and upstreams differ
 * once versioning is on. Measured: Ceph RGW 16 lets `If-None-Match: *`
 * overwrite an existing key of a versioned bucket, and refuses a matching
 * `If-Match` there (s3-tests' test_put_current_object_if_none_match,
 * test_put_current_object_if_match fail straight at it). So conditional
 * writes in a versioned bucket are checked by casket under its key lock, as
 * in front of an upstream that enforces nothing — and refused with several
 * replicas — never trusted to the upstream (docs/design.md §10).
 *
 * Versioning never goes back to unset (API_PutBucketVersioning), so "versioned"
 * is remembered for good; "never versioned" for a few seconds only, since it
 * may be turned on around casket. A bucket whose state cannot be read counts
 * as versioned (the safe side). A PutBucketVersioning casket forwards, and a
 * CreateBucket it makes, are learnt at once.
 */
import { rootOf, type UpstreamClient } from './client.js';

/**
 * How long "never versioned" is believed: the window in which versioning
 * turned on around casket (not through it) still has its conditional writes
 * trusted to the upstream. One GetBucketVersioning per bucket per window is
 * what the rule costs conditional writes.
 */
const UNVERSIONED_TTL_MS = 30_000;
/** Buckets remembered either way, at most. */
const MAX_BUCKETS = 10_000;

export class BucketVersioning {
  private readonly versioned = new Set<string>();
  private readonly unversionedUntil = new Map<string, number>();

  constructor(private readonly client: UpstreamClient) {}

  async isVersioned(bucket: string): Promise<boolean> {
    if (this.versioned.has(bucket)) return true;
    const until = this.unversionedUntil.get(bucket);
    if (until !== undefined && until > Date.now()) return false;
    let status: unknown;
    try {
      const { doc } = await this.client.xml({ method: 'GET', bucket, query: { versioning: '' } });
      status = rootOf<{ Status?: unknown }>(doc).Status;
    } catch {
      return true;
    }
    if (typeof status === 'string' && status !== '') {
      this.learned(bucket);
      return true;
    }
    if (this.unversionedUntil.size >= MAX_BUCKETS) this.unversionedUntil.clear();
    this.unversionedUntil.set(bucket, Date.now() + UNVERSIONED_TTL_MS);
    return false;
  }

  /** casket created the bucket: it has no versioning yet (CreateBucket makes none). */
  created(bucket: string): void {
    this.versioned.delete(bucket);
    if (this.unversionedUntil.size >= MAX_BUCKETS) this.unversionedUntil.clear();
    this.unversionedUntil.set(bucket, Date.now() + UNVERSIONED_TTL_MS);
  }

  /** A PutBucketVersioning went through casket. */
  learned(bucket: string): void {
    if (this.versioned.size >= MAX_BUCKETS) this.versioned.clear();
    this.versioned.add(bucket);
    this.unversionedUntil.delete(bucket);
  }

  /** The bucket was deleted through casket: a new one of that name starts unversioned. */
  forget(bucket: string): void {
    this.versioned.delete(bucket);
    this.unversionedUntil.delete(bucket);
  }
}
