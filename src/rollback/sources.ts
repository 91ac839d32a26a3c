/**
 * Where the bytes of a goal version come from (docs/design.md §10), in order:
 *   1. retention (retention/): versions agents read in full or wrote, kept
 *      by SHA-256 — the casket ETag of single-part objects;
 *   2. pre-images (--keep-pre-images, s3/pre-image.ts): the version each
 *      agent overwrite or delete replaced, kept the same way;
 *   3. the bucket's own versions: ListObjectVersions of the key through
 *      casket, then GET ?versionId= of the version whose casket ETag is the
 *      goal (a versioned bucket upstream, or the embedded store's versioning).
 * 1 and 2 are read as versions of this key only (retention/types.ts); their
 * bytes are checked against the SHA-256 they are filed under;
 * nothing is ever guessed: no source, no restore (unrecoverable).
 *
 * Multipart versions (ETag `<sha256>-<parts>`) are never in 1 or 2 (their
 * ETag is not the SHA-256 of their bytes): only 3 can bring them back.
 */
import { createHash } from 'node:crypto';
import { MAX_TOTAL_BYTES } from '../changesets/commit.js';
import type { Services } from '../s3/context.js';
import { unquoteETag } from '../vocabulary/etag.js';
import type { RollbackDoor } from './door.js';

export interface GoalContent {
  content: Buffer;
  source: 'retained' | 'pre-image' | 'versions';
}

/**
 * A goal found among the bucket's versions that a rollback cannot write back:
 * a restore is staged as a changeset, which holds at most MAX_TOTAL_BYTES
 * (changesets/commit.ts). Its size is named instead of its bytes being read
 * into memory (issue 43: memory stays flat).
 */
export interface TooLarge {
  tooLarge: number;
}

const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

/** Pages of ListObjectVersions read at most for one key (1,000 versions a page). */
const MAX_VERSION_PAGES = 10;

function decodeXml(text: string): string {
  return text.replace(/&quot;/g, '"').replace(/&apos;/g, "'").replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&#13;/g, '\r').replace(/&amp;/g, '&');
}

function field(xml: string, name: string): string | undefined {
  const m = new RegExp(`<${name}>([^<]*)</${name}>`).exec(xml);
  return m ? decodeXml(m[1]!) : undefined;
}

/** The version id and size of `key`'s version whose ETag is `etag`, from the bucket's ListObjectVersions through casket. */
async function versionIdOf(door: RollbackDoor, bucket: string, key: string, etag: string): Promise<{ id: string; size: number } | undefined> {
  let marker: { key: string; versionId: string } | undefined;
  // Stryker disable next-line UpdateOperator: the bound is reached only by a key of over 10,000 versions
  for (let page = 0; page < MAX_VERSION_PAGES; page++) {
    const query = new URLSearchParams({ versions: '', prefix: key, ...(marker && { 'key-marker': marker.key, 'version-id-marker': marker.versionId }) });
    const reply = await door({ method: 'GET', bucket, query: query.toString().replace('versions=', 'versions') }, { stamp: false });
    if (reply.status !== 200 || !reply.body) return undefined;
    const xml = reply.body.toString('utf8');
    for (const m of xml.matchAll(/<Version>([\s\S]*?)<\/Version>/g)) {
      const v = m[1]!;
      const id = field(v, 'VersionId');
      const tag = field(v, 'ETag');
      // The null version (written before versioning was enabled) is read as `?versionId=null`, like any other (API_GetObject).
      // Stryker disable next-line ConditionalExpression,LogicalOperator: an id taken from another key's entry (all listed after this key's) or one missing a field only costs a GET whose answer fromVersions refuses: not found either way
      if (field(v, 'Key') === key && id !== undefined && tag !== undefined && unquoteETag(tag) === etag) return { id, size: Number(field(v, 'Size') ?? 0) };
    }
    if (field(xml, 'IsTruncated') !== 'true') return undefined;
    const nextKey = field(xml, 'NextKeyMarker');
    const nextVersion = field(xml, 'NextVersionIdMarker');
    // Stryker disable next-line ConditionalExpression: a truncated page names both markers, and the pages after another key's (key order) hold none of this key's versions: not found either way, after more reads
    if (nextKey === undefined || nextVersion === undefined || nextKey !== key) return undefined;
    marker = { key: nextKey, versionId: nextVersion };
  }
  return undefined;
}

async function fromVersions(door: RollbackDoor, bucket: string, key: string, etag: string): Promise<Buffer | TooLarge | undefined> {
  const found = await versionIdOf(door, bucket, key, etag);
  if (found === undefined) return undefined;
  if (found.size > MAX_TOTAL_BYTES) return { tooLarge: found.size };
  const versionId = found.id;
  // Stryker disable next-line ObjectLiteral,BooleanLiteral: a GET ?versionId= records no read stamp either way (only reads of the current version do, s3/operations/get-object.ts); stamp: false says so here
  // At most what a restore may write is held (a version grown since the listing is read to its end, not kept).
  const reply = await door({ method: 'GET', bucket, key, query: new URLSearchParams({ versionId }).toString() }, { stamp: false, keep: MAX_TOTAL_BYTES });
  // Stryker disable next-line ConditionalExpression,LogicalOperator: an error answer carries no ETag, which the check below refuses the same
  if (reply.status !== 200 || !reply.body) return undefined;
  // The version casket served must be the goal: its ETag (any version), and its SHA-256 (single-part).
  const served = reply.headers.etag !== undefined ? unquoteETag(reply.headers.etag) : undefined;
  if (served !== etag) return undefined;
  // Stryker disable next-line Regex: without its ^ the pattern matches the same casket ETags (64 hex digits, or those and -<parts>, which ends in no 64 of them)
  if (/^[0-9a-f]{64}$/.test(etag) && sha256(reply.body) !== etag) return undefined;
  return reply.body;
}

export async function goalContent(services: Services, door: RollbackDoor, bucket: string, key: string, etag: string): Promise<GoalContent | TooLarge | undefined> {
  for (const [source, store] of [['retained', services.retainer], ['pre-image', services.preImages]] as const) {
    const kept = await store?.get({ bucket, key, etag });
    if (kept && sha256(kept) === etag) return { content: kept, source };
  }
  const versioned = await fromVersions(door, bucket, key, etag).catch((err: unknown) => {
    services.log.warn({ error: err instanceof Error ? err.message : String(err), bucket, key }, 'rollback: versions not read');
    return undefined;
  });
  return Buffer.isBuffer(versioned) ? { content: versioned, source: 'versions' } : versioned;
}

/** Why the goal `etag` cannot be written back: too large, or found nowhere. */
export function unrestorable(goal: TooLarge | undefined, etag: string): string {
  if (goal) return `the version to restore is ${goal.tooLarge} bytes, over the ${MAX_TOTAL_BYTES} (100 MiB) a rollback writes back at once`;
  if (/-\d+$/.test(etag)) return 'the version to restore is a multipart version, and the bucket keeps no version of it';
  return 'the version to restore is neither retained, kept as a pre-image (--keep-pre-images), nor a version of the bucket';
}
