/**
 * Multipart uploads of the embedded store
 * (https://docs.aws.amazon.com/AmazonS3/latest/userguide/mpuoverview.html).
 *
 * - Each part is a blob file of its own, referenced by a `parts` row keyed by
 *   (upload, part number); uploading a part number again replaces the row in
 *   one transaction and hands the old blob to the reaper. A part commits only
 *   if its upload still exists at that moment, so a part racing an abort or a
 *   completion is discarded, never left behind.
 * - CompleteMultipartUpload copies no bytes: in one transaction it checks the
 *   part list, evaluates the CommitCondition, and writes an object row whose
 *   body is the list of the chosen part blobs (with their sizes), then drops
 *   the upload and its parts. Parts not chosen go to the reaper.
 * - ETag: SHA-256 over the concatenated 32-byte SHA-256 digests of the parts,
 *   hex, then `-<part count>` (docs/design.md §2). Part ETags are the MD5 of the part,
 *   as S3 reports them (clients compare them).
 * - Upload ids are time-ordered (12 hex digits of milliseconds, a sequence
 *   number, then randomness), so ordering by id within a key is ordering by
 *   initiation time, which is what S3 documents for ListMultipartUploads, and
 *   upload-id-marker's "lexicographically greater" agrees with it.
 * - Checksums: an upload keeps the algorithm and type it was created with;
 *   each part keeps its checksum (the payload computes the upload's algorithm
 *   when the part carried none); completion checks the part checksums the
 *   request named and stores the object's COMPOSITE or FULL_OBJECT checksum
 *   and the part checksums (multipart-checksum.ts).
 * - A completed upload id is remembered for a day with the ETag it produced:
 *   a client retrying CompleteMultipartUpload after a lost response gets the
 *   object back instead of NoSuchUpload, as long as it is still that version.
 */
import { randomBytes } from 'node:crypto';
import { multipartETag } from '../../vocabulary/etag.js';
import type { Database, Statement } from '../../sqlite.js';
import { S3Error } from '../../vocabulary/errors.js';
import type {
  CompletedPart,
  CompleteOptions,
  ListPartsParams,
  ListPartsResult,
  ListUploadsParams,
  ListUploadsResult,
  MultipartUploadInfo,
  ObjectHeaders,
  ObjectInfo,
  PartInfo,
  Payload,
  UploadChecksum,
  WriteOptions,
} from '../types.js';
import { requestedParts } from '../completed-parts.js';
import { listPage, seekAfter, type Scan, type Seek } from './listing.js';
import { compareKeys, validateKey } from '../../vocabulary/names.js';
import type { CommitResult, Objects, StoreParts } from './objects.js';
import { checkNamedPartChecksums, decodePartChecksum, decodeUploadChecksum, encodeChecksum, encodePartChecksum, encodeUploadChecksum, multipartChecksum } from '../multipart-checksum.js';
import { encodeHeaders, encodeMetadata, UPLOAD_COLUMNS, uploadInfo, type UploadRow } from './rows.js';

export const MAX_PART_NUMBER = 10_000;
const COMPLETED_UPLOAD_MEMORY_MS = 24 * 60 * 60 * 1000;

interface StoredUploadRow extends UploadRow {
  bucket: string;
}

interface PartRow {
  part_number: number;
  etag: string;
  sha256: Buffer;
  size: number;
  last_modified: number;
  blob: string;
  /** `<algorithm> <base64>`. */
  checksum: string | null;
}

function partInfo(row: PartRow): PartInfo {
  const checksum = decodePartChecksum(row.checksum);
  return { partNumber: row.part_number, etag: row.etag, size: row.size, lastModified: new Date(row.last_modified), sha256: row.sha256, ...(checksum && { checksum }) };
}

interface CompletedRow {
  bucket: string;
  key: string;
  etag: string;
}

/** A part ETag as a client sends it back: quotes optional, any case. */
function normalizePartETag(etag: string): string {
  return etag.trim().replace(/^"(.*)"$/, '$1').toLowerCase();
}

type UploadSeekStatements = Record<Seek['from'], { bounded: Statement<unknown[], UploadRow>; open: Statement<unknown[], UploadRow> }>;

export class Multipart {
  private readonly selectUpload: Statement<[string], StoredUploadRow>;
  private readonly insertUpload: Statement<[Record<string, unknown>]>;
  private readonly deleteUpload: Statement<[string]>;
  private readonly selectPartBlob: Statement<[string, number], { blob: string }>;
  private readonly selectPartBlobs: Statement<[string], { blob: string }>;
  private readonly upsertPart: Statement<[Record<string, unknown>]>;
  private readonly selectParts: Statement<[string], PartRow>;
  private readonly selectPartsPage: Statement<[string, number, number], PartRow>;
  private readonly deleteParts: Statement<[string]>;
  private readonly selectCompleted: Statement<[string], CompletedRow>;
  private readonly insertCompleted: Statement<[Record<string, unknown>]>;
  private readonly pruneCompleted: Statement<[number]>;
  private readonly uploadScans: UploadSeekStatements;
  private readonly commitPart: (bucket: string, key: string, uploadId: string, part: Record<string, unknown>) => string[];
  private readonly commitComplete: (bucket: string, key: string, uploadId: string, parts: CompletedPart[], options: CompleteOptions) => CommitResult;
  private readonly commitAbort: (bucket: string, key: string, uploadId: string) => string[];
  private lastUploadMs = 0;
  private uploadSequence = 0;

  constructor(
    private readonly store: StoreParts,
    private readonly objects: Objects,
    private readonly minPartSize: number,
  ) {
    const { db } = store;
    this.selectUpload = db.prepare(`SELECT bucket, ${UPLOAD_COLUMNS} FROM uploads WHERE upload_id = ?`);
    this.insertUpload = db.prepare(
      'INSERT INTO uploads (upload_id, bucket, key, initiated, headers, metadata, checksum) VALUES (@upload_id, @bucket, @key, @initiated, @headers, @metadata, @checksum)',
    );
    this.deleteUpload = db.prepare('DELETE FROM uploads WHERE upload_id = ?');
    this.selectPartBlob = db.prepare('SELECT blob FROM parts WHERE upload_id = ? AND part_number = ?');
    this.selectPartBlobs = db.prepare('SELECT blob FROM parts WHERE upload_id = ?');
    this.upsertPart = db.prepare(`
      INSERT INTO parts (upload_id, part_number, etag, sha256, size, last_modified, blob, checksum)
      VALUES (@upload_id, @part_number, @etag, @sha256, @size, @last_modified, @blob, @checksum)
      ON CONFLICT (upload_id, part_number) DO UPDATE SET
        etag = excluded.etag, sha256 = excluded.sha256, size = excluded.size,
        last_modified = excluded.last_modified, blob = excluded.blob, checksum = excluded.checksum`);
    const partColumns = 'part_number, etag, sha256, size, last_modified, blob, checksum';
    this.selectParts = db.prepare(`SELECT ${partColumns} FROM parts WHERE upload_id = ? ORDER BY part_number`);
    this.selectPartsPage = db.prepare(`SELECT ${partColumns} FROM parts WHERE upload_id = ? AND part_number > ? ORDER BY part_number LIMIT ?`);
    this.deleteParts = db.prepare('DELETE FROM parts WHERE upload_id = ?');
    this.selectCompleted = db.prepare('SELECT bucket, key, etag FROM completed_uploads WHERE upload_id = ?');
    this.insertCompleted = db.prepare(
      'INSERT OR REPLACE INTO completed_uploads (upload_id, bucket, key, etag, completed) VALUES (@upload_id, @bucket, @key, @etag, @completed)',
    );
    this.pruneCompleted = db.prepare('DELETE FROM completed_uploads WHERE completed < ?');
    const scan = (where: string, bounded: boolean) =>
      db.prepare<unknown[], UploadRow>(
        `SELECT ${UPLOAD_COLUMNS} FROM uploads WHERE bucket = ? AND ${where}${bounded ? ' AND key < ?' : ''} ORDER BY key, upload_id`,
      );
    this.uploadScans = {
      'after-key': { bounded: scan('key > ?', true), open: scan('key > ?', false) },
      'at-key': { bounded: scan('key >= ?', true), open: scan('key >= ?', false) },
      'after-upload': { bounded: scan('(key, upload_id) > (?, ?)', true), open: scan('(key, upload_id) > (?, ?)', false) },
    };

    this.commitPart = db.transaction((bucket: string, key: string, uploadId: string, part: Record<string, unknown>) => {
      this.requireUpload(bucket, key, uploadId);
      const previous = this.selectPartBlob.get(uploadId, part.part_number as number);
      this.upsertPart.run(part);
      return previous ? [previous.blob] : [];
    });
    this.commitComplete = db.transaction(this.complete.bind(this));
    this.commitAbort = db.transaction((bucket: string, key: string, uploadId: string) => {
      this.requireUpload(bucket, key, uploadId);
      const released = this.selectPartBlobs.all(uploadId).map((p) => p.blob);
      this.deleteParts.run(uploadId);
      this.deleteUpload.run(uploadId);
      return released;
    });
  }

  createUpload(bucket: string, key: string, headers: ObjectHeaders, metadata: Record<string, string>, checksum?: UploadChecksum): MultipartUploadInfo {
    validateKey(key);
    this.store.buckets.require(bucket);
    const initiated = Math.max(Date.now(), this.lastUploadMs);
    this.uploadSequence = initiated === this.lastUploadMs ? this.uploadSequence + 1 : 0;
    this.lastUploadMs = initiated;
    const row = {
      upload_id: initiated.toString(16).padStart(12, '0') + this.uploadSequence.toString(16).padStart(6, '0') + randomBytes(7).toString('hex'),
      bucket,
      key,
      initiated,
      headers: encodeHeaders(headers),
      metadata: encodeMetadata(metadata),
      checksum: checksum ? encodeUploadChecksum(checksum) : null,
    };
    this.insertUpload.run(row);
    this.store.durability.committed();
    return uploadInfo(bucket, row);
  }

  async uploadPart(bucket: string, key: string, uploadId: string, partNumber: number, payload: Payload): Promise<PartInfo> {
    validateKey(key);
    if (!Number.isInteger(partNumber) || partNumber < 1 || partNumber > MAX_PART_NUMBER) {
      throw new S3Error('InvalidArgument', {
        message: `Part number must be an integer between 1 and ${MAX_PART_NUMBER}, inclusive`,
        fields: { ArgumentName: 'partNumber', ArgumentValue: String(partNumber) },
      });
    }
    this.requireUpload(bucket, key, uploadId);
    // Parts are always files: CompleteMultipartUpload makes the object out of them as they are.
    const body = await this.store.blobs.receive(payload.stream, -1);
    if (body.kind !== 'file') throw new Error('unreachable: parts are received into files');
    let part: PartInfo;
    let released: string[];
    try {
      const digest = payload.digest();
      if (digest.size !== body.size) {
        throw new S3Error('InternalError', `payload digest covers ${digest.size} bytes, the stream delivered ${body.size}`);
      }
      if (digest.md5 === undefined) throw new S3Error('InternalError', 'UploadPart needs a payload that computes MD5 (the part ETag)');
      part = { partNumber, etag: digest.md5.toString('hex'), size: body.size, lastModified: new Date(), sha256: digest.sha256 };
      if (digest.checksum) part.checksum = { algorithm: digest.checksum.algorithm, value: digest.checksum.value.toString('base64') };
      released = this.commitPart(bucket, key, uploadId, {
        upload_id: uploadId,
        part_number: partNumber,
        etag: part.etag,
        sha256: part.sha256,
        size: part.size,
        last_modified: part.lastModified.getTime(),
        blob: body.id,
        checksum: part.checksum ? encodePartChecksum(part.checksum) : null,
      });
    } catch (e) {
      await this.store.blobs.remove(body.id);
      throw e;
    }
    this.store.durability.committed();
    this.store.reaper.condemn(released);
    return part;
  }

  async completeUpload(bucket: string, key: string, uploadId: string, parts: CompletedPart[], options: CompleteOptions): Promise<ObjectInfo> {
    validateKey(key);
    const result = this.commitComplete(bucket, key, uploadId, parts, options);
    this.objects.settle(result);
    return result.info!;
  }

  async abortUpload(bucket: string, key: string, uploadId: string): Promise<void> {
    validateKey(key);
    const released = this.commitAbort(bucket, key, uploadId);
    this.store.durability.committed();
    this.store.reaper.condemn(released);
  }

  listParts(bucket: string, key: string, uploadId: string, params: ListPartsParams): ListPartsResult {
    validateKey(key);
    const upload = uploadInfo(bucket, this.requireUpload(bucket, key, uploadId));
    if (params.maxParts <= 0) return { upload, parts: [], isTruncated: false };
    const rows = this.selectPartsPage.all(uploadId, Math.max(0, params.partNumberMarker), params.maxParts + 1);
    const isTruncated = rows.length > params.maxParts;
    const parts = rows.slice(0, params.maxParts).map(partInfo);
    const result: ListPartsResult = { upload, parts, isTruncated };
    if (isTruncated) result.nextPartNumberMarker = parts[parts.length - 1]!.partNumber;
    return result;
  }

  listUploads(bucket: string, params: ListUploadsParams): ListUploadsResult {
    this.store.buckets.require(bucket);
    const scan: Scan<UploadRow> = (seek, upper) => {
      const statements = this.uploadScans[seek.from];
      const bind: unknown[] = seek.from === 'after-upload' ? [bucket, seek.key, seek.uploadId] : [bucket, seek.key];
      return upper === undefined ? statements.open.iterate(...bind) : statements.bounded.iterate(...bind, upper);
    };
    const pageParams = { prefix: params.prefix, delimiter: params.delimiter, max: params.maxUploads };
    // upload-id-marker counts only together with key-marker.
    const first: Seek | undefined =
      params.keyMarker && params.uploadIdMarker && compareKeys(params.keyMarker, params.prefix) >= 0
        ? { from: 'after-upload', key: params.keyMarker, uploadId: params.uploadIdMarker }
        : seekAfter(params.keyMarker, pageParams);
    const page = listPage(scan, pageParams, first);
    const result: ListUploadsResult = {
      uploads: page.rows.map((row) => uploadInfo(bucket, row)),
      commonPrefixes: page.commonPrefixes,
      isTruncated: page.isTruncated,
    };
    const last = page.last;
    if (last !== undefined && 'row' in last) {
      result.nextKeyMarker = last.row.key;
      result.nextUploadIdMarker = last.row.upload_id;
    } else if (last !== undefined) {
      result.nextKeyMarker = last.commonPrefix;
    }
    return result;
  }

  /** Throws NoSuchBucket / NoSuchUpload unless `uploadId` is an upload of bucket/key. Safe inside a transaction. */
  private requireUpload(bucket: string, key: string, uploadId: string): StoredUploadRow {
    const upload = this.selectUpload.get(uploadId);
    if (upload === undefined || upload.bucket !== bucket || upload.key !== key) {
      this.store.buckets.require(bucket);
      throw new S3Error('NoSuchUpload', { fields: { UploadId: uploadId } });
    }
    return upload;
  }

  /** The CompleteMultipartUpload transaction body. */
  private complete(bucket: string, key: string, uploadId: string, requested: CompletedPart[], options: CompleteOptions): CommitResult {
    const upload = this.selectUpload.get(uploadId);
    if (upload === undefined || upload.bucket !== bucket || upload.key !== key) return this.completedBefore(bucket, key, uploadId);
    const wanted = requestedParts(requested);
    const stored = new Map(this.selectParts.all(uploadId).map((p) => [p.part_number, p]));
    const chosen = wanted.map((p) => {
      const part = stored.get(p.partNumber);
      if (part === undefined || !p.etags.some((etag) => normalizePartETag(etag) === part.etag)) {
        throw new S3Error('InvalidPart', { fields: { UploadId: uploadId, PartNumber: p.partNumber, ETag: p.etags.at(-1) } });
      }
      checkNamedPartChecksums(uploadId, p, decodePartChecksum(part.checksum));
      return part;
    });
    chosen.forEach((part, i) => {
      if (i < chosen.length - 1 && part.size < this.minPartSize) {
        throw new S3Error('EntityTooSmall', {
          fields: { ProposedSize: part.size, MinSizeAllowed: this.minPartSize, PartNumber: part.part_number, ETag: part.etag },
        });
      }
    });
    const partChecksums = chosen.map((p) => decodePartChecksum(p.checksum));
    const checksum = multipartChecksum(
      decodeUploadChecksum(upload.checksum),
      chosen.map((p, i) => ({ partNumber: p.part_number, size: p.size, ...(partChecksums[i] && { checksum: partChecksums[i] }) })),
      options.expectedChecksum,
    );
    const now = Date.now();
    const written = this.objects.replace(
      {
        bucket,
        key,
        etag: multipartETag(chosen.map((p) => p.sha256)),
        size: chosen.reduce((sum, p) => sum + p.size, 0),
        last_modified: now,
        writer: options.writer ?? null,
        headers: upload.headers,
        metadata: upload.metadata,
        part_sizes: JSON.stringify(chosen.map((p) => p.size)),
        checksum: checksum ? encodeChecksum(checksum) : null,
        part_checksums: checksum ? JSON.stringify(partChecksums.map((c) => c!.value)) : null,
        blobs: JSON.stringify(chosen.map((p) => p.blob)),
        body: null,
      },
      options,
    );
    // Written or not (same content already there), the upload is done with.
    const used = new Set(written.changed ? chosen.map((p) => p.blob) : []);
    const unused = [...stored.values()].map((p) => p.blob).filter((blob) => !used.has(blob));
    this.deleteParts.run(uploadId);
    this.deleteUpload.run(uploadId);
    this.insertCompleted.run({ upload_id: uploadId, bucket, key, etag: written.info!.etag, completed: now });
    this.pruneCompleted.run(now - COMPLETED_UPLOAD_MEMORY_MS);
    return { info: written.info, released: [...written.released, ...unused], changed: true };
  }

  /** A retried completion: success if the upload made the current version, NoSuchUpload otherwise. */
  private completedBefore(bucket: string, key: string, uploadId: string): CommitResult {
    this.store.buckets.require(bucket);
    const done = this.selectCompleted.get(uploadId);
    if (done !== undefined && done.bucket === bucket && done.key === key) {
      const current = this.objects.head(bucket, key);
      if (current !== null && current.etag === done.etag) return { info: current, released: [], changed: false };
    }
    throw new S3Error('NoSuchUpload', { fields: { UploadId: uploadId } });
  }
}
